"""tf.layers.average_pooling2d (the corpus's dcgan uses it) against a numpy window mean."""

import numpy as np

import dfcore as tf


def test_average_pooling2d_valid_and_same():
    x = np.arange(2 * 5 * 5 * 3, dtype=np.float32).reshape(2, 5, 5, 3)
    with tf.Graph().as_default(), tf.Session() as sess:
        valid = tf.layers.average_pooling2d(x, 2, 2)
        same = tf.layers.average_pooling2d(x, 2, 2, padding="same")
        assert valid.op.name == "average_pooling2d/AvgPool" and same.op.name == "average_pooling2d_1/AvgPool"
        got_valid, got_same = sess.run([valid, same])
    expected = x[:, :4, :4].reshape(2, 2, 2, 2, 2, 3).mean(axis=(2, 4))
    np.testing.assert_allclose(got_valid, expected, rtol=1e-6)
    assert got_same.shape == (2, 3, 3, 3)
    np.testing.assert_allclose(got_same[:, 2, 2], x[:, 4, 4], rtol=1e-6)  # the corner window holds one real input
    np.testing.assert_allclose(got_same[:, 2, 0], x[:, 4, 0:2].mean(axis=1), rtol=1e-6)
