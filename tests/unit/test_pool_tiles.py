"""The whole-array pooling kernels of windows that tile the input (dfcore.ops.pool_tiles) against the tap-pass
kernels they replace and against loops written from the definitions: ties (the first maximum in row-major
order takes the gradient), NaN (skipped by the max; a window of NaN only gives -inf), +-inf, -0, integer
dtypes, bools that fill whole uint64 lanes or not, both comparison modes (broadcast and tap by tap), NCHW,
and the geometries that are not tiles (SAME padding of odd sizes, overlapping windows) through the same ops."""

import itertools

import numpy as np
import pytest

import dfcore as tf
from dfcore.ops import nn_pool, pool_tiles
from dfcore.ops.conv_windows import WindowPlan
from dfcore.ops.nn_conv import output_size
from dfcore.ops.op_util import apply_op1

SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, 2.0, 2.0])


def _values(rng, shape, dtype, special):
    """Small integers (many ties), or with ``special`` also NaN, +-inf and -0."""
    if np.dtype(dtype).kind == "f" and special:
        return rng.choice(SPECIAL, size=shape).astype(dtype)
    return rng.integers(-2, 3, shape).astype(dtype)


def _lowest(dtype):
    return -np.inf if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min


def _windows(shape, kernel, strides, padding):
    """``(y, z, [(row, col), ...])`` per output position: the real inputs of its window in row-major order."""
    n, h, w, c = shape
    oh, top = output_size(h, kernel[0], strides[0], 1, padding)
    ow, left = output_size(w, kernel[1], strides[1], 1, padding)
    for y, z in itertools.product(range(oh), range(ow)):
        taps = [(y * strides[0] - top + i, z * strides[1] - left + j)
                for i, j in itertools.product(range(kernel[0]), range(kernel[1]))]
        yield y, z, [(r, q) for r, q in taps if 0 <= r < h and 0 <= q < w]


def reference_max_pool(x, kernel, strides, padding):
    """Each window's maximum, NaN skipped (``max`` over the non-NaN inputs; the dtype's lowest if none)."""
    windows = list(_windows(x.shape, kernel, strides, padding))
    out = np.empty((x.shape[0], max(w[0] for w in windows) + 1, max(w[1] for w in windows) + 1, x.shape[3]),
                   x.dtype)
    for b, c in itertools.product(range(x.shape[0]), range(x.shape[3])):
        for y, z, taps in windows:
            values = [x[b, r, q, c] for r, q in taps if not np.isnan(x[b, r, q, c])]
            out[b, y, z, c] = max(values) if values else _lowest(x.dtype)
    return out


def reference_max_pool_grad(x, y, grad, kernel, strides, padding):
    """``dx``: each window's gradient times 1 at the first input equal to its ``y`` (row-major), times 0 at
    the window's other inputs (so a NaN or infinite gradient makes NaN there, as the kernels multiply)."""
    dx = np.zeros_like(x)
    with np.errstate(invalid="ignore"):
        for b, c in itertools.product(range(x.shape[0]), range(x.shape[3])):
            for yy, z, taps in _windows(x.shape, kernel, strides, padding):
                first = next((t for t in taps if x[b, t[0], t[1], c] == y[b, yy, z, c]), None)
                for t in taps:
                    dx[b, t[0], t[1], c] += grad[b, yy, z, c] * (t == first)
    return dx


def _plan(shape, kernel, padding="VALID"):
    oh, top = output_size(shape[1], kernel[0], kernel[0], 1, padding)
    ow, left = output_size(shape[2], kernel[1], kernel[1], 1, padding)
    return WindowPlan(shape, kernel[0], kernel[1], kernel, (1, 1), oh, ow, top, left)


