"""tf.reverse (ReverseV2): values against numpy's flip, the gradient, and the axis errors."""

import numpy as np
import pytest

import dfcore as tf


def test_reverse_values_and_gradient():
    x_value = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.constant(x_value)
        y = tf.reverse(x, [0, -1])
        weights = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        grad = tf.gradients(tf.reduce_sum(y * weights), x)[0]
        got, got_grad, same = sess.run([y, grad, tf.reverse_v2(x, [])])
    np.testing.assert_array_equal(got, np.flip(x_value, (0, 2)))
    np.testing.assert_array_equal(got_grad, np.flip(weights, (0, 2)))  # d/dx sum(w * flip(x)) = flip(w)
    np.testing.assert_array_equal(same, x_value)


def test_reverse_axis_errors():
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.zeros([2, 3])
        with pytest.raises(tf.errors.InvalidArgumentError, match="out of valid range"):
            sess.run(tf.reverse(x, [2]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="specified more than once"):
            sess.run(tf.reverse(x, [1, -1]))
