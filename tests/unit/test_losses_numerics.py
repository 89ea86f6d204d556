"""``tf.losses`` (weights, reductions, the LOSSES collection) and numeric checks (``check_numerics``)."""

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors

RNG = np.random.RandomState(7)


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def _log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# -- losses ----------------------------------------------------------------------
def test_mean_squared_error_default_and_collection():
    labels0, preds0 = RNG.randn(4, 3), RNG.randn(4, 3)
    loss = tf.losses.mean_squared_error(labels0, preds0)
    assert loss.dtype == tf.float32 and loss.shape.as_list() == []
    np.testing.assert_allclose(_run(loss), np.mean((preds0 - labels0) ** 2), rtol=1e-5)
    assert tf.get_collection(tf.GraphKeys.LOSSES) == [loss]
    assert tf.losses.get_losses() == [loss]
    assert loss.op.name.startswith("mean_squared_error/")


WEIGHTS = np.array([[1.0], [0.0], [2.0], [0.5]])


@pytest.mark.parametrize("reduction,expect", [
    (tf.losses.Reduction.NONE, lambda x, w: x * w),
    (tf.losses.Reduction.SUM, lambda x, w: np.sum(x * w)),
    (tf.losses.Reduction.MEAN, lambda x, w: np.sum(x * w) / np.sum(np.ones_like(x) * w)),
    (tf.losses.Reduction.SUM_OVER_BATCH_SIZE, lambda x, w: np.sum(x * w) / x.size),
    (tf.losses.Reduction.SUM_BY_NONZERO_WEIGHTS, lambda x, w: np.sum(x * w) / 9.0),  # 3 nonzero rows x 3
])
def test_mean_squared_error_reductions(reduction, expect):
    labels0, preds0 = RNG.randn(4, 3), RNG.randn(4, 3)
    loss = tf.losses.mean_squared_error(labels0, preds0, weights=tf.constant(WEIGHTS), reduction=reduction)
    np.testing.assert_allclose(_run(loss), expect((preds0 - labels0) ** 2, WEIGHTS), rtol=1e-5)


def test_weighted_loss_all_zero_weights_is_zero_and_bad_inputs():
    loss = tf.losses.mean_squared_error([1.0, 2.0], [3.0, 5.0], weights=0.0)
    assert _run(loss) == 0.0
    with pytest.raises(ValueError, match="Invalid Reduction Key bogus"):
        tf.losses.mean_squared_error([1.0], [2.0], reduction="bogus")
    with pytest.raises(ValueError, match="incompatible"):
        tf.losses.mean_squared_error(tf.zeros([2, 3]), tf.zeros([2, 4]))
    with pytest.raises(ValueError, match="labels must not be None"):
        tf.losses.mean_squared_error(None, tf.zeros([2]))
    with pytest.raises(ValueError, match="weights can not be broadcast"):
        tf.losses.mean_squared_error(tf.zeros([2, 3]), tf.zeros([2, 3]), weights=tf.ones([3, 3]))


def test_mean_squared_error_gradient():
    labels0 = RNG.randn(3, 2)
    x = tf.placeholder(tf.float64, [3, 2])
    loss = tf.losses.mean_squared_error(labels0, x, loss_collection=None)
    assert tf.get_collection(tf.GraphKeys.LOSSES) == []
    g, = tf.gradients(loss, x)
    x0 = RNG.randn(3, 2)
    np.testing.assert_allclose(_run(g, {x: x0}), 2 * (x0 - labels0) / 6, rtol=1e-5)


def test_softmax_cross_entropy_loss_and_label_smoothing():
    logits0 = RNG.randn(4, 3)
    onehot0 = np.eye(3)[[0, 2, 1, 1]]
    loss = tf.losses.softmax_cross_entropy(onehot0, logits0)
    np.testing.assert_allclose(_run(loss), np.mean(-np.sum(onehot0 * _log_softmax(logits0), axis=1)), rtol=1e-5)
    smooth = tf.losses.softmax_cross_entropy(onehot0, logits0, label_smoothing=0.3)
    smoothed = onehot0 * 0.7 + 0.1
    np.testing.assert_allclose(_run(smooth), np.mean(-np.sum(smoothed * _log_softmax(logits0), axis=1)), rtol=1e-5)
    assert len(tf.losses.get_losses()) == 2


