"""nn ops, losses and numeric checks against numpy references and TF1 behaviour.

Every differentiable op is checked against central finite differences in float64.
"""

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors

RNG = np.random.RandomState(42)


def _log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _grad_error(make_y, x0, extra_feed=None):
    """Max |theoretical - numerical| Jacobian difference of ``make_y(x)`` at ``x0`` (float64)."""
    x = tf.placeholder(tf.float64, x0.shape)
    y = make_y(x)
    with tf.Session():
        return tf.test.compute_gradient_error(x, x0.shape, y, y.shape.as_list(), x_init_value=x0,
                                              extra_feed_dict=extra_feed)


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


# -- activations -----------------------------------------------------------------
ACTIVATIONS = [
    (tf.nn.relu, lambda x: np.maximum(x, 0), "Relu"),
    (tf.nn.relu6, lambda x: np.clip(x, 0, 6), "Relu6"),
    (tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x), "LeakyRelu"),
    (tf.nn.elu, lambda x: np.where(x > 0, x, np.expm1(x)), "Elu"),
    (tf.nn.softplus, lambda x: np.log1p(np.exp(x)), "Softplus"),
]


@pytest.mark.parametrize("fn,ref,op_type", ACTIVATIONS)
def test_activation_values_types_and_gradients(fn, ref, op_type):
    x0 = np.array([[-3.0, -0.7, 0.4], [2.5, 7.0, -9.0]])
    y = fn(tf.constant(x0, tf.float32))
    assert y.op.type == op_type and y.dtype == tf.float32 and y.shape.as_list() == [2, 3]
    np.testing.assert_allclose(_run(y), ref(x0), rtol=1e-6)
    assert _grad_error(fn, x0) < 1e-6


def test_relu_gradient_uses_relu_grad_op_and_zero_at_negative():
    x = tf.constant([-1.0, 2.0])
    g, = tf.gradients(tf.nn.relu(x), x)
    assert g.op.type == "ReluGrad"
    np.testing.assert_array_equal(_run(g), [0.0, 1.0])


def test_relu_second_derivative_is_zero():
    x = tf.placeholder(tf.float64, [3])
    g, = tf.gradients(tf.nn.relu(x) * x, x)  # d/dx relu(x)*x = 2x for x > 0
    gg, = tf.gradients(g, x)
    np.testing.assert_allclose(_run(gg, {x: [-1.0, 2.0, 3.0]}), [0.0, 2.0, 2.0])


def test_leaky_relu_alpha_and_int_input():
    y = tf.nn.leaky_relu(tf.constant([-2, 3]), alpha=0.5)
    assert y.dtype == tf.float32
    np.testing.assert_allclose(_run(y), [-1.0, 3.0])


