"""tf.nn.conv2d_transpose and tf.layers.conv2d_transpose (the corpus's GAN and convolutional autoencoders use
them): values recorded with TensorFlow 2.21 (``tf.compat.v1``, tf_keras layers) on the arrays below, the
definition as conv2d's input gradient, and gradients by finite differences."""

import numpy as np
import pytest

import dfcore as tf
from tests.unit.gradcheck import grad_error

V = np.arange(2 * 3 * 3 * 2, dtype=np.float32).reshape(2, 3, 3, 2) / 10
F = (np.arange(3 * 3 * 4 * 2, dtype=np.float32).reshape(3, 3, 4, 2) % 7 - 3) / 5


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def test_values_recorded_from_tf():
    same = tf.nn.conv2d_transpose(V, F, [2, 6, 6, 4], [1, 2, 2, 1], "SAME")
    valid = tf.nn.conv2d_transpose(V, F, [2, 7, 7, 4], [1, 2, 2, 1], "VALID")
    with tf.Session() as sess:
        got_same, got_valid = sess.run([same, valid])
    np.testing.assert_allclose(got_same[0, :, :, 0], [[-0.04, -0.02, -0.24, -0.14, -0.48, -0.26],
                                                      [0.02, 0.04, 0.12, 0.16, 0.36, 0.28],
                                                      [-0.7, -0.42, -1.04, -0.74, -1.4, -1.06],
                                                      [0.14, 0.4, 0.84, 0.52, 1.08, 0.64],
                                                      [-1.3, -1.38, -2.12, -1.7, -2.48, -2.02],
                                                      [0.26, 0.76, 1.56, 0.88, 1.8, 1.0]], atol=1e-5)
    np.testing.assert_allclose(got_valid[1, :, :, 3][0], [-0.06, -1.84, -1.16, -2.04, -1.28, -2.24, -1.34],
                               atol=1e-5)
    np.testing.assert_allclose(got_valid[1, :, :, 3][6], [3.06, -0.06, 0.22, -0.06, 0.22, -0.06, -3.44], atol=1e-5)
    with pytest.raises(ValueError, match="input channels does not match filter's input channels, 2 != 1"):
        tf.nn.conv2d_transpose(V, F[:, :, :, :1], [2, 6, 6, 4], [1, 2, 2, 1])


def test_is_conv2d_input_gradient_and_has_gradients():
    x = tf.constant(np.zeros((2, 6, 6, 4), np.float32))
    y = tf.nn.conv2d(x, F, [1, 2, 2, 1], "SAME")
    as_gradient = tf.gradients(y, x, grad_ys=tf.constant(V))[0]
    with tf.Session():
        np.testing.assert_allclose(as_gradient.eval(),
                                   tf.nn.conv2d_transpose(V, F, [2, 6, 6, 4], [1, 2, 2, 1]).eval(), rtol=1e-6)
        value = tf.placeholder(tf.float64, V.shape)
        filt = tf.placeholder(tf.float64, F.shape)
        by_value = tf.nn.conv2d_transpose(value, F.astype(np.float64), [2, 7, 7, 4], [1, 2, 2, 1], "VALID")
        by_filter = tf.nn.conv2d_transpose(V.astype(np.float64), filt, [2, 6, 6, 4], [1, 2, 2, 1], "SAME")
        assert grad_error(value, by_value, V.astype(np.float64)) < 1e-6
        assert grad_error(filt, by_filter, F.astype(np.float64)) < 1e-6


def test_layer_shapes_and_variables():
    x = tf.placeholder(tf.float32, [None, 5, 5, 3])
    a = tf.layers.conv2d_transpose(x, 4, 3, strides=2, padding="valid")
    b = tf.layers.conv2d_transpose(x, 6, (2, 3), strides=(2, 1), padding="same", activation=tf.nn.relu)
    # Recorded: (?, 11, 11, 4), (?, 10, 5, 6); kernels [kh, kw, filters, in_channels].
    assert a.shape.as_list() == [None, 11, 11, 4] and b.shape.as_list() == [None, 10, 5, 6]
    assert [(v.name, v.shape.as_list()) for v in tf.global_variables()] == [
        ("conv2d_transpose/kernel:0", [3, 3, 4, 3]), ("conv2d_transpose/bias:0", [4]),
        ("conv2d_transpose_1/kernel:0", [2, 3, 6, 3]), ("conv2d_transpose_1/bias:0", [6])]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out_a, out_b = sess.run([a, b], {x: np.ones((2, 5, 5, 3), np.float32)})
    assert out_a.shape == (2, 11, 11, 4) and out_b.shape == (2, 10, 5, 6) and (out_b >= 0).all()
