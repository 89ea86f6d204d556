"""Values that do not fit, shapes that cannot be, names TF refuses: a clear error, never a silent wrap.

References: numpy's ``np.iinfo`` ranges (what fits an integer dtype); TF's ``ReshapeOp`` checks
(``core/kernels/reshape_op.h``: "Only one input size may be -1, not both 0 and 1") and its
``_VALID_OP_NAME_REGEX`` (``python/framework/ops.py``: "'a b!' is not a valid node name").
"""

import numpy as np
import pytest

import dfcore as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


# -- integers that do not fit their dtype ----------------------------------------------------
@pytest.mark.parametrize("value, dtype, shown", [
    (2**40, tf.int32, "Python int 1099511627776"),
    ([3e9], tf.int32, "float64 value 3000000000.0"),
    (-1, tf.uint8, "Python int -1"),
    (256, tf.uint8, "Python int 256"),
    (np.array([1, 2**15]), tf.int16, "int64 value 32768"),
    (-129, tf.int8, "Python int -129"),
    (2**70, tf.int64, "Python int 1180591620717411303424"),
    (np.int64(2**40), tf.int32, "int64 value 1099511627776"),
])
def test_constant_refuses_integers_outside_its_dtype(value, dtype, shown):
    info = np.iinfo(dtype.as_numpy_dtype)
    with pytest.raises(ValueError, match=rf"Can't convert {shown} to {dtype.name} \(op 'Const'\): it is outside "
                                         rf"{dtype.name}'s range \[{info.min}, {info.max}\]"):
        tf.constant(value, dtype=dtype)


@pytest.mark.parametrize("value, dtype", [([1, -2, 3], tf.int8), (255, tf.uint8), (2**31 - 1, tf.int32),
                                          (-(2**31), tf.int32), ([2.0, -7.0], tf.int64), (np.arange(4), tf.int16)])
def test_constant_keeps_integers_that_fit(value, dtype):
    with tf.Session() as sess:
        got = sess.run(tf.constant(value, dtype=dtype))
    assert got.dtype == dtype.as_numpy_dtype
    np.testing.assert_array_equal(got, np.asarray(value))


@pytest.mark.parametrize("value", [2**40, np.int64(2**40), np.array([1, -(2**31) - 1])])
def test_feeding_an_integer_that_does_not_fit_the_placeholder_raises(value):
    x = tf.placeholder(tf.int32, None, name="x")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"to int32 for Tensor 'x:0': it is outside int32's range"):
            sess.run(x, {x: value})
        assert sess.run(x, {x: np.int64(7)}) == 7  # in range: converted as before


def test_feeding_a_negative_value_to_an_unsigned_placeholder_raises():
    x = tf.placeholder(tf.uint8, [2], name="pixels")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"int64 value -1 to uint8 for Tensor 'pixels:0'"):
            sess.run(x, {x: np.array([3, -1])})
        np.testing.assert_array_equal(sess.run(x, {x: np.array([3, 255])}), [3, 255])


# -- reshape ---------------------------------------------------------------------------------
def test_reshape_with_two_unknown_sizes_fails_at_construction():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Only one input size may be -1, not both 0 and 2"):
        tf.reshape(tf.zeros([6]), [-1, 3, -1])


def test_reshape_with_a_negative_size_fails_at_construction():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Size 1 must be non-negative, not -3"):
        tf.reshape(tf.zeros([6]), [2, -3])


@pytest.mark.parametrize("target, needed", [([-1, 4], 4), ([4, 2], 8)])
def test_reshape_to_sizes_that_do_not_divide_fails_at_construction(target, needed):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=rf"Cannot reshape a tensor with 6 elements to shape \[{target[0]},{target[1]}\] "
                             rf"\({needed} elements\)"):
        tf.reshape(tf.zeros([6]), target)


def test_reshape_with_two_unknown_sizes_fed_at_run_time_fails_in_the_kernel():
    shape = tf.placeholder(tf.int32, [2])
    reshaped = tf.reshape(tf.zeros([6]), shape)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Only one input size may be -1, not both 0 and 1"):
            sess.run(reshaped, {shape: [-1, -1]})
        assert sess.run(reshaped, {shape: [-1, 3]}).shape == (2, 3)


# -- op names --------------------------------------------------------------------------------
@pytest.mark.parametrize("name, shown", [("a b!/", "a b!"), ("a b", "a b"), ("_hidden", "_hidden"), ("x:0", "x:0"),
                                         ("-minus", "-minus")])
def test_op_names_tf_refuses_raise(name, shown):
    with pytest.raises(ValueError, match=f"'{shown}' is not a valid node name"):
        tf.constant(1.0, name=name)


@pytest.mark.parametrize("name", ["a", "layer1/w", "x.y", "0th", "a-b_c>d"])
def test_op_names_tf_accepts_work(name):
    assert tf.constant(1.0, name=name).op.name == name