# -- softmax ---------------------------------------------------------------------
def test_softmax_rows_sum_to_one_and_are_stable():
    x0 = np.array([[1000.0, 1001.0, 1002.0], [-5.0, 0.0, 5.0]], np.float32)
    y = tf.nn.softmax(tf.constant(x0))
    assert y.op.type == "Softmax" and y.op.name == "Softmax"
    out = _run(y)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out.sum(axis=1), [1.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(out, np.exp(_log_softmax(x0.astype(np.float64))), rtol=1e-5)


def test_log_softmax_values_and_stability():
    x0 = np.array([[1000.0, 0.0, -1000.0]])
    out = _run(tf.nn.log_softmax(tf.constant(x0)))
    np.testing.assert_allclose(out, _log_softmax(x0))
    assert np.isfinite(out[0, 1])


@pytest.mark.parametrize("fn", [tf.nn.softmax, tf.nn.log_softmax])
def test_softmax_gradients(fn):
    assert _grad_error(fn, RNG.randn(3, 4)) < 1e-6
    assert _grad_error(lambda x: fn(x) * np.arange(4.0), RNG.randn(2, 4)) < 1e-6


@pytest.mark.parametrize("fn,ref", [(tf.nn.softmax, lambda x: np.exp(_log_softmax(x))),
                                    (tf.nn.log_softmax, _log_softmax)])
def test_softmax_over_a_non_last_axis(fn, ref):
    x0 = RNG.randn(2, 3, 4)
    y = fn(tf.constant(x0), axis=1)
    assert y.shape.as_list() == [2, 3, 4]
    np.testing.assert_allclose(_run(y), np.moveaxis(ref(np.moveaxis(x0, 1, -1)), -1, 1))
    assert _grad_error(lambda x: fn(x, axis=0) * np.arange(6.0).reshape(2, 3), RNG.randn(2, 3)) < 1e-6


def test_softmax_rejects_scalar_and_bad_axis():
    with pytest.raises(errors.InvalidArgumentError, match="at least rank 1"):
        tf.nn.softmax(tf.constant(1.0))
    with pytest.raises(errors.InvalidArgumentError, match=r"Dimension \(5\) must be in the range \[-2, 2\)"):
        tf.nn.softmax(tf.constant([[1.0]]), axis=5)
    y = tf.nn.softmax(tf.constant([[1.0, 2.0]]), axis=1)  # last axis given explicitly
    assert y.op.type == "Softmax"


# -- bias_add and l2_loss ----------------------------------------------------------
def test_bias_add_values_and_gradients():
    v0, b0 = RNG.randn(2, 3, 4), RNG.randn(4)
    y = tf.nn.bias_add(tf.constant(v0), tf.constant(b0))
    assert y.op.type == "BiasAdd" and y.op.get_attr("data_format") == "NHWC"
    np.testing.assert_allclose(_run(y), v0 + b0)
    b = tf.placeholder(tf.float64, [4])
    assert _grad_error(lambda v: tf.nn.bias_add(v, b0), v0) < 1e-6
    v = tf.constant(v0)
    yb = tf.nn.bias_add(v, b)
    gb, = tf.gradients(yb, b)
    assert gb.op.type == "BiasAddGrad"
    with tf.Session():
        assert tf.test.compute_gradient_error(b, [4], yb, [2, 3, 4], x_init_value=b0) < 1e-6


def test_bias_add_second_derivative():
    b0 = RNG.randn(3)
    v = tf.constant(RNG.randn(2, 3))
    weights = np.arange(6.0).reshape(2, 3)

    def grad_of(b):
        return tf.gradients(tf.reduce_sum(tf.square(tf.nn.bias_add(v, b)) * weights), b)[0]

    assert _grad_error(grad_of, b0) < 1e-6


def test_bias_add_nchw():
    v0, b0 = RNG.randn(2, 3, 2, 2), np.array([1.0, 2.0, 3.0])
    y = tf.nn.bias_add(tf.constant(v0), tf.constant(b0), data_format="NCHW")
    np.testing.assert_allclose(_run(y), v0 + b0.reshape(3, 1, 1))
    g, = tf.gradients(y, y.op.inputs[1])
    np.testing.assert_allclose(_run(g), [8.0, 8.0, 8.0])


def test_bias_add_shape_errors():
    with pytest.raises(errors.InvalidArgumentError) as info:
        tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([4]))
    assert str(info.value) == ("Dimensions must be equal, but are 3 and 4 for 'BiasAdd' (op: 'BiasAdd') "
                               "with input shapes: [2,3], [4].")
    with pytest.raises(errors.InvalidArgumentError, match="at least rank 2 but is rank 1"):
        tf.nn.bias_add(tf.zeros([3]), tf.zeros([3]))
    with pytest.raises(errors.InvalidArgumentError, match="Must provide as many biases"):
        v = tf.placeholder(tf.float32, [None, None])
        _run(tf.nn.bias_add(v, tf.zeros([4])), {v: np.zeros((2, 3))})


def test_l2_loss():
    x0 = RNG.randn(3, 2)
    y = tf.nn.l2_loss(tf.constant(x0))
    assert y.op.type == "L2Loss" and y.shape.as_list() == []
    np.testing.assert_allclose(_run(y), np.sum(x0 ** 2) / 2)
    assert _grad_error(tf.nn.l2_loss, x0) < 1e-6


# -- softmax cross-entropy -----------------------------------------------------------
def _labels(rows, cols):
    p = RNG.rand(rows, cols)
    return p / p.sum(axis=1, keepdims=True)


def test_softmax_xent_values_and_op():
    logits0, labels0 = RNG.randn(3, 5), _labels(3, 5)
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels0, logits=tf.constant(logits0))
    op = loss.op
    assert op.type == "SoftmaxCrossEntropyWithLogits" and len(op.outputs) == 2
    assert op.name == "softmax_cross_entropy_with_logits" and loss.shape.as_list() == [3]
    out, backprop = _run([loss, op.outputs[1]])
    np.testing.assert_allclose(out, -np.sum(labels0 * _log_softmax(logits0), axis=1))
    np.testing.assert_allclose(backprop, np.exp(_log_softmax(logits0)) - labels0)


def test_softmax_xent_gradients_v2_and_v1():
    logits0, labels0 = RNG.randn(3, 4), _labels(3, 4)
    assert _grad_error(lambda x: tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels0, logits=x), logits0) < 1e-6
    assert _grad_error(lambda y: tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits0), labels0) < 1e-6
    labels = tf.constant(labels0)
    logits = tf.constant(logits0)
    v1 = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert v1.op.name == "softmax_cross_entropy_with_logits_sg"
    assert tf.gradients(v1, [labels])[0] is None
    assert tf.gradients(v1, [logits])[0] is not None


