"""tf.nn.batch_norm_with_global_normalization (used by the corpus's pkmital convnets through their local
libs) against values recorded with TensorFlow 2.21 (``tf.compat.v1.nn``) on the arrays below."""

import numpy as np

import dfcore as tf


def test_batch_norm_with_global_normalization_matches_tf():
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3) / 3
    m, v = np.float32([1, 2, 0.5]), np.float32([0.5, 2, 1])
    beta, gamma = np.float32([0.1, -0.2, 0.3]), np.float32([2, 0.5, -1])
    with tf.Graph().as_default(), tf.Session() as sess:
        scaled = sess.run(tf.nn.batch_norm_with_global_normalization(x, m, v, beta, gamma, 0.001, True))
        unscaled = sess.run(tf.nn.batch_norm_with_global_normalization(x, m, v, beta, gamma, 0.001, False))
    np.testing.assert_allclose(scaled[1, 1], [5.7512054, 0.27128673, -2.8650846], rtol=1e-6)
    np.testing.assert_allclose(unscaled[1, 1], [2.925603, 0.7425734, 3.4650846], rtol=1e-6)
    np.testing.assert_allclose(unscaled, (x - m) / np.sqrt(v + 0.001) + beta, rtol=1e-5)