def test_sparse_softmax_cross_entropy_loss_squeezes_labels():
    logits0 = RNG.randn(4, 3)
    labels0 = np.array([[0], [2], [1], [1]])
    loss = tf.losses.sparse_softmax_cross_entropy(tf.constant(labels0), logits0, weights=2.0)
    expect = np.mean(-_log_softmax(logits0)[np.arange(4), labels0[:, 0]]) * 2.0
    np.testing.assert_allclose(_run(loss), expect, rtol=1e-5)


def test_sigmoid_cross_entropy_and_absolute_difference():
    logits0, labels0 = RNG.randn(3, 2), RNG.randint(0, 2, size=(3, 2))
    loss = tf.losses.sigmoid_cross_entropy(labels0, logits0)
    expect = np.maximum(logits0, 0) - logits0 * labels0 + np.log1p(np.exp(-np.abs(logits0)))
    np.testing.assert_allclose(_run(loss), expect.mean(), rtol=1e-5)
    absd = tf.losses.absolute_difference([1.0, -2.0], [0.5, 1.0])
    np.testing.assert_allclose(_run(absd), 1.75, rtol=1e-6)


def test_get_total_loss_adds_regularization():
    a = tf.losses.mean_squared_error([1.0], [3.0])  # 4
    tf.add_to_collection("regularization_losses", tf.constant(0.5))
    total = tf.losses.get_total_loss()
    np.testing.assert_allclose(_run(total), 4.5)
    np.testing.assert_allclose(_run(tf.losses.get_total_loss(add_regularization_losses=False)), 4.0)
    np.testing.assert_allclose(_run(tf.losses.get_regularization_loss()), 0.5)
    assert a in tf.losses.get_losses()


# -- numerics ----------------------------------------------------------------------
def test_check_numerics_passes_finite_values():
    x = tf.constant([1.0, 2.0])
    y = tf.debugging.check_numerics(x, "x is bad")
    assert y.op.type == "CheckNumerics" and y.op.get_attr("message") == "x is bad"
    np.testing.assert_array_equal(_run(y), [1.0, 2.0])
    assert tf.check_numerics is tf.debugging.check_numerics


@pytest.mark.parametrize("value,status", [
    ([1.0, np.nan], "NaN"), ([np.inf, 1.0], "Inf"), ([np.nan, -np.inf], "Inf and NaN")])
def test_check_numerics_error_text(value, status):
    x = tf.placeholder(tf.float32, [2])
    y = tf.check_numerics(x, "checking x")
    with pytest.raises(errors.InvalidArgumentError) as info:
        _run(y, {x: value})
    assert str(info.value).startswith(f"checking x : Tensor had {status} values")


def test_check_numerics_gradient_passes_through_and_checks():
    x = tf.placeholder(tf.float64, [3])
    y = tf.check_numerics(x, "fwd") * 2.0
    with tf.Session():
        assert tf.test.compute_gradient_error(x, [3], y, [3], x_init_value=np.array([1.0, -2.0, 3.0])) < 1e-8
    z = tf.log(tf.check_numerics(x, "fwd"))
    g, = tf.gradients(z, x)
    assert g.op.type == "CheckNumerics"
    np.testing.assert_allclose(_run(g, {x: [1.0, 2.0, 4.0]}), [1.0, 0.5, 0.25])
    with pytest.raises(errors.InvalidArgumentError, match="detected in gradient. fwd : Tensor had Inf values"):
        _run(g, {x: [0.0, 1.0, 2.0]})


def test_check_numerics_rejects_integers():
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.check_numerics(tf.constant([1, 2]), "ints")


def test_verify_tensor_all_finite_and_add_check_numerics_ops():
    x = tf.placeholder(tf.float32, [2])
    y = tf.verify_tensor_all_finite(x, "bad x")
    assert y.op.type == "Identity"
    np.testing.assert_array_equal(_run(y, {x: [1.0, 2.0]}), [1.0, 2.0])
    with pytest.raises(errors.InvalidArgumentError, match="bad x : Tensor had NaN values"):
        _run(y, {x: [np.nan, 2.0]})
    tf.reset_default_graph()
    a = tf.placeholder(tf.float32, [2], name="a")
    b = tf.log(a, name="b")
    check = tf.add_check_numerics_ops()
    assert check.type == "NoOp"
    with tf.Session() as sess:
        sess.run([b, check], {a: [1.0, 2.0]})
        with pytest.raises(errors.InvalidArgumentError, match="b:0 : Tensor had Inf values"):
            sess.run([b, check], {a: [0.0, 2.0]})