def test_softmax_xent_second_derivative():
    labels0 = _labels(2, 3)

    def grad_of(x):
        return tf.gradients(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels0, logits=x), x)[0]

    assert _grad_error(lambda x: grad_of(x) * np.arange(1.0, 4.0), RNG.randn(2, 3)) < 1e-6


def test_softmax_xent_higher_rank_and_errors():
    logits0, labels0 = RNG.randn(2, 3, 4), RNG.dirichlet(np.ones(4), size=(2, 3))
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels0, logits=logits0)
    assert loss.shape.as_list() == [2, 3]
    np.testing.assert_allclose(_run(loss), -np.sum(labels0 * _log_softmax(logits0), axis=-1))
    with pytest.raises(errors.InvalidArgumentError, match="Dimensions must be equal, but are 3 and 4"):
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.zeros([2, 4]), logits=tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="named arguments"):
        tf.nn.softmax_cross_entropy_with_logits(tf.zeros([2, 3]), tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="Both labels and logits must be provided"):
        tf.nn.softmax_cross_entropy_with_logits(logits=tf.zeros([2, 3]))
    x = tf.placeholder(tf.float32, [None, None])
    with pytest.raises(errors.InvalidArgumentError, match=r"logits_size=\[2,3\] labels_size=\[2,4\]"):
        _run(tf.nn.softmax_cross_entropy_with_logits_v2(labels=x, logits=tf.zeros([2, 3])), {x: np.zeros((2, 4))})


def test_softmax_xent_axis_and_unknown_dims():
    logits0, labels0 = RNG.randn(3, 4, 2), RNG.dirichlet(np.ones(4), size=(3, 2)).transpose(0, 2, 1)
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels0, logits=logits0, axis=1)
    assert loss.shape.as_list() == [3, 2]
    expect = -np.sum(labels0 * np.moveaxis(_log_softmax(np.moveaxis(logits0, 1, -1)), -1, 1), axis=1)
    np.testing.assert_allclose(_run(loss), expect)
    logits = tf.placeholder(tf.float64, [None, None, None])
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels0, logits=logits, axis=1)
    assert loss.shape.ndims == 2
    np.testing.assert_allclose(_run(loss, {logits: logits0}), expect)


# -- sparse softmax cross-entropy ----------------------------------------------------
@pytest.mark.parametrize("label_dtype", [tf.int32, tf.int64])
def test_sparse_xent_values_and_gradient(label_dtype):
    logits0 = RNG.randn(4, 3)
    labels0 = np.array([0, 2, 1, 2])
    labels = tf.constant(labels0, label_dtype)
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=tf.constant(logits0))
    assert loss.op.type == "SparseSoftmaxCrossEntropyWithLogits" and loss.dtype == tf.float64
    assert loss.op.name == "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits"
    np.testing.assert_allclose(_run(loss), -_log_softmax(logits0)[np.arange(4), labels0])

    def make(x):
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x)

    assert _grad_error(make, logits0) < 1e-6


def test_sparse_xent_matches_dense_with_one_hot():
    logits0, labels0 = RNG.randn(5, 4), np.array([3, 0, 1, 1, 2])
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels0, logits=logits0)
    dense = tf.nn.softmax_cross_entropy_with_logits_v2(labels=np.eye(4)[labels0], logits=logits0)
    a, b = _run([sparse, dense])
    np.testing.assert_allclose(a, b)


def test_sparse_xent_out_of_range_label():
    labels = tf.placeholder(tf.int32, [2])
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=tf.zeros([2, 10]))
    with pytest.raises(errors.InvalidArgumentError) as info:
        _run(loss, {labels: [1, 10]})
    assert ("Received a label value of 10 which is outside the valid range of [0, 10).  Label values: 1 10"
            in str(info.value))
    with pytest.raises(errors.InvalidArgumentError, match="Received a label value of -1 "):
        _run(loss, {labels: [-1, 3]})


def test_sparse_xent_higher_rank_and_static_errors():
    logits0, labels0 = RNG.randn(2, 3, 4), RNG.randint(0, 4, size=(2, 3))
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels0, logits=logits0)
    assert loss.shape.as_list() == [2, 3]
    expect = -np.take_along_axis(_log_softmax(logits0), labels0[..., None], axis=-1)[..., 0]
    np.testing.assert_allclose(_run(loss), expect)
    with pytest.raises(ValueError, match="Rank mismatch: Rank of labels \\(received 2\\)"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.zeros([2, 3], tf.int32), logits=tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="Shape mismatch"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.zeros([4], tf.int32), logits=tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="Logits cannot be scalars"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.zeros([], tf.int32), logits=tf.constant(1.0))


