"""``tf.nn.max_pool`` and ``tf.nn.avg_pool`` (NHWC, or NCHW as TF 2.x's CPU kernels allow) and their gradient ops.

Source: ``tensorflow/python/ops/nn_ops.py`` and ``core/kernels/maxpooling_op.cc`` /
``avgpooling_op.cc`` (TF 1.x). Windows and ``SAME``/``VALID`` sizes are those of
:func:`dfcore.ops.nn_conv.output_size`. ``SAME`` padding never wins a max (it is -inf) and is left
out of an average's count, as in TF; a max's gradient goes to the first maximum of its window (row-major
order, as TF's). Each kernel makes one pass of a few ufuncs per window tap over the tap rectangles of
:mod:`dfcore.ops.conv_windows` (cached per input shape): no window is materialized. Windows that tile the
input (``ksize == strides``, no padding) take the whole-array kernels of :mod:`dfcore.ops.pool_tiles`, which
give the same results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..framework import registry
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from .array_ops_util import with_rank
from .conv_layout import from_nhwc_shape, layout_kernel, nhwc_shape, register_layout_kernels, spatial
from .conv_windows import PlanCache, WindowPlan
from .nn_conv import check_window_attrs, windowed_size
from .op_util import apply_op1
from .pool_tiles import avg_pool_grad_tiles, max_pool_grad_tiles, max_pool_tiles

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["avg_pool", "max_pool"]


def _geometry(op, shape):
    """``(out_h, out_w, top, left, kh, kw, sh, sw)`` of pooling ``op`` over an NHWC ``shape``."""
    kh, kw = spatial(op.get_attr("ksize"), op.get_attr("data_format"))
    sh, sw = spatial(op.get_attr("strides"), op.get_attr("data_format"))
    out_h, top = windowed_size(op, shape[1], kh, sh, 1)
    out_w, left = windowed_size(op, shape[2], kw, sw, 1)
    return out_h, out_w, top, left, kh, kw, sh, sw


def _plans(op):
    """A cache of ``op``'s :class:`~dfcore.ops.conv_windows.WindowPlan` by NHWC input shape."""

    def make(shape):
        out_h, out_w, top, left, kh, kw, sh, sw = _geometry(op, shape)
        return WindowPlan(shape, kh, kw, (sh, sw), (1, 1), out_h, out_w, top, left)

    return PlanCache(make)


def _out_shape(plan):
    return (plan.in_shape[0], plan.out_h, plan.out_w, plan.in_shape[3])


def _lowest(dtype):
    """The value padding takes in a max: -inf, or an integer dtype's minimum."""
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _pool_shape(op):
    x = op.inputs[0]
    data_format = op.get_attr("data_format")
    xs = nhwc_shape(with_rank(op, x.shape, 4).as_list(), data_format)
    hw = [None, None]
    if None not in xs[1:3]:
        hw = list(_geometry(op, xs)[:2])
    return [(x.dtype.base_dtype, TensorShape(from_nhwc_shape([xs[0], *hw, xs[3]], data_format)))]


def _input_grad(plan, per_tap, dx):
    """``dx`` (a buffer ``[N, H, W, C]``, zeroed here) = the input's gradient: ``per_tap(out_rows, out_cols,
    in_rows, in_cols, target)`` adds the gradient of one window tap into ``target``, the inputs that tap reads;
    taps come in row-major window order."""
    dx.fill(0)
    for _, _, orow, ocol, irow, icol in plan.taps:
        per_tap(orow, ocol, irow, icol, dx[:, irow, icol])
    return dx


# -- MaxPool ------------------------------------------------------------------------
registry.RegisterShape("MaxPool")(_pool_shape)


def _max_pool_taps(plan, x, out):
    """``out`` = MaxPool of NHWC ``x`` by one ``fmax`` pass per window tap (any geometry of ``plan``)."""
    out.fill(_lowest(x.dtype))
    for _, _, orow, ocol, irow, icol in plan.taps:
        part = out[:, orow, ocol]
        np.fmax(part, x[:, irow, icol], out=part)  # NaN is skipped, as TF's CPU kernel does
    return out


