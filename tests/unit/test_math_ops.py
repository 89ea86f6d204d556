"""Elementwise math ops, comparisons, logic, operators, range/cumsum/clip against numpy; their
gradients against central finite differences (float64); TF1's names, shapes, dtype errors and wording."""

import warnings

import numpy as np
import pytest
from gradcheck import GRAD_TOL, grad_error

import dfcore as tf
from dfcore import errors
from dfcore.ops import math_ops

RNG = np.random.RandomState(42)


# -- unary --------------------------------------------------------------------------
POSITIVE = RNG.uniform(0.5, 2.0, (2, 3))
ANY = RNG.uniform(-2.0, 2.0, (2, 3))
UNARY = [  # (tf fn, numpy reference, test point, differentiable)
    (tf.negative, np.negative, ANY, True),
    (tf.square, np.square, ANY, True),
    (tf.sqrt, np.sqrt, POSITIVE, True),
    (tf.rsqrt, lambda x: 1 / np.sqrt(x), POSITIVE, True),
    (tf.exp, np.exp, ANY, True),
    (tf.log, np.log, POSITIVE, True),
    (tf.log1p, np.log1p, POSITIVE, True),
    (tf.abs, np.abs, ANY, True),
    (tf.reciprocal, np.reciprocal, POSITIVE, True),
    (tf.sigmoid, lambda x: 1 / (1 + np.exp(-x)), ANY, True),
    (tf.tanh, np.tanh, ANY, True),
    (tf.sign, np.sign, ANY, False),
    (tf.floor, np.floor, ANY, False),
    (tf.ceil, np.ceil, ANY, False),
    (tf.round, np.round, ANY, False),
]


@pytest.mark.parametrize("fn,ref,x0,_", UNARY, ids=[u[0].__name__ for u in UNARY])
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_unary_values_dtype_and_unknown_dims(sess, fn, ref, x0, _, dtype):
    x = tf.placeholder(dtype, [None, 3])
    y = fn(x)
    assert y.dtype == dtype and y.shape.as_list() == [None, 3]
    out = sess.run(y, {x: x0})
    assert out.dtype == dtype.as_numpy_dtype
    np.testing.assert_allclose(out, ref(x0.astype(dtype.as_numpy_dtype)), rtol=1e-6)


@pytest.mark.parametrize("fn,x0", [(u[0], u[2]) for u in UNARY if u[3]], ids=[u[0].__name__ for u in UNARY if u[3]])
def test_unary_gradients_match_finite_differences(sess, fn, x0):
    x = tf.placeholder(tf.float64, [2, 3])
    assert grad_error(x, fn(x), x0) < GRAD_TOL


def test_unary_op_types_and_default_names(sess):
    x = tf.constant([1.0])
    expected = {tf.square: "Square", tf.sqrt: "Sqrt", tf.rsqrt: "Rsqrt", tf.exp: "Exp", tf.log: "Log",
                tf.log1p: "Log1p", tf.abs: "Abs", tf.sign: "Sign", tf.reciprocal: "Reciprocal",
                tf.sigmoid: "Sigmoid", tf.tanh: "Tanh", tf.floor: "Floor", tf.ceil: "Ceil", tf.round: "Round"}
    for fn, op_type in expected.items():
        y = fn(x)
        assert (y.op.type, y.op.name) == (op_type, op_type)
    assert tf.math.sigmoid is tf.sigmoid and tf.math.log1p is tf.log1p


def test_sign_gradient_is_zero_and_rounding_ops_have_none(sess):
    x = tf.placeholder(tf.float64, [3])
    assert sess.run(tf.gradients(tf.sign(x), x)[0], {x: [-1.0, 0.0, 2.0]}).tolist() == [0, 0, 0]
    for fn in (tf.floor, tf.ceil, tf.round):
        assert tf.gradients(fn(x), x) == [None]


def test_round_is_half_to_even_and_integers_work(sess):
    assert sess.run(tf.round([0.5, 1.5, 2.5, -0.5, -1.5])).tolist() == [0, 2, 2, 0, -2]
    assert sess.run(tf.abs(tf.constant([-3, 4]))).tolist() == [3, 4]
    assert sess.run(tf.square(tf.constant([-3, 4], tf.int64))).dtype == np.int64


