"""Bad input gets a clear, typed error raised as early as TF raises it (issue: engine foundation, item 8)."""

import numpy as np
import pytest

import dfcore as tf


def test_incompatible_matmul_shapes_at_construction():
    a = tf.constant(np.ones((2, 3), np.float32))
    b = tf.constant(np.ones((4, 2), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.matmul(a, b)
    assert str(info.value) == (
        "Dimensions must be equal, but are 3 and 4 for 'MatMul' (op: 'MatMul') with input shapes: [2,3], [4,2]."
    )


def test_incompatible_broadcast_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Dimensions must be equal, but are 3 and 4 for 'Add'"):
        tf.add(tf.zeros([2, 3]), tf.zeros([4]))


def test_dtype_mismatch_names_the_op():
    with pytest.raises(TypeError, match="'MatMul' Op has type float64 that does not match type float32"):
        tf.matmul(tf.zeros([2, 2]), tf.zeros([2, 2], dtype=tf.float64))


def test_unfed_placeholder():
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(x * 2.0)
    assert "You must feed a value for placeholder tensor 'x' with dtype float and shape [?,784]" in str(info.value)


def test_fed_value_of_wrong_shape():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor 'x:0', which has shape "
                                             r"'\(\?, 3\)'"):
            sess.run(x, {x: np.zeros(3)})


def test_fed_value_of_wrong_dtype():
    x = tf.placeholder(tf.int32, [2], name="i")
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="Cannot feed value of dtype float64 for Tensor 'i:0', which has dtype "
                                            "int32"):
            sess.run(x, {x: np.array([1.5, 2.5])})
        # a safe conversion is accepted, as TF does
        np.testing.assert_array_equal(sess.run(x, {x: np.array([1, 2], np.int64)}), [1, 2])


def test_uninitialized_variable():
    v = tf.Variable(tf.zeros([2]), name="v")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="Attempting to use uninitialized value v"):
            sess.run(v + 1.0)


def test_fetching_a_name_that_does_not_exist():
    tf.constant(1.0, name="c")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="Fetch argument 'nope:0' cannot be interpreted as a Tensor"):
            sess.run("nope:0")
        with pytest.raises(TypeError, match="Fetch argument 3 has invalid type"):
            sess.run(3)


def test_fetching_a_tensor_of_another_graph():
    g = tf.Graph()
    with g.as_default():
        other = tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="is not an element of this graph"):
            sess.run(other)


def test_cycle_made_with_control_dependencies():
    a = tf.constant(1.0, name="a")
    b = tf.identity(a, name="b")
    c = tf.identity(b, name="c")
    b.op._add_control_input(c.op)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Graph is invalid, contains a cycle with 2 nodes, "
                                                                 "including: b, c"):
            sess.run(c)


def test_runtime_shape_error_names_the_op():
    x = tf.placeholder(tf.float32, [None, None], name="x")
    y = tf.placeholder(tf.float32, [None, None], name="y")
    product = tf.matmul(x, y, name="product")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="product") as info:
            sess.run(product, {x: np.ones((2, 3)), y: np.ones((4, 2))})
    assert info.value.op is product.op


def test_failed_run_leaves_variables_unchanged():
    v = tf.Variable(np.array([1.0, 2.0], np.float32), name="v")
    w = tf.Variable(np.array([5.0], np.float32), name="w")
    x = tf.placeholder(tf.float32, [None, None])
    update_v = tf.assign_add(v, [10.0, 10.0])
    with tf.control_dependencies([update_v]):
        bad = tf.matmul(x, x)  # fails at run time for a non-square feed
        update_w = tf.assign_add(w, tf.reduce_sum(bad, axis=[0, 1], keepdims=False)[None])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(update_w, {x: np.ones((2, 3))})
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(w), [5.0])
        sess.run(update_w, {x: np.ones((2, 2))})
        np.testing.assert_array_equal(sess.run(v), [11.0, 12.0])
        np.testing.assert_array_equal(sess.run(w), [13.0])


def test_op_error_hierarchy_and_codes():
    assert issubclass(tf.errors.InvalidArgumentError, tf.errors.OpError)
    error = tf.errors.FailedPreconditionError(None, None, "msg")
    assert error.error_code == tf.errors.FAILED_PRECONDITION
    assert tf.errors.exception_type_from_error_code(tf.errors.ABORTED) is tf.errors.AbortedError