TILED = [((3, 6, 8, 5), (2, 2)),  # 5 channels: bools in uint8 lanes
         ((1, 2, 8, 5), (1, 8)),  # 8 taps of 10 bools each: 80 bools, yet no uint64 lane may span two taps
         ((2, 4, 6, 16), (2, 2)),  # uint64 lanes
         ((2, 9, 6, 8), (3, 3)),
         ((2, 4, 6, 3), (1, 2)),
         ((2, 3, 3, 4), (1, 1)),  # one tap
         ((2, 6, 4, 8), (3, 2))]


@pytest.fixture(params=["broadcast", "per tap"])
def stream_mode(request, monkeypatch):
    """Run both modes of ``max_pool_grad_tiles`` on small arrays."""
    monkeypatch.setattr(pool_tiles, "STREAM_BYTES", 0 if request.param == "broadcast" else 1 << 40)


@pytest.mark.parametrize("shape, kernel", TILED)
@pytest.mark.parametrize("dtype, special", [("float32", False), ("float64", True), ("float32", True),
                                            ("float16", True), ("int32", False), ("int8", False)])
def test_tiled_kernels_match_the_tap_passes_and_the_definition(shape, kernel, dtype, special, stream_mode):
    rng = np.random.default_rng(sum(shape) + sum(kernel))
    plan = _plan(shape, kernel)
    assert plan.tiles
    x = _values(rng, shape, dtype, special)
    out_shape = (shape[0], plan.out_h, plan.out_w, shape[3])

    y = pool_tiles.max_pool_tiles(x, *kernel, np.empty(out_shape, x.dtype), _lowest(dtype))
    y_taps = nn_pool._max_pool_taps(plan, x, np.empty(out_shape, x.dtype))
    np.testing.assert_array_equal(y, y_taps)
    np.testing.assert_array_equal(y, reference_max_pool(x, kernel, kernel, "VALID"))

    grad = _values(rng, out_shape, dtype, special)
    with np.errstate(invalid="ignore"):
        dx = pool_tiles.max_pool_grad_tiles(x, y, grad, *kernel, np.empty(shape, x.dtype))
        dx_taps = nn_pool._max_pool_grad_taps(plan, x, y, grad, np.empty(shape, x.dtype))
    np.testing.assert_array_equal(dx, dx_taps)
    np.testing.assert_array_equal(dx, reference_max_pool_grad(x, y, grad, kernel, kernel, "VALID"))


def test_first_maxima_marks_one_input_per_window_and_none_where_nothing_matches():
    x = np.array([[0, 0, 5, 1], [0, 0, 5, 5], [np.nan, np.nan, -np.inf, 7], [np.nan, np.nan, 7, 7]],
                 np.float32).reshape(1, 4, 4, 1)
    y = np.array([0, 5, -np.inf, 7], np.float32).reshape(1, 2, 2, 1)  # the NaN window's max is -inf
    hits = pool_tiles.first_maxima(x, y, 2, 2)
    assert hits.shape == (2, 2, 1, 2, 2, 1)
    marked = pool_tiles.tiled(np.zeros((1, 4, 4, 1), bool), 2, 2)
    marked[...] = hits.transpose(2, 3, 0, 4, 1, 5)
    np.testing.assert_array_equal(marked.reshape(4, 4), [[1, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]])


def test_a_window_of_nan_only_pools_to_minus_inf_or_the_integer_minimum():
    x = np.full((1, 2, 2, 1), np.nan, np.float32)
    assert pool_tiles.max_pool_tiles(x, 2, 2, np.empty((1, 1, 1, 1), np.float32), -np.inf).item() == -np.inf
    assert pool_tiles.max_pool_tiles(x, 1, 1, np.empty((1, 2, 2, 1), np.float32), -np.inf).max() == -np.inf
    ints = np.full((1, 2, 2, 1), np.iinfo(np.int16).min, np.int16)
    assert pool_tiles.max_pool_tiles(ints, 2, 2, np.empty((1, 1, 1, 1), np.int16), -32768).item() == -32768