def test_sparse_xent_unknown_dims():
    logits = tf.placeholder(tf.float64, [None, None, None])
    labels = tf.placeholder(tf.int32, [None, None])
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert loss.shape.as_list() == [None, None]
    logits0, labels0 = RNG.randn(2, 3, 4), RNG.randint(0, 4, size=(2, 3))
    expect = -np.take_along_axis(_log_softmax(logits0), labels0[..., None], axis=-1)[..., 0]
    np.testing.assert_allclose(_run(loss, {logits: logits0, labels: labels0}), expect)


# -- sigmoid cross-entropy -----------------------------------------------------------
def test_sigmoid_xent_values_stability_and_gradient():
    logits0 = np.array([[-200.0, -1.5, 0.3], [0.0, 2.0, 200.0]])
    labels0 = np.array([[0.0, 1.0, 0.5], [1.0, 0.2, 1.0]])
    loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels0, logits=logits0)
    assert loss.op.name == "logistic_loss" and loss.shape.as_list() == [2, 3]
    expect = np.maximum(logits0, 0) - logits0 * labels0 + np.log1p(np.exp(-np.abs(logits0)))
    out = _run(loss)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, expect)
    point = RNG.randn(2, 3)  # away from the kink at 0

    def make(x):
        return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels0, logits=x)

    assert _grad_error(make, point) < 1e-6
    with pytest.raises(ValueError, match="logits and labels must have the same shape"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros([2]), logits=tf.zeros([3]))


# -- moments and xw_plus_b ----------------------------------------------------------
def test_moments_values_keepdims_and_gradient():
    x0 = RNG.randn(4, 3, 2)
    mean, var = tf.nn.moments(tf.constant(x0), axes=[0, 2])
    assert mean.shape.as_list() == [3] and var.shape.as_list() == [3]
    m, v = _run([mean, var])
    np.testing.assert_allclose(m, x0.mean(axis=(0, 2)))
    np.testing.assert_allclose(v, x0.var(axis=(0, 2)))
    mean_k, _ = tf.nn.moments(tf.constant(x0), axes=[0], keep_dims=True)
    assert mean_k.shape.as_list() == [1, 3, 2]
    assert _grad_error(lambda x: tf.nn.moments(x, axes=[0])[1], RNG.randn(5, 2)) < 1e-6


def test_xw_plus_b_and_nn_aliases():
    x0, w0, b0 = RNG.randn(2, 3), RNG.randn(3, 4), RNG.randn(4)
    y = tf.nn.xw_plus_b(x0, w0, b0)
    assert y.op.type == "BiasAdd" and y.op.name == "xw_plus_b"
    np.testing.assert_allclose(_run(y), x0 @ w0 + b0)
    assert tf.nn.sigmoid is tf.sigmoid and tf.nn.tanh is tf.tanh


# -- dropout ---------------------------------------------------------------------
def test_dropout_statistics_and_scaling():
    x0 = np.ones((200, 100), np.float32)
    y = tf.nn.dropout(tf.constant(x0), keep_prob=0.7, seed=1)
    assert y.shape.as_list() == [200, 100]
    out = _run(y)
    kept = out != 0
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    assert abs((~kept).mean() - 0.3) < 0.01
    assert abs(out.mean() - 1.0) < 0.02


def test_dropout_keep_prob_placeholder_and_one():
    x0 = RNG.randn(50, 40).astype(np.float32)
    keep = tf.placeholder(tf.float32)
    y = tf.nn.dropout(tf.constant(x0), keep)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {keep: 1.0}), x0, rtol=1e-6)
        half = sess.run(y, {keep: 0.5})
        kept = half != 0
        np.testing.assert_allclose(half[kept], 2 * x0[kept], rtol=1e-6)
        assert abs(kept.mean() - 0.5) < 0.05
    x = tf.constant(x0)
    assert tf.nn.dropout(x, keep_prob=1) is x
    assert tf.nn.dropout(x, rate=0.0) is x


def test_dropout_noise_shape_gradient_and_errors():
    y = tf.nn.dropout(tf.ones([30, 20]), keep_prob=0.5, noise_shape=[30, 1], seed=3)
    out = _run(y)
    assert all(len(set(row)) == 1 for row in out)  # whole rows kept or dropped
    x = tf.placeholder(tf.float32, [4])
    g, = tf.gradients(tf.nn.dropout(x, rate=0.5, seed=2), x)
    gv = _run(g, {x: np.ones(4)})
    assert set(np.unique(gv)) <= {0.0, 2.0}
    with pytest.raises(ValueError, match=r"range \[0, 1\), got 1"):
        tf.nn.dropout(x, keep_prob=0.0)
    with pytest.raises(ValueError, match="You must provide a rate"):
        tf.nn.dropout(x)
    with pytest.raises(ValueError, match="Cannot specify both"):
        tf.nn.dropout(x, keep_prob=0.5, rate=0.5)
    with pytest.raises(ValueError, match="floating point tensor"):
        tf.nn.dropout(tf.constant([1, 2]), keep_prob=0.5)
