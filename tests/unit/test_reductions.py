"""Reductions, argmax/argmin and count_nonzero against numpy; reduction gradients against central
finite differences (float64), ties and zeros included; TF1's argument names, shapes and wording."""

import numpy as np
import pytest
from gradcheck import GRAD_TOL, grad_error

import dfcore as tf
from dfcore import errors

RNG = np.random.RandomState(42)


# -- reductions -----------------------------------------------------------------
REDUCE = [(tf.reduce_sum, np.sum, "Sum"), (tf.reduce_mean, np.mean, "Mean"), (tf.reduce_max, np.max, "Max"),
          (tf.reduce_min, np.min, "Min"), (tf.reduce_prod, np.prod, "Prod")]
X3 = RNG.uniform(0.5, 1.5, (2, 3, 4))


@pytest.mark.parametrize("fn,ref,op_type", REDUCE, ids=[r[2] for r in REDUCE])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ([0, 2], True), (-1, True), ([], False)])
def test_reduction_values_and_static_shapes(sess, fn, ref, op_type, axis, keepdims):
    x = tf.placeholder(tf.float64, [2, 3, 4])
    y = fn(x, axis=axis, keepdims=keepdims)
    want = ref(X3, axis=tuple(np.atleast_1d(axis)) if axis is not None else None, keepdims=keepdims)
    assert (y.op.type, y.op.name) == (op_type, op_type)
    assert y.shape.as_list() == list(np.shape(want))
    np.testing.assert_allclose(sess.run(y, {x: X3}), want, rtol=1e-12)


@pytest.mark.parametrize("fn,ref,op_type", REDUCE, ids=[r[2] for r in REDUCE])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ([0, 2], True), (-1, False)])
def test_reduction_gradients_match_finite_differences(sess, fn, ref, op_type, axis, keepdims):
    x0 = X3[:, :2, :2]
    x = tf.placeholder(tf.float64, list(x0.shape))
    assert grad_error(x, fn(x, axis=axis, keepdims=keepdims), x0) < GRAD_TOL


@pytest.mark.parametrize("fn,ref,op_type", REDUCE, ids=[r[2] for r in REDUCE])
def test_reduction_gradients_with_unknown_dims(sess, fn, ref, op_type):
    x = tf.placeholder(tf.float64, [None, 3])
    y = fn(x, 1)
    assert y.shape.as_list() == [None]
    x0 = X3[0, :, :3]
    assert tf.test.compute_gradient_error(x, [3, 3], y, [3], x0, delta=1e-5) < GRAD_TOL
    axis = tf.placeholder(tf.int32, [None])
    z = fn(x, axis, keepdims=True)
    assert z.shape.as_list() == [None, None]
    assert tf.test.compute_gradient_error(x, [3, 3], z, [3, 1], x0, delta=1e-5, extra_feed_dict={axis: [1]}) < GRAD_TOL


def test_reductions_over_unknown_rank(sess):
    x = tf.placeholder(tf.float64)
    y = tf.reduce_mean(x)
    assert y.shape.ndims is None
    assert sess.run(y, {x: X3}) == pytest.approx(X3.mean())
    np.testing.assert_allclose(sess.run(tf.gradients(y, x)[0], {x: X3}), np.full(X3.shape, 1 / X3.size))


def test_tf1_argument_names_and_conflicts(sess):
    x = tf.constant(X3)
    y = tf.reduce_mean(x, reduction_indices=[1], keep_dims=True)
    assert y.shape.as_list() == [2, 1, 4]
    z = tf.reduce_sum(x, tf.constant([0, 2], tf.int64))
    np.testing.assert_allclose(sess.run(z), X3.sum(axis=(0, 2)))
    with pytest.raises(TypeError, match="parameter 'reduction_indices' has DataType float32"):
        tf.reduce_sum(x, tf.constant(1.0))
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'reduction_indices'"):
        tf.reduce_sum(x, axis=0, reduction_indices=0)
    with pytest.raises(errors.InvalidArgumentError, match="Invalid reduction dimension 3 for input with 3 dimensions"):
        tf.reduce_max(x, 3)


def test_max_min_gradient_split_between_ties(sess):
    x = tf.constant([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], tf.float64)
    assert sess.run(tf.gradients(tf.reduce_max(x, 1), x)[0]).tolist() == [[0, 0.5, 0.5], [1 / 3] * 3]
    assert sess.run(tf.gradients(tf.reduce_min(x), x)[0]).tolist() == [[1, 0, 0], [0, 0, 0]]


def test_prod_gradient_with_zeros(sess):
    x0 = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 1.0], [1.0, 2.0, 4.0]])
    x = tf.constant(x0)
    grad = sess.run(tf.gradients(tf.reduce_prod(x, 1), x)[0])
    assert grad.tolist() == [[0, 6, 0], [0, 0, 0], [8, 4, 2]]


def test_integer_mean_truncates_and_empty_max_is_lowest(sess):
    assert sess.run(tf.reduce_mean(tf.constant([-3, 0]))) == -1
    assert sess.run(tf.reduce_mean(tf.constant([[1, 2], [4, 4]]), 1)).dtype == np.int32
    assert sess.run(tf.reduce_max(tf.zeros([0, 2]), 0)).tolist() == [-np.inf, -np.inf]
    assert sess.run(tf.reduce_min(tf.zeros([0], tf.int32))) == np.iinfo(np.int32).max


def test_reduce_all_any(sess):
    b = np.array([[True, False], [True, True]])
    assert sess.run(tf.reduce_all(b, 1)).tolist() == [False, True]
    assert sess.run(tf.reduce_any(b)) and not sess.run(tf.reduce_all(b))
    with pytest.raises(TypeError, match="parameter 'input' has DataType float32 not in list of allowed values: bool"):
        tf.reduce_any(tf.constant([1.0]))


def test_argmax_argmin(sess):
    x0 = np.array([[1, 9, 3], [7, 2, 8]], np.float32)
    y = tf.argmax(x0)
    assert (y.op.type, y.dtype, y.shape.as_list()) == ("ArgMax", tf.int64, [3])
    assert sess.run(y).tolist() == [1, 0, 1]
    z = tf.argmin(x0, axis=1, output_type=tf.int32)
    assert (z.dtype, sess.run(z).tolist()) == (tf.int32, [0, 1])
    assert sess.run(tf.argmax(x0, dimension=-1)).tolist() == [1, 2]
    with pytest.raises(errors.InvalidArgumentError, match=r"Expected dimension in the range \[-2, 2\), but got 2"):
        tf.argmax(x0, 2)
    assert tf.argmax(tf.placeholder(tf.float32, [None, 4]), 1).shape.as_list() == [None]


def test_count_nonzero(sess):
    x0 = np.array([[0, 1, 2], [0, 0, 3]])
    y = tf.count_nonzero(x0, axis=1)
    assert y.dtype == tf.int64 and sess.run(y).tolist() == [2, 1]
    assert sess.run(tf.count_nonzero(tf.constant([0.0, 0.5]), dtype=tf.int32)) == 1
