"""The small kernels' cheap backend calls (``Backend.reducer``/``reshape``/``multiply_mask``/``divide``, the numpy
backend's flat-index ``take_columns``/``add_to_columns``): the same bits as the plain numpy formula the kernels
computed before (``np.sum``, ``x[np.arange(n), c]``, ``g * astype(y > 0)``, ``x / y`` under ``np.errstate``),
on random values and edge cases (nan/inf, empty batches, float16/float64, keep_dims, negative and fed axes), no
numpy warning where TF is silent, TF's error texts, and the same values on ``array_api_strict``."""

import threading
import warnings

import numpy as np
import pytest
from _requirements import require_module

import dfcore as tf
from dfcore import backends
from dfcore.framework import registry
from dfcore.ops.op_util import apply_op1

NUMPY = backends.get("numpy")
FLOATS = [np.float16, np.float32, np.float64]
RNG = np.random.default_rng(32)


def _bits(a):
    """``a`` as unsigned integers of its width: equal bits, nan payloads and zero signs included."""
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(_bits(got), _bits(want))


def _kernel(op, backend=NUMPY):
    return registry.kernel(op.type, backend.name).build(op, backend)


def _quiet_errors():
    """numpy's float errors that warn by default (all but underflow) raised as exceptions: a leaked warning fails
    the test."""
    return np.errstate(divide="raise", over="raise", invalid="raise", under="ignore")


# -- sparse softmax cross-entropy -------------------------------------------------------------------------------
def _xent_reference(features, labels):
    """The kernel's formula before the backend calls (np.max/np.sum, fancy indexing with a fresh arange)."""
    with np.errstate(invalid="ignore"):
        shifted = features - np.max(features, axis=-1, keepdims=True)
        log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    rows = np.arange(features.shape[0])
    backprop = np.exp(log_probs)
    backprop[rows, labels] -= 1
    return -log_probs[rows, labels], backprop


def _xent_op(dtype, label_dtype=np.int32):
    with tf.Graph().as_default():
        logits = tf.placeholder(dtype, [None, None])
        labels = tf.placeholder(label_dtype, [None])
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits).op


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rows, classes", [(64, 10), (16, 10), (1, 1), (3, 1000), (0, 10)])
def test_sparse_xent_gives_the_plain_formula_bits(dtype, rows, classes):
    features = (RNG.standard_normal((rows, classes)) * 5).astype(dtype)
    labels = RNG.integers(0, classes, rows).astype(np.int32)
    loss, backprop = _kernel(_xent_op(dtype))(features, labels)
    want_loss, want_backprop = _xent_reference(features, labels)
    _same_bits(loss, want_loss)
    _same_bits(backprop, want_backprop)


def test_sparse_xent_of_non_finite_logits_is_silent_and_the_plain_bits():
    inf, nan = np.inf, np.nan
    features = np.array([[inf, 1, 2], [nan, 0, 0], [1, 2, 3], [-inf, 0, 1], [-inf] * 3, [-0.0, 0.0, -0.0]],
                        np.float32)
    labels = np.array([0, 1, 2, 1, 0, 1], np.int64)
    with _quiet_errors():
        loss, backprop = _kernel(_xent_op(np.float32, np.int64))(features, labels)
    want_loss, want_backprop = _xent_reference(features, labels)
    _same_bits(loss, want_loss)
    _same_bits(backprop, want_backprop)
    # TF 2.21 (tf.compat.v1 graph, float32): loss [nan nan 0.40760595 1.3132616 nan ...]
    assert np.isnan(loss[[0, 1, 4]]).all() and np.isfinite(loss[[2, 3]]).all()


def test_sparse_xent_out_kernel_is_silent_and_gives_the_plain_bits():
    from dfcore.runtime.allocator import Allocator

    op = _xent_op(np.float32)
    out = registry.out_kernel(op.type).factory(op)
    features = RNG.standard_normal((6, 4)).astype(np.float32)
    features[1, 2], features[3] = np.inf, -np.inf
    labels = RNG.integers(0, 4, 6).astype(np.int32)
    with _quiet_errors():
        got = out(Allocator("cpu"), features, labels)
    for got_one, want_one in zip(got, _xent_reference(features, labels)):
        _same_bits(got_one, want_one)