def _max_pool_compute(op):
    """``compute(empty, x)`` of ``MaxPool`` in NHWC; ``empty(shape, dtype)`` makes the output buffer."""
    plans = _plans(op)

    def compute(empty, x):
        plan = plans.get(x.shape)
        out = empty(_out_shape(plan), x.dtype)
        if plan.tiles:
            return max_pool_tiles(x, plan.kh, plan.kw, out, _lowest(x.dtype))
        return _max_pool_taps(plan, x, out)

    return compute


register_layout_kernels("MaxPool", ("x",), _max_pool_compute)


registry.RegisterShape("MaxPoolGrad")(lambda op: [(op.inputs[0].dtype.base_dtype, op.inputs[0].shape)])


def _max_pool_grad_taps(plan, x, y, grad, dx):
    """``dx`` (a buffer of ``x``'s shape) = MaxPoolGrad by a few ufuncs per window tap (any geometry of
    ``plan``): each window's gradient goes to the first input equal to its ``y``."""
    taken = np.zeros(y.shape, bool)  # windows whose maximum has had its gradient
    hit = np.empty(y.shape, bool)

    def per_tap(orow, ocol, irow, icol, target):
        mask, done = hit[:, orow, ocol], taken[:, orow, ocol]
        np.equal(x[:, irow, icol], y[:, orow, ocol], out=mask)
        np.greater(mask, done, out=mask)  # the first maximum of its window only
        np.logical_or(done, mask, out=done)
        target += grad[:, orow, ocol] * mask

    return _input_grad(plan, per_tap, dx)


def _max_pool_grad_compute(op):
    """``compute(empty, x, y, grad)`` of ``MaxPoolGrad`` in NHWC (``empty`` as in MaxPool's)."""
    plans = _plans(op)

    def compute(empty, x, y, grad):
        plan = plans.get(x.shape)
        dx = empty(plan.in_shape, grad.dtype)
        if plan.tiles:
            return max_pool_grad_tiles(x, y, grad, plan.kh, plan.kw, dx)
        return _max_pool_grad_taps(plan, x, y, grad, dx)

    return compute


register_layout_kernels("MaxPoolGrad", ("x", "x", "x"), _max_pool_grad_compute)


