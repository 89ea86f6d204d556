"""tf.arg_min / tf.arg_max (TF 1.x's generated names, used by the nearest-neighbour example of the corpus)
against numpy's argmin/argmax."""

import numpy as np

import dfcore as tf


def test_arg_min_and_arg_max_take_dimension_positionally():
    values = np.array([[3.0, -1.0, 7.0], [0.5, 9.0, -4.0]], np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        low, high, low_rows = sess.run([tf.arg_min(values, 1), tf.arg_max(values, 1), tf.arg_min(values, 0)])
        assert tf.arg_max(values, 1).dtype == tf.int64
        assert tf.arg_min(values, 1, output_type=tf.int32).dtype == tf.int32
    np.testing.assert_array_equal(low, np.argmin(values, 1))
    np.testing.assert_array_equal(high, np.argmax(values, 1))
    np.testing.assert_array_equal(low_rows, np.argmin(values, 0))