def test_sparse_xent_of_strided_logits_and_labels():
    features = RNG.standard_normal((10, 8)).astype(np.float32)
    labels = RNG.integers(0, 10, 16).astype(np.int32)
    strided, strided_labels = features.T, labels[::2]  # [8, 10], not C-contiguous
    loss, backprop = _kernel(_xent_op(np.float32))(strided, strided_labels)
    want_loss, want_backprop = _xent_reference(strided, strided_labels)
    _same_bits(loss, want_loss)
    _same_bits(backprop, want_backprop)


@pytest.mark.parametrize("bad, shown", [(10, 10), (-1, -1)])
def test_sparse_xent_label_out_of_range_keeps_tf_wording(bad, shown):
    labels = np.array([1, bad, 3], np.int32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=rf"Received a label value of {shown} which is outside the valid range of \[0, 10\)\.  "
                             rf"Label values: 1 {bad} 3"):
        _kernel(_xent_op(np.float32))(np.zeros((3, 10), np.float32), labels)


def test_sparse_xent_on_concurrent_threads_of_several_batch_sizes():
    op = _xent_op(np.float32)
    compute = _kernel(op)
    cases = [(RNG.standard_normal((n, 7)).astype(np.float32), RNG.integers(0, 7, n).astype(np.int32))
             for n in (3, 16, 17, 64) * 4]
    results: dict = {}

    def run(i):
        for _ in range(50):
            results[i] = compute(*cases[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, (features, labels) in enumerate(cases):
        want_loss, want_backprop = _xent_reference(features, labels)
        _same_bits(results[i][0], want_loss)
        _same_bits(results[i][1], want_backprop)


def test_row_indices_are_shared_read_only():
    x = np.zeros((5, 4), np.float32)
    NUMPY.add_to_columns(x, np.array([0, 3, 3, 1, 2]), 2.5)
    np.testing.assert_array_equal(np.nonzero(x), [[0, 1, 2, 3, 4], [0, 3, 3, 1, 2]])
    strided = np.zeros((4, 5), np.float32).T  # not contiguous: the 2-D index path, still in place
    assert NUMPY.add_to_columns(strided, np.array([1, 0, 3, 2, 0]), -1) is strided
    np.testing.assert_array_equal(np.nonzero(strided), [[0, 1, 2, 3, 4], [1, 0, 3, 2, 0]])
    from dfcore.backends.numpy_backend import _row_starts

    starts = _row_starts(5, 4)
    np.testing.assert_array_equal(starts, np.arange(5) * 4)
    assert _row_starts(5, 4) is starts and not starts.flags.writeable


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_and_dense_xent_are_the_plain_formula_and_silent(dtype):
    features = np.concatenate([RNG.standard_normal((6, 5)), [[np.inf, 0, 1, 2, 3], [-np.inf] * 5]]).astype(dtype)
    labels = np.abs(RNG.standard_normal(features.shape)).astype(dtype)
    with tf.Graph().as_default():
        x = tf.placeholder(dtype, [None, 5])
        softmax, log_softmax = tf.nn.softmax(x).op, tf.nn.log_softmax(x).op
        dense = tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.placeholder(dtype, [None, 5]), logits=x).op
    with np.errstate(all="ignore"):
        shifted = features - np.max(features, axis=-1, keepdims=True)
        want_log = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
        e = np.exp(features - np.max(features, axis=-1, keepdims=True))
        want_softmax = e / np.sum(e, axis=-1, keepdims=True)
        want_loss = -np.sum(labels * want_log, axis=1)
    with _quiet_errors():
        _same_bits(_kernel(log_softmax)(features), want_log)
        _same_bits(_kernel(softmax)(features), want_softmax)
        loss, backprop = _kernel(dense)(features, labels)
    _same_bits(loss, want_loss)
    _same_bits(backprop, np.exp(want_log) - labels)


# -- reductions ---------------------------------------------------------------------------------------------------
REDUCE = {"Sum": (tf.reduce_sum, np.sum), "Max": (tf.reduce_max, np.max), "Min": (tf.reduce_min, np.min),
          "Prod": (tf.reduce_prod, np.prod)}


@pytest.mark.parametrize("op_type", sorted(REDUCE))
@pytest.mark.parametrize("dtype", [*FLOATS, np.int32])
@pytest.mark.parametrize("axes", [[0], [-1], [1], [0, 2], [-3, -1], [], [2, 0, 1]])
@pytest.mark.parametrize("keep", [False, True])
def test_reductions_give_numpy_bits_with_fed_axes(op_type, dtype, axes, keep):
    build, reference = REDUCE[op_type]
    x = (RNG.standard_normal((4, 3, 5)) * 3).astype(dtype)
    x.flat[[2, 17]] = [np.nan, -np.inf] if np.dtype(dtype).kind == "f" else [7, -9]
    with tf.Graph().as_default():
        fed = tf.placeholder(tf.int32, [None])
        op = build(tf.placeholder(dtype, [4, 3, 5]), axis=fed, keepdims=keep).op
    with _quiet_errors() if op_type in ("Max", "Min") else np.errstate(over="ignore", invalid="ignore"):
        got = _kernel(op)(x, np.array(axes, np.int32))
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.asarray(reference(x, axis=tuple(axes), keepdims=keep), dtype=dtype)
    _same_bits(got, want)


def test_reduction_of_an_empty_input_and_a_bad_axis():
    with tf.Graph().as_default():
        fed = tf.placeholder(tf.int32, [None])
        x = tf.placeholder(tf.float32, [None, 3])
        total, largest = tf.reduce_sum(x, axis=fed).op, tf.reduce_max(x, axis=fed).op
    empty = np.zeros((0, 3), np.float32)
    _same_bits(_kernel(total)(empty, np.array([0], np.int32)), np.zeros(3, np.float32))
    _same_bits(_kernel(largest)(empty, np.array([0], np.int32)), np.full(3, -np.inf, np.float32))
    with pytest.raises(np.exceptions.AxisError):  # numpy's error, as np.sum raised before
        _kernel(total)(np.ones((2, 3), np.float32), np.array([2], np.int32))


# -- ReluGrad, Relu, Reshape ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_relu_grad_and_relu_give_the_plain_formula_bits(dtype):
    g = RNG.standard_normal(40).astype(dtype)
    y = RNG.standard_normal(40).astype(dtype)
    g[:6] = [np.inf, -np.inf, np.nan, -0.0, np.inf, -2]
    y[:6] = [-1, 0, 2, 3, 1, -0.0]
    with tf.Graph().as_default():
        grad = apply_op1("ReluGrad", [tf.placeholder(dtype, [40]), tf.placeholder(dtype, [40])]).op
        relu = tf.nn.relu(tf.placeholder(dtype, [40])).op
    with _quiet_errors():
        got = _kernel(grad)(g, y)
        activated = _kernel(relu)(g)
    with np.errstate(invalid="ignore"):
        _same_bits(got, g * (y > 0).astype(dtype))
    _same_bits(activated, np.maximum(g, np.zeros((), dtype)))


def test_reshape_is_the_same_view_with_a_fed_shape():
    with tf.Graph().as_default():
        op = tf.reshape(tf.placeholder(tf.float32, [None, 4]), tf.placeholder(tf.int32, [None])).op
    compute = _kernel(op)
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    for shape in ([-1], [3, 8], [2, -1, 3]):
        got = compute(x, np.array(shape, np.int32))
        assert np.shares_memory(got, x) and got.shape == np.reshape(x, shape).shape
    strided = compute(x.T, np.array([-1], np.int32))  # not contiguous: a copy, as np.reshape
    _same_bits(strided, np.reshape(x.T, -1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Only one input size may be -1, not both 0 and 1"):
        compute(x, np.array([-1, -1], np.int32))


# -- RealDiv --------------------------------------------------------------------------------------------------------
SPECIAL = [0.0, -0.0, 1.0, -3.5, np.inf, -np.inf, np.nan, 1e-30, 6e4, 3.0e38, 1.2e-38]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("divisor", [4.0, -0.5, 3.0, 1.0, -1.0, 0.125, 2.0 ** 15, 2.0 ** 100, 2.0 ** 127, 2.0 ** 1000,
                                     2.0 ** -140, 0.0, -0.0, np.inf, np.nan, 7e-3])
def test_real_div_by_a_scalar_gives_the_division_bits_silently(dtype, divisor):
    with np.errstate(all="ignore"):
        x = np.concatenate([RNG.standard_normal(50) * 1e3, SPECIAL,
                            [np.finfo(dtype).tiny, np.finfo(dtype).max, np.finfo(dtype).smallest_subnormal]]
                           ).astype(dtype)
        y = np.asarray(divisor, dtype)
        want = np.divide(x, y)
    with tf.Graph().as_default():
        op = (tf.placeholder(dtype, [None]) / tf.placeholder(dtype, [])).op
    with _quiet_errors():
        _same_bits(_kernel(op)(x, y), want)
        _same_bits(_kernel(op)(x, y[()]), want)  # a numpy scalar divisor
        _same_bits(_kernel(op)(x[3], y), np.asarray(want[3]))  # 0-d by 0-d


def test_real_div_by_an_array_and_by_zero_is_silent():
    x = np.array([[1.0, 0.0, -2.0], [np.inf, 3.0, 0.0]], np.float32)
    y = np.array([0.0, 0.0, 4.0], np.float32)
    with tf.Graph().as_default():
        op = (tf.placeholder(tf.float32, [None, 3]) / tf.placeholder(tf.float32, [3])).op
    with _quiet_errors():
        got = _kernel(op)(x, y)
    with np.errstate(all="ignore"):
        _same_bits(got, x / y)


# -- the same calls on array_api_strict (CI's stand-in for a GPU library) --------------------------------------------
def test_strict_backend_gives_the_same_values():
    require_module("array_api_strict")
    strict = backends.get("array_api_strict")
    features = RNG.standard_normal((8, 5)).astype(np.float32)
    labels = RNG.integers(0, 5, 8).astype(np.int32)
    g, y = RNG.standard_normal((8, 5)).astype(np.float32), RNG.standard_normal((8, 5)).astype(np.float32)
    with tf.Graph().as_default():
        xent = _xent_op(np.float32)
        grad = apply_op1("ReluGrad", [tf.placeholder(tf.float32, [8, 5]), tf.placeholder(tf.float32, [8, 5])]).op
        total = tf.reduce_sum(tf.placeholder(tf.float32, [8, 5]), axis=tf.placeholder(tf.int32, [None])).op
        div = (tf.placeholder(tf.float32, [8, 5]) / tf.placeholder(tf.float32, [])).op
        shaped = tf.reshape(tf.placeholder(tf.float32, [8, 5]), tf.placeholder(tf.int32, [None])).op
    cases = [(xent, (features, labels)), (grad, (g, y)), (total, (g, np.array([0], np.int32))),
             (div, (g, np.float32(4.0))), (div, (g, np.float32(0.0))), (shaped, (g, np.array([5, -1], np.int32)))]
    for op, args in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            want = _kernel(op)(*args)
            got = _kernel(op, strict)(*[strict.from_host(a) for a in args])
        for got_one, want_one in zip(got if isinstance(got, tuple) else [got],
                                     want if isinstance(want, tuple) else [want]):
            np.testing.assert_allclose(strict.to_host(got_one), want_one, rtol=1e-6)
