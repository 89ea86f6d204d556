"""matmul (MatMul, BatchMatMul), matrix_inverse and matrix_determinant against numpy; their gradients
against central finite differences (float64); TF1's names, shapes and error wording."""

import numpy as np
import pytest
from gradcheck import GRAD_TOL, grad_error

import dfcore as tf
from dfcore import errors

RNG = np.random.RandomState(42)


# -- matmul ---------------------------------------------------------------------
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("batch", [[], [2]])
def test_matmul_values_and_gradients(sess, ta, tb, batch):
    a0 = RNG.standard_normal(batch + ([3, 2] if ta else [2, 3]))
    b0 = RNG.standard_normal(batch + ([4, 3] if tb else [3, 4]))
    a, b = tf.placeholder(tf.float64, a0.shape), tf.placeholder(tf.float64, b0.shape)
    c = tf.matmul(a, b, transpose_a=ta, transpose_b=tb)
    assert c.op.type == ("BatchMatMul" if batch else "MatMul")
    assert c.shape.as_list() == batch + [2, 4]
    ref = np.matmul(np.swapaxes(a0, -1, -2) if ta else a0, np.swapaxes(b0, -1, -2) if tb else b0)
    np.testing.assert_allclose(sess.run(c, {a: a0, b: b0}), ref, rtol=1e-12)
    out = batch + [2, 4]
    assert tf.test.compute_gradient_error(a, list(a0.shape), c, out, a0, extra_feed_dict={b: b0}) < GRAD_TOL
    assert tf.test.compute_gradient_error(b, list(b0.shape), c, out, b0, extra_feed_dict={a: a0}) < GRAD_TOL


def test_matmul_shape_errors(sess):
    with pytest.raises(errors.InvalidArgumentError) as info:
        tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 2]))
    assert str(info.value) == ("Dimensions must be equal, but are 3 and 4 for 'MatMul' (op: 'MatMul') with input "
                               "shapes: [2,3], [4,2].")
    with pytest.raises(errors.InvalidArgumentError, match="Dimensions must be equal, but are 2 and 5"):
        tf.matmul(tf.zeros([2, 2, 3]), tf.zeros([5, 3, 2]))
    with pytest.raises(ValueError, match="Only one of transpose_a and adjoint_a can be True."):
        tf.matmul(tf.zeros([2, 2]), tf.zeros([2, 2]), transpose_a=True, adjoint_a=True)
    unknown = tf.matmul(tf.placeholder(tf.float32), tf.zeros([2, 2]))
    assert unknown.op.type == "BatchMatMul" and unknown.shape.ndims is None


# -- linear algebra -------------------------------------------------------------
WELL = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)


@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("a0", [WELL[0], WELL], ids=["matrix", "batch"])
def test_matrix_inverse(sess, a0, adjoint):
    a = tf.placeholder(tf.float64, a0.shape)
    y = tf.matrix_inverse(a, adjoint=adjoint)
    assert (y.op.type, y.shape.as_list()) == ("MatrixInverse", list(a0.shape))
    np.testing.assert_allclose(sess.run(y, {a: a0}), np.linalg.inv(np.swapaxes(a0, -1, -2) if adjoint else a0))
    assert grad_error(a, y, a0) < GRAD_TOL


@pytest.mark.parametrize("a0", [WELL[0], WELL], ids=["matrix", "batch"])
def test_matrix_determinant(sess, a0):
    a = tf.placeholder(tf.float64, a0.shape)
    d = tf.matrix_determinant(a)
    assert (d.op.type, d.shape.as_list()) == ("MatrixDeterminant", list(a0.shape[:-2]))
    np.testing.assert_allclose(sess.run(d, {a: a0}), np.linalg.det(a0))
    assert grad_error(a, d, a0) < GRAD_TOL
    u = tf.placeholder(tf.float64, [None, 3, 3])
    assert tf.test.compute_gradient_error(u, [2, 3, 3], tf.linalg.det(u), [2], WELL, delta=1e-5) < GRAD_TOL


def test_linalg_errors_and_names(sess):
    assert tf.linalg.inv is tf.matrix_inverse and tf.linalg.det is tf.matrix_determinant
    with pytest.raises(errors.InvalidArgumentError) as info:
        tf.matrix_inverse(tf.zeros([2, 3]))
    assert str(info.value) == ("Dimensions must be equal, but are 2 and 3 for 'MatrixInverse' (op: 'MatrixInverse') "
                               "with input shapes: [2,3].")
    with pytest.raises(errors.InvalidArgumentError, match="Input is not invertible."):
        sess.run(tf.matrix_inverse(tf.constant([[1.0, 2.0], [2.0, 4.0]])))
    with pytest.raises(errors.InvalidArgumentError, match="Shape must be at least rank 2 but is rank 1"):
        tf.matrix_determinant(tf.zeros([3]))
    with pytest.raises(TypeError, match="DataType int32"):
        tf.matrix_inverse(tf.constant([[1]]))
    assert sess.run(tf.matrix_determinant(tf.constant([[2.0, 0.0], [0.0, 3.0]], tf.float16))) == 6