@registry.RegisterGradient("MaxPool")
def _max_pool_grad(op, grad):
    attrs = {name: op.get_attr(name) for name in ("ksize", "strides", "padding", "data_format")}
    return apply_op1("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], attrs, "MaxPoolGrad")


# -- AvgPool ------------------------------------------------------------------------
registry.RegisterShape("AvgPool")(_pool_shape)


def _avg_plans(op):
    """A cache of ``(plan, counts)`` by NHWC input shape; ``counts`` ``[1, out_h, out_w, 1]`` (float64) is how
    many real (unpadded) inputs each window covers, as TF divides by it: one number (0-d) where windows tile
    the input (a division by it is one contiguous pass)."""
    plans = _plans(op)

    def make(shape):
        plan = plans.get(shape)
        if plan.tiles:
            return plan, np.array(float(plan.kh * plan.kw))
        counts = np.zeros((1, plan.out_h, plan.out_w, 1))
        for _, _, orow, ocol, _, _ in plan.taps:
            counts[:, orow, ocol] += 1
        return plan, counts

    return PlanCache(make)


@registry.RegisterKernel("AvgPool")
def _avg_pool_kernel(op):
    plans = _avg_plans(op)

    def compute(x):
        plan, counts = plans.get(x.shape)
        total = np.zeros(_out_shape(plan), x.dtype)
        for _, _, orow, ocol, irow, icol in plan.taps:
            total[:, orow, ocol] += x[:, irow, icol]
        return np.divide(total, counts.astype(x.dtype, copy=False), out=total)

    return layout_kernel(("x",), op.get_attr("data_format"), compute)


registry.RegisterShape("AvgPoolGrad")(
    lambda op: [(op.inputs[1].dtype.base_dtype, TensorShape([None] * 4))])


@registry.RegisterKernel("AvgPoolGrad")
def _avg_pool_grad_kernel(op):
    plans = _avg_plans(op)

    def compute(input_shape, grad):
        plan, counts = plans.get(tuple(int(d) for d in input_shape))
        share = grad / counts.astype(grad.dtype, copy=False)
        if plan.tiles:
            return avg_pool_grad_tiles(share, plan.kh, plan.kw, np.empty(plan.in_shape, grad.dtype))

        def per_tap(orow, ocol, irow, icol, target):
            target += share[:, orow, ocol]

        return _input_grad(plan, per_tap, np.empty(plan.in_shape, grad.dtype))

    return layout_kernel(("shape", "x"), op.get_attr("data_format"), compute)


@registry.RegisterGradient("AvgPool")
def _avg_pool_grad(op, grad):
    from .array_ops import shape

    attrs = {name: op.get_attr(name) for name in ("ksize", "strides", "padding", "data_format")}
    return apply_op1("AvgPoolGrad", [shape(op.inputs[0]), grad], attrs, "AvgPoolGrad")


def _pool(op_type, value, ksize, strides, padding, data_format, name):
    ksize, strides = [int(k) for k in ksize], [int(s) for s in strides]
    check_window_attrs(op_type, padding, data_format, ksize=ksize, strides=strides)
    with name_scope(name, op_type, [value]) as scope:
        attrs = {"ksize": ksize, "strides": strides, "padding": padding, "data_format": data_format}
        return apply_op1(op_type, [convert_to_tensor(value)], attrs, scope)


def max_pool(value: TensorLike, ksize: Sequence[int], strides: Sequence[int], padding: str, data_format: str = "NHWC",
             name: str | None = None) -> Tensor:
    """The maximum of each ``ksize`` window of ``value`` ``[batch, height, width, channels]`` (float), moved by
    ``strides``; output sizes as :func:`~dfcore.ops.nn_conv.conv2d`'s.

    Raises:
        ValueError: ``ksize``/``strides`` not ``[1, h, w, 1]`` (``NCHW``: ``[1, 1, h, w]``), a padding other than
            SAME/VALID, a data_format other than NHWC/NCHW.
        InvalidArgumentError: ``value`` not of rank 4 (names the op).
    """
    return _pool("MaxPool", value, ksize, strides, padding, data_format, name)


def avg_pool(value: TensorLike, ksize: Sequence[int], strides: Sequence[int], padding: str, data_format: str = "NHWC",
             name: str | None = None) -> Tensor:
    """The mean of each window, as :func:`max_pool`; with ``SAME`` the padding is not counted (TF's rule)."""
    return _pool("AvgPool", value, ksize, strides, padding, data_format, name)


def _pool_cost(input_shapes, output_shapes, attrs):
    """One op per window tap per output element (TF's flops registry counts pooling so)."""
    taps = attrs["ksize"][1] * attrs["ksize"][2]
    out = int(np.prod(output_shapes[0]))
    return taps * out, int(np.prod(input_shapes[0])) + out


registry.RegisterCost("MaxPool")(_pool_cost)
registry.RegisterCost("AvgPool")(_pool_cost)


def _pool_grad_cost(input_shapes, output_shapes, attrs):
    """The forward pool's count: each window tap of each gradient element routed back once."""
    flops, _ = _pool_cost(input_shapes[-1:], input_shapes[-1:], attrs)
    return flops, sum(int(np.prod(s)) for s in (*input_shapes, *output_shapes))


registry.RegisterCost("MaxPoolGrad")(_pool_grad_cost)
registry.RegisterCost("AvgPoolGrad")(_pool_grad_cost)
