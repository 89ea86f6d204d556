"""Values that do not fit, shapes that cannot be, names TF refuses: a clear error, never a silent wrap.

References (TF 1.x): ``python/framework/tensor_util.py`` (``make_tensor_proto``: "Expected int32, got 2.5
of type 'float' instead."), ``python/client/session.py`` (feeds: "Type of feed value ... is not compatible
with Tensor type ..."), ``core/ops/array_ops.cc`` and ``core/kernels/reshape_op.h`` (Reshape's shape
function and kernel), ``python/framework/ops.py`` (``_VALID_OP_NAME_REGEX``, ``_VALID_SCOPE_NAME_REGEX``).
numpy's ``np.iinfo`` gives the ranges.
"""

import numpy as np
import pytest

import dfcore as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def _range(dtype):
    info = np.iinfo(dtype.as_numpy_dtype)
    return rf"\[{info.min}, {info.max}\]"


# -- constants: integers that do not fit their dtype ----------------------------------------
@pytest.mark.parametrize("value, dtype, shown", [
    (2**40, tf.int32, "1099511627776 of type 'int'"),
    ([3e9], tf.int32, "3000000000.0 of type 'float'"),
    (-1, tf.uint8, "-1 of type 'int'"),
    (256, tf.uint8, "256 of type 'int'"),
    (np.array([1, 2**15]), tf.int16, "32768 of type 'int64'"),
    (-129, tf.int8, "-129 of type 'int'"),
    (2**70, tf.int64, "1180591620717411303424 of type 'int'"),
    (np.int64(2**40), tf.int32, "1099511627776 of type 'int64'"),
    (np.array([-1], np.int8), tf.uint8, "-1 of type 'int8'"),
    (np.array([200], np.uint8), tf.int8, "200 of type 'uint8'"),
    ([1.0, float("inf")], tf.int32, "inf of type 'float'"),
])
def test_constant_refuses_integers_outside_its_dtype(value, dtype, shown):
    with pytest.raises(TypeError, match=rf"Expected {dtype.name}, got {shown} instead: {dtype.name} holds integers in "
                                        rf"{_range(dtype)} \(op 'Const'\)"):
        tf.constant(value, dtype=dtype)


def test_a_variable_initial_value_that_does_not_fit_is_refused():
    with pytest.raises(TypeError, match="Expected int32, got 1099511627776 of type 'int' instead"):
        tf.Variable(2**40, dtype=tf.int32)


@pytest.mark.parametrize("value", [2**70, [1, 2**70]])
def test_a_python_int_beyond_int64_is_refused_when_no_dtype_is_given(value):
    with pytest.raises(TypeError, match=r"Failed to convert object of type <class '(int|list)'> to Tensor"):
        tf.constant(value)


@pytest.mark.parametrize("value, dtype", [([1, -2, 3], tf.int8), (255, tf.uint8), (2**31 - 1, tf.int32),
                                          (-(2**31), tf.int32), ([2.0, -7.0], tf.int64), (np.arange(4), tf.int16),
                                          ([True, False], tf.bool), (np.array([1, 2], np.uint8), tf.uint8),
                                          (np.array([0.5, -2.25]), tf.float32), (3, tf.float16)])
def test_constant_keeps_values_that_fit(value, dtype):
    with tf.Session() as sess:
        got = sess.run(tf.constant(value, dtype=dtype))
    assert got.dtype == dtype.as_numpy_dtype
    np.testing.assert_array_equal(got, np.asarray(value))


def test_a_python_int_beyond_int32_without_dtype_becomes_int64():
    assert tf.constant(2**31).dtype == tf.int64


# -- feeds ------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, shown", [(2**40, "1099511627776 with type <class 'int'>"),
                                          (np.int64(2**40), "1099511627776 with type <class 'numpy.int64'>"),
                                          (np.array([1, -(2**31) - 1]), "-2147483649 with type <class 'numpy.int64'>"),
                                          ([7, 2**33], "8589934592 with type <class 'int'>")])
def test_feeding_an_integer_that_does_not_fit_the_placeholder_raises(value, shown):
    x = tf.placeholder(tf.int32, None, name="x")
    with tf.Session() as sess:
        with pytest.raises(TypeError, match=rf"Type of feed value {shown} is not compatible with Tensor type "
                                            rf"<class 'numpy.int32'>. Try explicitly setting the type of the feed "
                                            rf"tensor to a larger type \(e.g. int64\). \(Tensor 'x:0' holds int32 "
                                            rf"values in {_range(tf.int32)}.\)"):
            sess.run(x, {x: value})
        assert sess.run(x, {x: np.int64(7)}) == 7  # in range: converted as before