def test_sigmoid_and_log_are_silent_at_extremes(sess):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = sess.run(tf.sigmoid(tf.constant([-1000.0, 0.0, 1000.0])))
        logs = sess.run(tf.log(tf.constant([0.0, -1.0])))
    assert out.tolist() == [0.0, 0.5, 1.0]
    assert logs[0] == -np.inf and np.isnan(logs[1])


def test_float_only_unary_ops_reject_integers(sess):
    with pytest.raises(TypeError, match="Value passed to parameter 'x' has DataType int32 not in list of allowed "
                                        "values: float16, float32, float64"):
        tf.sqrt(tf.constant([4]))


# -- binary -------------------------------------------------------------------------
BINARY = [  # (tf fn, numpy reference, x point, y point)
    (tf.maximum, np.maximum, ANY, RNG.uniform(-2, 2, (3,))),
    (tf.minimum, np.minimum, ANY, RNG.uniform(-2, 2, (2, 1))),
    (tf.pow, np.power, POSITIVE, RNG.uniform(-2, 2, (3,))),
    (tf.squared_difference, lambda x, y: (x - y) ** 2, ANY, RNG.uniform(-2, 2, (1, 3))),
    (tf.floormod, np.mod, ANY, RNG.uniform(0.6, 0.9, (2, 1))),
    (tf.add, np.add, ANY, RNG.uniform(-2, 2, (3,))),
    (tf.subtract, np.subtract, ANY, RNG.uniform(-2, 2, (2, 1))),
    (tf.multiply, np.multiply, ANY, RNG.uniform(-2, 2, (3,))),
    (tf.divide, np.divide, ANY, RNG.uniform(1, 2, (2, 1))),
]


@pytest.mark.parametrize("fn,ref,x0,y0", BINARY, ids=[b[0].__name__ for b in BINARY])
def test_binary_values_broadcast(sess, fn, ref, x0, y0):
    x = tf.placeholder(tf.float64, [None, 3])
    y = tf.placeholder(tf.float64, y0.shape)
    z = fn(x, y)
    assert z.shape.as_list() == ([2, 3] if y0.shape == (2, 1) else [None, 3])
    np.testing.assert_allclose(sess.run(z, {x: x0, y: y0}), ref(x0, y0), rtol=1e-12)


@pytest.mark.parametrize("fn,ref,x0,y0", BINARY, ids=[b[0].__name__ for b in BINARY])
def test_binary_gradients_sum_over_broadcast_axes(sess, fn, ref, x0, y0):
    x = tf.placeholder(tf.float64, x0.shape)
    y = tf.placeholder(tf.float64, y0.shape)
    z = fn(x, y)
    assert tf.test.compute_gradient_error(x, list(x0.shape), z, [2, 3], x0, delta=1e-5,
                                          extra_feed_dict={y: y0}) < GRAD_TOL
    assert tf.test.compute_gradient_error(y, list(y0.shape), z, [2, 3], y0, delta=1e-5,
                                          extra_feed_dict={x: x0}) < GRAD_TOL


def test_binary_gradients_with_unknown_dims(sess):
    x = tf.placeholder(tf.float64, [None, 3])
    y = tf.placeholder(tf.float64, [None])
    z = tf.pow(x, y) + tf.maximum(x, y) * tf.squared_difference(y, x)
    x0, y0 = POSITIVE, RNG.uniform(-1, 1, 3)
    gx, gy = tf.gradients(z, [x, y])
    assert gy.shape.as_list() == [None]
    assert tf.test.compute_gradient_error(y, [3], z, [2, 3], y0, delta=1e-5, extra_feed_dict={x: x0}) < GRAD_TOL
    assert tf.test.compute_gradient_error(x, [2, 3], z, [2, 3], x0, delta=1e-5, extra_feed_dict={y: y0}) < GRAD_TOL