def test_tiled_view_is_a_view_of_a_transposed_input():
    nchw = np.arange(2 * 3 * 4 * 6, dtype=np.float32).reshape(2, 3, 4, 6)
    view = pool_tiles.tiled(nchw.transpose(0, 2, 3, 1), 2, 3)
    assert view.shape == (2, 2, 2, 2, 3, 3) and np.shares_memory(view, nchw)


def test_avg_pool_grad_tiles_spreads_each_share_over_its_window():
    share = np.arange(2 * 2 * 3 * 2, dtype=np.float64).reshape(2, 2, 3, 2)
    dx = pool_tiles.avg_pool_grad_tiles(share, 2, 2, np.empty((2, 4, 6, 2)))
    np.testing.assert_array_equal(dx, share.repeat(2, axis=1).repeat(2, axis=2))


# -- through the ops: tiled and other geometries, NHWC and NCHW, the out= kernels of a Session -------------------
GEOMETRIES = [((2, 8, 6, 8), (2, 2), (2, 2), "SAME"),  # tiles (SAME needs no padding here)
              ((2, 6, 9, 3), (3, 3), (3, 3), "VALID"),  # tiles
              ((2, 7, 5, 3), (2, 2), (2, 2), "SAME"),  # odd sizes: padding at the bottom and right
              ((2, 7, 6, 2), (3, 3), (1, 1), "SAME"),  # overlapping windows add up
              ((2, 7, 6, 2), (3, 2), (2, 1), "VALID")]


def _run_pool_ops(x, grad_of, kernel, strides, padding, data_format):
    """``(MaxPool, MaxPoolGrad, AvgPoolGrad)`` of NHWC ``x`` run as ``data_format`` ops in a Session."""
    to = (lambda a: np.ascontiguousarray(a.transpose(0, 3, 1, 2))) if data_format == "NCHW" else (lambda a: a)
    back = (lambda a: a.transpose(0, 2, 3, 1)) if data_format == "NCHW" else (lambda a: a)
    window = [1, 1, *kernel] if data_format == "NCHW" else [1, *kernel, 1]
    step = [1, 1, *strides] if data_format == "NCHW" else [1, *strides, 1]
    attrs = {"ksize": window, "strides": step, "padding": padding, "data_format": data_format}
    with tf.Graph().as_default():
        x_t = tf.constant(to(x))
        y = apply_op1("MaxPool", [x_t], attrs, "MaxPool")
        with tf.Session() as sess:
            y_value = sess.run(y)
            grad = to(grad_of(back(y_value).shape))
            dx = apply_op1("MaxPoolGrad", [x_t, y, tf.constant(grad)], attrs, "MaxPoolGrad")
            avg_dx = apply_op1("AvgPoolGrad", [tf.constant(np.array(to(x).shape, np.int32)), tf.constant(grad)],
                               attrs, "AvgPoolGrad")
            dx_value, avg_value = sess.run([dx, avg_dx])
    return back(y_value), back(dx_value), back(avg_value), back(grad)


def reference_avg_pool_grad(shape, grad, kernel, strides, padding):
    dx = np.zeros(shape)
    for y, z, taps in _windows(shape, kernel, strides, padding):
        for r, q in taps:
            dx[:, r, q] += grad[:, y, z] / len(taps)
    return dx


@pytest.mark.parametrize("shape, kernel, strides, padding", GEOMETRIES)
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_pool_ops_match_the_definitions_in_both_layouts(shape, kernel, strides, padding, data_format):
    rng = np.random.default_rng(sum(shape))
    x = _values(rng, shape, np.float64, special=True)
    y, dx, avg_dx, grad = _run_pool_ops(x, lambda s: rng.standard_normal(s), kernel, strides, padding,
                                        data_format)
    np.testing.assert_array_equal(y, reference_max_pool(x, kernel, strides, padding))
    np.testing.assert_allclose(dx, reference_max_pool_grad(x, y, grad, kernel, strides, padding), atol=1e-12)
    np.testing.assert_allclose(avg_dx, reference_avg_pool_grad(shape, grad, kernel, strides, padding), atol=1e-12)
