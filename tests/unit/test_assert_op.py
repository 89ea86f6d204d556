"""tf.Assert: passes silently, or fails with TF's message (each data tensor summarized in brackets)."""

import numpy as np
import pytest

import dfcore as tf


def test_assert_passes_or_fails_with_tf_message():
    x = tf.placeholder(tf.int32, [None])
    check = tf.Assert(tf.reduce_all(x > 0), ["x must be positive:", x], summarize=2)
    assert check.type == "Assert" and tf.debugging.Assert is tf.Assert
    with tf.control_dependencies([check]):
        doubled = x * 2
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(doubled, {x: [1, 2]}), [2, 4])
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(doubled, {x: [3, -1, 5]})
    assert info.value.message.startswith("assertion failed: [x must be positive:] [3 -1...]")