@pytest.mark.parametrize("fn,x_grad,y_grad", [(tf.maximum, 1.0, 0.0), (tf.minimum, 1.0, 0.0)])
def test_maximum_minimum_ties_send_gradient_to_x(sess, fn, x_grad, y_grad):
    x, y = tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0])
    gx, gy = sess.run(tf.gradients(fn(x, y), [x, y]))
    assert gx.tolist() == [x_grad] * 2 and gy.tolist() == [y_grad] * 2


def test_pow_gradient_wrt_exponent_is_zero_where_base_not_positive(sess):
    x, y = tf.constant([0.0, -2.0, 2.0]), tf.constant([2.0, 2.0, 2.0])
    gy = sess.run(tf.gradients(tf.pow(x, y), y)[0])
    np.testing.assert_allclose(gy, [0.0, 0.0, 4 * np.log(2.0)], rtol=1e-6)


def test_floor_division_and_modulo_follow_python(sess):
    a = np.array([7, -7, 7, -7], np.int32)
    b = np.array([2, 2, -2, -2], np.int32)
    q = tf.floordiv(a, b)
    assert (q.op.type, q.op.name) == ("FloorDiv", "floordiv")
    assert sess.run(q).tolist() == (a // b).tolist()
    assert sess.run(tf.floormod(a, b)).tolist() == (a % b).tolist()
    assert sess.run(tf.mod(-7.5, 2.0)) == pytest.approx(-7.5 % 2.0)
    assert tf.mod(a, b).op.type == "FloorMod"
    x = tf.placeholder(tf.float32, [2])
    assert tf.gradients(tf.floordiv(x, 2.0), x) == [None]


def test_integer_division_by_zero_fails_at_run_time(sess):
    with pytest.raises(errors.InvalidArgumentError, match="Integer division by zero"):
        sess.run(tf.floordiv(tf.constant([1, 2]), tf.constant([1, 0])))
    with pytest.raises(errors.InvalidArgumentError, match="Integer division by zero"):
        sess.run(tf.floormod(tf.constant([1, 2]), tf.constant([0, 1])))


def test_true_division_casts_integers_as_tf(sess):
    small = tf.truediv(tf.constant([1], tf.int16), tf.constant([2], tf.int16))
    assert small.dtype == tf.float32 and small.op.name == "truediv"
    assert tf.divide(tf.constant([1, 2]), tf.constant([2, 2])).dtype == tf.float64
    assert sess.run(small).tolist() == [0.5]
    assert sess.run(tf.div(tf.constant([-7]), tf.constant([2]))).tolist() == [-4]
    assert sess.run(tf.div(-7.0, 2.0)) == -3.5


def test_binary_shape_error_in_tf_wording(sess):
    with pytest.raises(errors.InvalidArgumentError) as info:
        tf.maximum(tf.zeros([2, 3]), tf.zeros([4]))
    assert str(info.value) == ("Dimensions must be equal, but are 3 and 4 for 'Maximum' (op: 'Maximum') with "
                               "input shapes: [2,3], [4].")
    assert tf.add(tf.zeros([2, 1, 3]), tf.zeros([4, 1])).shape.as_list() == [2, 4, 3]


def test_binary_dtype_errors_name_the_op(sess):
    with pytest.raises(TypeError, match="Input 'y' of 'Add' Op has type float64 that does not match type float32"):
        tf.add(tf.constant(1.0), tf.constant(1.0, tf.float64))
    with pytest.raises(TypeError, match="Input 'y' of 'Pow' Op has type int32"):
        tf.pow(tf.constant(1.0), tf.constant(1))
    with pytest.raises(TypeError, match="parameter 'x' has DataType bool not in list"):
        tf.maximum(tf.constant(True), tf.constant(False))


# -- comparisons and logic ------------------------------------------------------
@pytest.mark.parametrize("fn,ref,op_type", [
    (tf.greater, np.greater, "Greater"), (tf.greater_equal, np.greater_equal, "GreaterEqual"),
    (tf.less, np.less, "Less"), (tf.less_equal, np.less_equal, "LessEqual"),
    (tf.equal, np.equal, "Equal"), (tf.not_equal, np.not_equal, "NotEqual")])
def test_comparisons_broadcast_to_bool(sess, fn, ref, op_type):
    x = tf.placeholder(tf.int32, [None, 3])
    x0, y0 = np.array([[1, 2, 3], [3, 2, 1]]), np.array([2, 2, 2])
    z = fn(x, y0)
    assert (z.op.type, z.dtype, z.shape.as_list()) == (op_type, tf.bool, [None, 3])
    assert sess.run(z, {x: x0}).tolist() == ref(x0, y0).tolist()
    f = tf.placeholder(tf.float32, [3])
    assert tf.gradients(tf.cast(fn(f, 1.0), tf.float32), f) == [None]


def test_equal_accepts_bool_and_strings(sess):
    assert sess.run(tf.equal([True, False], True)).tolist() == [True, False]
    assert sess.run(tf.not_equal(tf.constant(["a", "b"]), "a")).tolist() == [False, True]


@pytest.mark.parametrize("fn,ref", [(tf.logical_and, np.logical_and), (tf.logical_or, np.logical_or),
                                    (tf.logical_xor, np.logical_xor)])
def test_logical_ops(sess, fn, ref):
    a = np.array([[True, False], [True, True]])
    b = np.array([True, False])
    assert sess.run(fn(a, b)).tolist() == ref(a, b).tolist()
    assert sess.run(tf.logical_not(a)).tolist() == (~a).tolist()
    with pytest.raises(TypeError, match="DataType float32 not in list of allowed values: bool"):
        fn(tf.constant(1.0), tf.constant(0.0))


def test_logical_xor_is_built_as_tf1(sess):
    z = tf.logical_xor(tf.constant(True), tf.constant(False))
    assert (z.op.type, z.op.name) == ("LogicalAnd", "LogicalXor")


# -- operators ------------------------------------------------------------------
def test_tensor_operators_build_tf1_ops(sess):
    x = tf.constant([1.0, 4.0])
    cases = {x + 1: ("Add", "add", [2, 5]), 1 - x: ("Sub", "sub", [0, -3]), x * 2: ("Mul", "mul", [2, 8]),
             2 / x: ("RealDiv", "truediv", [2, 0.5]), x // 3: ("FloorDiv", "floordiv", [0, 1]),
             7 // x: ("FloorDiv", "floordiv", [7, 1]), x % 3: ("FloorMod", "mod", [1, 1]),
             9 % x: ("FloorMod", "mod", [0, 1]), x ** 2: ("Pow", "pow", [1, 16]), 2 ** x: ("Pow", "pow", [2, 16]),
             abs(-x): ("Abs", "Abs", [1, 4]), x < 2: ("Less", "Less", [True, False]),
             x <= 1: ("LessEqual", "LessEqual", [True, False]), x > 2: ("Greater", "Greater", [False, True]),
             x >= 4: ("GreaterEqual", "GreaterEqual", [False, True]), 3 > x: ("Less", "Less", [True, False])}
    for tensor, (op_type, name, value) in cases.items():
        assert tensor.op.type == op_type
        assert tensor.op.name.split("_")[0] == name
        assert sess.run(tensor).tolist() == value


def test_bool_operators_and_identity_equality(sess):
    a, b = tf.constant([True, False]), tf.constant([True, True])
    assert [v.tolist() for v in sess.run([a & b, a | b, a ^ b, ~a, True & a, False | a, True ^ a])] == [
        [True, False], [True, True], [False, True], [False, True], [True, False], [True, False], [False, True]]
    assert (a == a) is True and (a == b) is False and (a != b) is True
    with pytest.raises(TypeError, match="allowed values: bool"):
        tf.constant(1.0) & tf.constant(2.0)


def test_operators_forward_to_variables(sess):
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    x = tf.constant([[1.0, 0.0]])
    results = [w * 2, 2 * w, x @ w, w @ tf.constant([[1.0], [1.0]]), w < 2, -w, abs(-w), w ** 2, 1 - w, w / 2,
               w // 2, w % 2]
    sess.run(tf.global_variables_initializer())
    values = sess.run(results)
    w0 = np.array([[1.0, 2.0], [3.0, 4.0]])
    expected = [w0 * 2, 2 * w0, [[1, 2]], [[3], [7]], w0 < 2, -w0, w0, w0 ** 2, 1 - w0, w0 / 2, w0 // 2, w0 % 2]
    for got, want in zip(values, expected):
        np.testing.assert_allclose(got, want)
    assert (w == w) is True
    from_numpy = np.array([2.0, 3.0], np.float32) * w
    assert from_numpy.op.type == "Mul" and sess.run(from_numpy).tolist() == [[2, 6], [6, 12]]
    b = tf.Variable([True, False])
    sess.run(b.initializer)
    assert sess.run(~b).tolist() == [False, True]


# -- range, cumsum, clip, scalar_mul, accumulate_n --------------------------------
def test_range(sess):
    assert tf.range is math_ops.range_ and "range" not in vars(math_ops)
    r = tf.range(5)
    assert (r.op.type, r.op.name, r.dtype, r.shape.as_list()) == ("Range", "range", tf.int32, [5])
    assert sess.run(tf.range(1, 10, 3)).tolist() == [1, 4, 7]
    f = tf.range(0, 1, 0.25)
    assert f.dtype == tf.float32 and sess.run(f).tolist() == [0, 0.25, 0.5, 0.75]
    assert tf.range(3, dtype=tf.float64).dtype == tf.float64
    n = tf.placeholder(tf.int32, [])
    assert sess.run(tf.range(n), {n: 3}).tolist() == [0, 1, 2]
    with pytest.raises(errors.InvalidArgumentError, match="Requires delta != 0"):
        tf.range(0, 3, 0)
    with pytest.raises(errors.InvalidArgumentError, match="Requires start <= limit when delta > 0: 5/2"):
        sess.run(tf.range(n, 2), {n: 5})


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(sess, exclusive, reverse):
    x0 = RNG.standard_normal((2, 3))
    x = tf.placeholder(tf.float64, [2, 3])
    y = tf.cumsum(x, axis=1, exclusive=exclusive, reverse=reverse)
    flipped = x0[:, ::-1] if reverse else x0
    ref = np.cumsum(flipped, 1) - (flipped if exclusive else 0)
    np.testing.assert_allclose(sess.run(y, {x: x0}), ref[:, ::-1] if reverse else ref, atol=1e-12)
    assert grad_error(x, y, x0) < GRAD_TOL


def test_clip_by_value(sess):
    x = tf.placeholder(tf.float64, [4])
    y = tf.clip_by_value(x, -1.0, 1.0)
    assert (y.op.type, y.op.name) == ("Maximum", "clip_by_value")
    x0 = np.array([-2.0, -0.5, 0.5, 3.0])
    assert sess.run(y, {x: x0}).tolist() == [-1, -0.5, 0.5, 1]
    assert sess.run(tf.gradients(y, x)[0], {x: x0}).tolist() == [0, 1, 1, 0]
    assert grad_error(x, y, x0) < GRAD_TOL
    with pytest.raises(ValueError):
        tf.clip_by_value(tf.zeros([2]), 0.0, tf.ones([3, 2]))
    with pytest.raises(ValueError):
        tf.clip_by_value(tf.zeros([2]), tf.zeros([3, 2]), 1.0)


def test_scalar_mul_and_accumulate_n(sess):
    x = tf.placeholder(tf.float64, [2])
    y = tf.scalar_mul(3, x)
    assert y.op.type == "Mul" and sess.run(y, {x: [1.0, 2.0]}).tolist() == [3, 6]
    with pytest.raises(ValueError, match="Only scalar multiply works"):
        tf.scalar_mul([1.0, 2.0], x)
    s = tf.accumulate_n([x, x * 2, tf.constant([1.0, 1.0], tf.float64)])
    assert s.op.type == "AccumulateNV2" and sess.run(s, {x: [1.0, 2.0]}).tolist() == [4, 7]
    assert grad_error(x, s, np.array([1.0, 2.0])) < GRAD_TOL
