"""Kernels that remember per-shape work across steps (``Reshape``'s checked sizes, ``BiasAddGrad``'s ones
vector, reductions' axes read with ``tolist``) give, step after step and shape after shape, what they give
on a first call: numpy's values and TF's errors (wording as TF 2.21's ``ReshapeOp``, recorded in
``test_value_validation.py``)."""

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors
from dfcore.ops.array_ops import RESHAPES_KEPT
from dfcore.ops.op_util import apply_op1


def test_reshape_checks_each_new_pair_of_input_shape_and_sizes():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, None, name="x")
        shape = tf.placeholder(tf.int32, [None], name="shape")
        y = tf.reshape(x, shape, name="r")
    six = np.arange(6, dtype=np.float32)
    with tf.Session(graph=graph) as sess:
        for _ in range(3):  # a pair that passed is remembered: same answer every step
            np.testing.assert_array_equal(sess.run(y, {x: six, shape: [2, -1]}), six.reshape(2, 3))
        with pytest.raises(errors.InvalidArgumentError, match="tensor with 8 values, but the requested shape "
                                                              "requires a multiple of 3"):
            sess.run(y, {x: np.zeros(8, np.float32), shape: [-1, 3]})
        with pytest.raises(errors.InvalidArgumentError, match="tensor with 6 values, but the requested shape has 4"):
            sess.run(y, {x: six, shape: [2, 2]})
        with pytest.raises(errors.InvalidArgumentError, match="Only one input size may be -1, not both 0 and 1"):
            sess.run(y, {x: six, shape: [-1, -1]})
        with pytest.raises(errors.InvalidArgumentError, match="tensor with 8 values"):  # the same sizes, new shape
            sess.run(y, {x: np.zeros(8, np.float32), shape: [2, -1, 3]})
        for rows in range(1, RESHAPES_KEPT + 3):  # past the pairs kept: still checked, still right
            data = np.arange(rows * 2, dtype=np.float32)
            np.testing.assert_array_equal(sess.run(y, {x: data, shape: [rows, 2]}), data.reshape(rows, 2))
        with pytest.raises(errors.InvalidArgumentError, match="requested shape has 40"):
            sess.run(y, {x: six, shape: [20, 2]})


def test_bias_add_grad_and_sum_over_changing_batches_equal_numpy():
    graph = tf.Graph()
    with graph.as_default():
        g = tf.placeholder(tf.float32, [None, 3, 4], name="g")
        axes = tf.placeholder(tf.int32, None, name="axes")
        bias_grad = apply_op1("BiasAddGrad", [g], {"data_format": "NHWC"})
        total = tf.reduce_sum(g, axes)
    rng = np.random.default_rng(0)
    with tf.Session(graph=graph) as sess:
        for batch in (2, 5, 2, 7, 1, 9, 2):  # more row counts than the ones vectors kept
            value = rng.standard_normal((batch, 3, 4)).astype(np.float32)
            got_bias, got_total = sess.run([bias_grad, total], {g: value, axes: [[0], [2]]})
            np.testing.assert_allclose(got_bias, value.sum((0, 1)), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got_total, value.sum((0, 2)), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(sess.run(total, {g: value, axes: 1}), value.sum(1), rtol=1e-5, atol=1e-6)