def test_feeding_a_negative_value_to_an_unsigned_placeholder_raises():
    x = tf.placeholder(tf.uint8, [2], name="pixels")
    with tf.Session() as sess:
        with pytest.raises(TypeError, match=r"feed value -1 with type <class 'numpy.int64'> is not compatible with "
                                            r"Tensor type <class 'numpy.uint8'>.* 'pixels:0' holds uint8 values in "
                                            r"\[0, 255\]"):
            sess.run(x, {x: np.array([3, -1])})
        np.testing.assert_array_equal(sess.run(x, {x: np.array([3, 255])}), [3, 255])


def test_feeds_that_fit_keep_working():
    ints, floats, flags = tf.placeholder(tf.int8, [3]), tf.placeholder(tf.float32, [2]), tf.placeholder(tf.bool, [])
    with tf.Session() as sess:
        got_ints, got_floats, got_flag = sess.run([ints, floats, flags], {ints: [-128, 0, 127],
                                                                          floats: np.array([1.5, -2.0]), flags: True})
    np.testing.assert_array_equal(got_ints, np.array([-128, 0, 127], np.int8))
    np.testing.assert_array_equal(got_floats, np.array([1.5, -2.0], np.float32))
    assert got_flag


# -- reshape ---------------------------------------------------------------------------------
def test_reshape_with_two_unknown_sizes_fails_at_construction():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Only one input size may be -1, not both 0 and 2"):
        tf.reshape(tf.zeros([6]), [-1, 3, -1])


def test_reshape_with_a_negative_size_fails_at_construction():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Size 1 must be non-negative, not -3"):
        tf.reshape(tf.zeros([6]), [2, -3])


def test_reshape_to_sizes_that_do_not_divide_fails_at_construction():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Dimension size must be evenly divisible by 4 but is 6 for 'Reshape' \(op: 'Reshape'\)"):
        tf.reshape(tf.zeros([6]), [-1, 4])


def test_reshape_to_another_element_count_fails_at_construction():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Cannot reshape a tensor with 6 elements to shape \[4,2\] \(8 elements\)"):
        tf.reshape(tf.zeros([6]), [4, 2])


@pytest.mark.parametrize("sizes, message", [
    ([-1, -1], "Only one input size may be -1, not both 0 and 1"),
    ([-1, 4], "Input to reshape is a tensor with 6 values, but the requested shape requires a multiple of 4"),
    ([4, 2], "Input to reshape is a tensor with 6 values, but the requested shape has 8"),
    ([0, -1], ("Reshape cannot infer the missing input size for an empty tensor unless all specified input sizes "
               "are non-zero")),
])
def test_reshape_to_sizes_fed_at_run_time_fails_in_the_kernel(sizes, message):
    shape = tf.placeholder(tf.int32, [2])
    reshaped = tf.reshape(tf.zeros([6]), shape)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(reshaped, {shape: sizes})
        assert sess.run(reshaped, {shape: [-1, 3]}).shape == (2, 3)


# -- op and scope names ----------------------------------------------------------------------
@pytest.mark.parametrize("name, shown", [("a b!/", "a b!"), ("a b", "a b"), ("_hidden", "_hidden"), ("x:0", "x:0"),
                                         ("-minus", "-minus")])
def test_op_names_tf_refuses_raise(name, shown):
    with pytest.raises(ValueError, match=f"'{shown}' is not a valid node name"):
        tf.constant(1.0, name=name)


@pytest.mark.parametrize("name", ["a", "layer1/w", "x.y", "0th", "a-b_c>d"])
def test_op_names_tf_accepts_work(name):
    assert tf.constant(1.0, name=name).op.name == name


@pytest.mark.parametrize("name", ["a b", "_private", "_private/", "x:0/"])
def test_scope_names_tf_refuses_at_the_root_raise(name):
    with pytest.raises(ValueError, match=f"'{name}' is not a valid scope name"), tf.name_scope(name):
        pass


def test_a_nested_scope_may_start_with_an_underscore_as_in_tf():
    with tf.name_scope("outer"):
        with tf.name_scope("_inner"):
            assert tf.constant(1.0, name="c").op.name == "outer/_inner/c"
        with pytest.raises(ValueError, match="'a b' is not a valid scope name"), tf.name_scope("a b"):
            pass
