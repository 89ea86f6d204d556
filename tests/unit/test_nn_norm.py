"""tf.nn.lrn, l2_normalize, moments, batch_normalization and fused_batch_norm against numpy reference
formulas (TF's lrn_op.cc, nn_impl.py, fused_batch_norm_op.cc), and their gradients against finite differences."""

import itertools

import numpy as np
import pytest

import dfcore as tf
from tests.unit.gradcheck import GRAD_TOL, grad_error

RNG = np.random.default_rng(7)


def _run(fetches, feeds=None):
    with tf.Session() as sess:
        return sess.run(fetches, feeds)


# -- LRN ------------------------------------------------------------------------------------------
def naive_lrn(x, radius, bias, alpha, beta):
    out = np.empty_like(x)
    depth = x.shape[3]
    for a, b, c, d in itertools.product(*map(range, x.shape)):
        window = x[a, b, c, max(0, d - radius): min(depth, d + radius + 1)]
        out[a, b, c, d] = x[a, b, c, d] / (bias + alpha * np.sum(window ** 2)) ** beta
    return out


@pytest.mark.parametrize("radius, bias, alpha, beta", [(5, 1.0, 1.0, 0.5), (2, 1.5, 0.3, 0.75), (0, 2.0, 0.1, 1.0)])
def test_lrn_matches_the_definition_and_its_gradient_finite_differences(radius, bias, alpha, beta):
    x0 = RNG.standard_normal((2, 2, 3, 7))
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, x0.shape)
        y = tf.nn.lrn(x, radius, bias, alpha, beta)
        assert y.op.type == "LRN" and y.shape.as_list() == list(x0.shape)
        np.testing.assert_allclose(_run(y, {x: x0}), naive_lrn(x0, radius, bias, alpha, beta), rtol=1e-12)
        grad = tf.gradients(y, x)[0]
        assert grad.op.type == "LRNGrad"
        with tf.Session():
            assert grad_error(x, y, x0) < GRAD_TOL


def test_lrn_defaults_float32_alias_and_errors_naming_the_op():
    x0 = RNG.standard_normal((1, 2, 2, 12)).astype(np.float32)
    with tf.Graph().as_default():
        y = tf.nn.local_response_normalization(tf.constant(x0))
        assert y.dtype == tf.float32
        np.testing.assert_allclose(_run(y), naive_lrn(x0.astype(np.float64), 5, 1.0, 1.0, 0.5), rtol=1e-6)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Shape must be rank 4 but is rank 3 for 'LRN_1' \(op: 'LRN'\) with input shapes: "
                                 r"\[2,3,4\]"):
            tf.nn.lrn(tf.zeros([2, 3, 4]))
        with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
            tf.nn.lrn(tf.zeros([1, 1, 1, 1], tf.int32))
        with pytest.raises(ValueError, match="depth_radius must be >= 0"):
            tf.nn.lrn(tf.zeros([1, 1, 1, 1]), depth_radius=-1)


# -- l2_normalize and moments -----------------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, [0, 1]])
def test_l2_normalize_is_x_over_its_clamped_norm(axis):
    x0 = RNG.standard_normal((3, 4))
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, x0.shape)
        y = tf.nn.l2_normalize(x, axis)
        reduce_axes = None if axis is None else tuple(np.atleast_1d(axis))
        expected = x0 / np.sqrt(np.maximum(np.sum(x0 ** 2, axis=reduce_axes, keepdims=True), 1e-12))
        np.testing.assert_allclose(_run(y, {x: x0}), expected, rtol=1e-12)
        with tf.Session():
            assert grad_error(x, y, x0) < GRAD_TOL


def test_l2_normalize_of_zeros_is_zeros_and_dim_is_the_old_axis():
    with tf.Graph().as_default():
        x = tf.constant([[3.0, 4.0], [0.0, 0.0]])
        np.testing.assert_allclose(_run(tf.nn.l2_normalize(x, dim=1)), [[0.6, 0.8], [0.0, 0.0]])
        with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
            tf.nn.l2_normalize(x, axis=1, dim=1)


def test_moments_are_the_mean_and_the_biased_variance_over_the_axes():
    x0 = RNG.standard_normal((4, 3, 2, 5))
    with tf.Graph().as_default():
        mean, variance = tf.nn.moments(tf.constant(x0), axes=[0, 1, 2])
        mean_k, variance_k = tf.nn.moments(tf.constant(x0), axes=[0, 1, 2], keep_dims=True)
        assert mean.shape.as_list() == [5] and variance_k.shape.as_list() == [1, 1, 1, 5]
        got = _run([mean, variance, mean_k, variance_k])
    np.testing.assert_allclose(got[0], x0.mean((0, 1, 2)), rtol=1e-12)
    np.testing.assert_allclose(got[1], x0.var((0, 1, 2)), rtol=1e-12)
    np.testing.assert_allclose(got[3], x0.var((0, 1, 2), keepdims=True), rtol=1e-12)


# -- batch_normalization (composite) --------------------------------------------------------------
def test_batch_normalization_is_the_affine_normalization_and_differentiable_in_every_input():
    x0, m0, v0, o0, s0 = (RNG.standard_normal((4, 3)), RNG.standard_normal(3), RNG.random(3) + 0.5,
                          RNG.standard_normal(3), RNG.random(3) + 0.5)
    with tf.Graph().as_default():
        tensors = [tf.constant(v) for v in (x0, m0, v0, o0, s0)]
        y = tf.nn.batch_normalization(*tensors, variance_epsilon=1e-3)
        no_affine = tf.nn.batch_normalization(tensors[0], tensors[1], tensors[2], None, None, 1e-3)
        got, got_plain = _run([y, no_affine])
        np.testing.assert_allclose(got, (x0 - m0) / np.sqrt(v0 + 1e-3) * s0 + o0, rtol=1e-12)
        np.testing.assert_allclose(got_plain, (x0 - m0) / np.sqrt(v0 + 1e-3), rtol=1e-12)
        with tf.Session():
            for tensor, value in zip(tensors, (x0, m0, v0, o0, s0)):
                assert tf.test.compute_gradient_error(tensor, value.shape, y, [4, 3], x_init_value=value,
                                                      delta=1e-5) < GRAD_TOL


# -- fused_batch_norm -------------------------------------------------------------------------------
def _channel_axes(data_format):
    axis = 3 if data_format == "NHWC" else 1
    shape = [1, 1, 1, 1]
    shape[axis] = -1
    return tuple(a for a in range(4) if a != axis), shape


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_fused_batch_norm_training_normalizes_with_batch_statistics_and_returns_bessel_corrected_variance(
        data_format):
    axes, shape = _channel_axes(data_format)
    x0 = RNG.standard_normal((2, 3, 4, 3) if data_format == "NHWC" else (2, 3, 3, 4)) * 2 + 1
    scale0, offset0 = RNG.random(3) + 0.5, RNG.standard_normal(3)
    with tf.Graph().as_default():
        x, scale, offset = tf.constant(x0), tf.constant(scale0), tf.constant(offset0)
        y, batch_mean, batch_variance = tf.nn.fused_batch_norm(x, scale, offset, epsilon=1e-3,
                                                               data_format=data_format)
        assert y.op.type == "FusedBatchNorm" and len(y.op.outputs) == 5
        assert y.shape.as_list() == list(x0.shape) and batch_variance.shape.as_list() == [3]
        got_y, got_mean, got_variance, reserve_variance = _run([y, batch_mean, batch_variance, y.op.outputs[4]])
        mean, variance = x0.mean(axes), x0.var(axes)
        expected = (x0 - mean.reshape(shape)) / np.sqrt(variance.reshape(shape) + 1e-3) * scale0.reshape(shape)
        np.testing.assert_allclose(got_y, expected + offset0.reshape(shape), rtol=1e-10)
        np.testing.assert_allclose(got_mean, mean, rtol=1e-12)
        np.testing.assert_allclose(got_variance, x0.var(axes, ddof=1), rtol=1e-12)  # n / (n - 1) times
        np.testing.assert_allclose(reserve_variance, variance, rtol=1e-12)  # the gradient's (biased) one
        assert tf.gradients(y, x)[0].op.type == "FusedBatchNormGrad"
        with tf.Session():
            for tensor, value in ((x, x0), (scale, scale0), (offset, offset0)):
                assert tf.test.compute_gradient_error(tensor, value.shape, y, list(x0.shape), x_init_value=value,
                                                      delta=1e-5) < GRAD_TOL


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_fused_batch_norm_inference_uses_the_given_statistics(data_format):
    axes, shape = _channel_axes(data_format)
    x0 = RNG.standard_normal((2, 3, 3, 3))
    mean0, variance0, scale0, offset0 = RNG.standard_normal(3), RNG.random(3) + 0.5, RNG.random(3), RNG.random(3)
    with tf.Graph().as_default():
        x, scale, offset = tf.constant(x0), tf.constant(scale0), tf.constant(offset0)
        y, mean, variance = tf.nn.fused_batch_norm(x, scale, offset, tf.constant(mean0), tf.constant(variance0),
                                                   epsilon=1e-7, data_format=data_format, is_training=False)
        got_y, got_mean, got_variance = _run([y, mean, variance])
        epsilon = 1.001e-5  # TF raises epsilon to cuDNN's floor
        expected = ((x0 - mean0.reshape(shape)) / np.sqrt(variance0.reshape(shape) + epsilon) * scale0.reshape(shape)
                    + offset0.reshape(shape))
        np.testing.assert_allclose(got_y, expected, rtol=1e-10)
        np.testing.assert_array_equal(got_mean, mean0)
        np.testing.assert_array_equal(got_variance, variance0)
        with tf.Session():
            for tensor, value in ((x, x0), (scale, scale0), (offset, offset0)):
                assert tf.test.compute_gradient_error(tensor, value.shape, y, list(x0.shape), x_init_value=value,
                                                      delta=1e-5) < GRAD_TOL


def test_fused_batch_norm_errors_in_tf_words():
    with tf.Graph().as_default():
        x, c3 = tf.zeros([2, 2, 2, 3]), tf.ones([3])
        with pytest.raises(ValueError, match="Both 'mean' and 'variance' must be None if is_training is True."):
            tf.nn.fused_batch_norm(x, c3, c3, mean=c3, variance=c3)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Dimension 0 in both shapes must be equal, but are 3 and 2 for 'FusedBatchNorm"):
            tf.nn.fused_batch_norm(x, tf.ones([2]), tf.ones([2]))
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Shape must be rank 4 but is rank 2"):
            tf.nn.fused_batch_norm(tf.zeros([2, 3]), c3, c3)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"but are 3 and 0"):  # inference needs statistics
            tf.nn.fused_batch_norm(x, c3, c3, is_training=False)
        with pytest.raises(ValueError, match="data_format must be 'NHWC' or 'NCHW'"):
            tf.nn.fused_batch_norm(x, c3, c3, data_format="NCDHW")


def test_zero_fraction_is_the_share_of_zero_elements_as_float32():
    with tf.Graph().as_default():
        fraction = tf.nn.zero_fraction(tf.constant([[0, 1, 0, 3], [0, 0, 2, 0]], tf.int32))
        assert fraction.dtype == tf.float32 and fraction.op.name == "zero_fraction/fraction"
        assert tf.math.zero_fraction is tf.nn.zero_fraction
        assert _run(fraction) == pytest.approx(5 / 8)
