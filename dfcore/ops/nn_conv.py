"""``tf.nn.conv2d`` (NHWC, or NCHW as TF 2.x's CPU kernels allow) and its two backprop ops, with TF's padding
arithmetic.

Source: ``tensorflow/python/ops/nn_ops.py`` and ``core/kernels/conv_ops.cc`` /
``conv_grad_input_ops.cc`` / ``conv_grad_filter_ops.cc`` (TF 1.x); the output size and
padding of ``SAME``/``VALID`` follow ``core/framework/kernel_shape_util.cc``
(``GetWindowedOutputSize``). Each kernel is one matrix product over the im2col columns of its input
(:mod:`dfcore.ops.conv_windows`): forward ``im2col(x) @ F``, filter gradient ``im2col(x)^T @ dy``, input
gradient ``col2im(dy @ F^T)``, with the window geometry and scratch cached per input shape.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..framework import registry
from ..framework.scopes import name_scope
from ..framework.tensor_shape import TensorShape
from . import array_ops, common_shapes
from .array_ops_util import constant_value_as_shape, with_rank
from .conv_layout import FORMATS, from_nhwc_shape, layout_kernel, nhwc_shape, register_layout_kernels, spatial
from .conv_windows import PlanCache, WindowPlan
from .op_util import apply_op1, convert_same_dtype

if TYPE_CHECKING:
    from ..framework.dtypes import DType
    from ..framework.operation import Operation
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["conv2d", "conv2d_backprop_filter", "conv2d_backprop_input"]


def output_size(in_size: int, kernel: int, stride: int, dilation: int, padding: str) -> tuple[int, int]:
    """``(output size, padding before)`` of one spatial dimension (TF's ``GetWindowedOutputSize``)."""
    effective = (kernel - 1) * dilation + 1
    if padding == "VALID":
        return max(0, math.ceil((in_size - effective + 1) / stride)), 0
    out = math.ceil(in_size / stride)
    total = max((out - 1) * stride + effective - in_size, 0)
    return out, total // 2


def windowed_size(op: Operation, in_size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """:func:`output_size` under ``op``'s padding.

    Raises:
        InvalidArgumentError: a ``VALID`` window larger than the input (TF's "Negative dimension size caused by
            subtracting 3 from 2 for '<op>' ... with input shapes: ...").
    """
    padding = op.get_attr("padding")
    effective = (kernel - 1) * dilation + 1
    if padding == "VALID" and in_size < effective:
        raise common_shapes.shape_error(op, f"Negative dimension size caused by subtracting {effective} from {in_size}")
    return output_size(in_size, kernel, stride, dilation, padding)


def check_window_attrs(op_name: str, padding: str | None, data_format: str, **windows: Sequence[int]) -> None:
    """Raise ``ValueError`` naming ``op_name`` unless ``padding`` is SAME/VALID, the format NHWC or NCHW, and
    each of ``windows`` (``strides=[1, 2, 2, 1]`` …) four positive ints that leave the batch and depth alone."""
    if data_format not in FORMATS:
        raise ValueError(f"{op_name}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"{op_name}: padding must be 'SAME' or 'VALID', got {padding!r}")
    form = "[1, 1, h, w]" if data_format == "NCHW" else "[1, h, w, 1]"
    for name, value in windows.items():
        if len(value) != 4 or min(value) < 1 or (1, 1) != (value[0], nhwc_shape(value, data_format)[3]):
            raise ValueError(f"{op_name}: {name} must be 4 positive ints {form} (nothing across the batch "
                             f"or the depth), got {list(value)}")


def _geometry(op, input_shape, filter_shape):
    """``(out_h, out_w, pad_top, pad_left)`` of ``op`` for an NHWC input and an HWIO filter."""
    data_format = op.get_attr("data_format")
    sh, sw = spatial(op.get_attr("strides"), data_format)
    dh, dw = spatial(op.get_attr("dilations"), data_format)
    out_h, top = windowed_size(op, input_shape[1], filter_shape[0], sh, dh)
    out_w, left = windowed_size(op, input_shape[2], filter_shape[1], sw, dw)
    return out_h, out_w, top, left


def _plans(op):
    """A :class:`~dfcore.ops.conv_windows.PlanCache` of ``op``'s windows, keyed by ``(NHWC input shape,
    (filter height, filter width))``."""
    data_format = op.get_attr("data_format")
    strides, dilations = spatial(op.get_attr("strides"), data_format), spatial(op.get_attr("dilations"), data_format)

    def make(key):
        in_shape, (kh, kw) = key
        out_h, out_w, top, left = _geometry(op, in_shape, (kh, kw))
        return WindowPlan(in_shape, kh, kw, strides, dilations, out_h, out_w, top, left)

    return PlanCache(make)


def _check_backprop(op, plan, x_shape, filter_shape, dy_shape):
    """Raise TF's ``InvalidArgumentError`` unless the shapes of a backprop op's operands agree."""
    want = (x_shape[0], plan.out_h, plan.out_w, filter_shape[3])
    if x_shape[3] != filter_shape[2] or tuple(dy_shape) != want:
        raise errors.InvalidArgumentError(
            None, op, f"{op.type}: input {list(x_shape)}, filter {list(filter_shape)} and out_backprop "
                      f"{list(dy_shape)} do not agree (out_backprop must be {list(want)})")


# -- Conv2D ---------------------------------------------------------------------------
@registry.RegisterShape("Conv2D")
def conv2d_shape(op: Operation) -> list[tuple[DType, TensorShape]]:
    """The output of ``Conv2D`` (and of ``_FusedConv2D``, whose third input is its bias), with TF's errors."""
    x, f = op.inputs[:2]
    common_shapes.require_same_dtype(op)
    data_format = op.get_attr("data_format")
    xs = list(nhwc_shape(with_rank(op, x.shape, 4).as_list(), data_format))
    fs = with_rank(op, f.shape, 4).as_list()
    if xs[3] is not None and fs[2] is not None and xs[3] != fs[2]:
        raise common_shapes.shape_error(op, f"Depth of input ({xs[3]}) is not a multiple of input depth of filter "
                                            f"({fs[2]})" if xs[3] % fs[2] else
                                        f"Depth of input ({xs[3]}) differs from the filter's input depth ({fs[2]}): "
                                        "dfcore has no grouped convolutions")
    hw = [None, None]
    if None not in (xs[1], xs[2], fs[0], fs[1]):
        out_h, out_w, _, _ = _geometry(op, xs, fs)
        hw = [out_h, out_w]
    return [(x.dtype.base_dtype, TensorShape(from_nhwc_shape([xs[0], *hw, fs[3]], data_format)))]


def _conv2d_compute(op):
    """``compute(empty, x, f)`` of ``Conv2D`` in NHWC; ``empty(shape, dtype)`` makes the output buffer."""
    plans = _plans(op)

    def compute(empty, x, f):
        if x.shape[3] != f.shape[2]:
            raise errors.InvalidArgumentError(None, op, f"input and filter must have the same depth: {x.shape[3]} vs "
                                                        f"{f.shape[2]}")
        plan = plans.get((x.shape, f.shape[:2]))
        channels = f.shape[3]
        out = empty((x.shape[0] * plan.out_h * plan.out_w, channels), x.dtype)
        plan.matmul_columns(x, f.reshape(-1, channels), out)
        return out.reshape(x.shape[0], plan.out_h, plan.out_w, channels)

    return compute


register_layout_kernels("Conv2D", ("x", "-"), _conv2d_compute)


def conv2d(input: TensorLike, filter: TensorLike = None, strides: Any = None,
           padding: str | None = None, use_cudnn_on_gpu: bool = True, data_format: str = "NHWC",
           dilations: Sequence[int] = (1, 1, 1, 1), name: str | None = None) -> Tensor:
    """2-D convolution of ``input`` ``[batch, height, width, in_channels]`` with ``filter``
    ``[filter_height, filter_width, in_channels, out_channels]``, float16/32/64.

    Output ``[batch, out_height, out_width, out_channels]``: with ``"SAME"`` ``ceil(in / stride)``, with
    ``"VALID"`` ``ceil((in - (k - 1) * dilation) / stride)`` per spatial dimension. With ``data_format="NCHW"``
    the input is ``[batch, in_channels, height, width]`` and the output ``[batch, out_channels, ...]``.
    Raises:
        ValueError: strides or dilations not ``[1, h, w, 1]`` (``NCHW``: ``[1, 1, h, w]``), a padding other than
            SAME/VALID, a data_format other than NHWC/NCHW.
        InvalidArgumentError: ranks other than 4, or input and filter depths that differ (names the op).
    """
    strides, dilations = [int(s) for s in strides], [int(d) for d in dilations]
    check_window_attrs("Conv2D", padding, data_format, strides=strides, dilations=dilations)
    with name_scope(name, "Conv2D", [input, filter]) as scope:
        x, f = convert_same_dtype([input, filter], "Conv2D")
        attrs = {"strides": strides, "padding": padding, "dilations": dilations, "data_format": data_format}
        return apply_op1("Conv2D", [x, f], attrs, scope)


# -- backprop ops ----------------------------------------------------------------------
def _backprop_attrs(op):
    return {name: op.get_attr(name) for name in ("strides", "padding", "dilations", "data_format")}


@registry.RegisterShape("Conv2DBackpropInput")
def _backprop_input_shape(op):
    sizes = constant_value_as_shape(op.inputs[0])
    return [(op.inputs[1].dtype.base_dtype, sizes if sizes.ndims is not None else TensorShape([None] * 4))]


def _backprop_input_compute(op):
    """``compute(empty, input_sizes, f, dy)`` of ``Conv2DBackpropInput`` in NHWC (``empty`` as in Conv2D's)."""
    plans = _plans(op)

    def compute(empty, input_sizes, f, dy):
        shape = tuple(int(d) for d in input_sizes)
        plan = plans.get((shape, f.shape[:2]))
        _check_backprop(op, plan, shape, f.shape, dy.shape)
        return plan.col2im_matmul(dy.reshape(-1, f.shape[3]), f, empty(shape, dy.dtype))

    return compute


register_layout_kernels("Conv2DBackpropInput", ("shape", "-", "x"), _backprop_input_compute)


@registry.RegisterShape("Conv2DBackpropFilter")
def _backprop_filter_shape(op):
    sizes = constant_value_as_shape(op.inputs[1])
    return [(op.inputs[0].dtype.base_dtype, sizes if sizes.ndims is not None else TensorShape([None] * 4))]


@registry.RegisterKernel("Conv2DBackpropFilter")
def _backprop_filter_kernel(op):
    plans = _plans(op)

    def compute(x, filter_sizes, dy):
        shape = tuple(int(d) for d in filter_sizes)
        plan = plans.get((x.shape, shape[:2]))
        _check_backprop(op, plan, x.shape, shape, dy.shape)
        out = np.empty((shape[0] * shape[1] * shape[2], shape[3]), x.dtype)
        return plan.columns_t_matmul(x, dy.reshape(-1, shape[3]), out).reshape(shape)

    return layout_kernel(("x", "-", "x"), op.get_attr("data_format"), compute, out_is_tensor=False)


def conv2d_backprop_input(input_sizes: TensorLike, filter: TensorLike, out_backprop: TensorLike, strides: Sequence[int],
                          padding: str, use_cudnn_on_gpu: bool = True, data_format: str = "NHWC",
                          dilations: Sequence[int] = (1, 1, 1, 1), name: str | None = None) -> Tensor:
    """The gradient of :func:`conv2d` with respect to its input (shape ``input_sizes``)."""
    attrs = {"strides": list(strides), "padding": padding, "dilations": list(dilations), "data_format": data_format}
    return apply_op1("Conv2DBackpropInput", [input_sizes, filter, out_backprop], attrs, name or "Conv2DBackpropInput")


def conv2d_backprop_filter(input: TensorLike, filter_sizes: TensorLike, out_backprop: TensorLike,
                           strides: Sequence[int], padding: str, use_cudnn_on_gpu: bool = True,
                           data_format: str = "NHWC", dilations: Sequence[int] = (1, 1, 1, 1),
                           name: str | None = None) -> Tensor:
    """The gradient of :func:`conv2d` with respect to its filter (shape ``filter_sizes``)."""
    attrs = {"strides": list(strides), "padding": padding, "dilations": list(dilations), "data_format": data_format}
    return apply_op1("Conv2DBackpropFilter", [input, filter_sizes, out_backprop], attrs,
                     name or "Conv2DBackpropFilter")


@registry.RegisterGradient("Conv2D")
def _conv2d_grad(op, grad):
    x, f = op.inputs
    attrs = _backprop_attrs(op)
    return (apply_op1("Conv2DBackpropInput", [array_ops.shape(x), f, grad], attrs, "Conv2DBackpropInput"),
            apply_op1("Conv2DBackpropFilter", [x, array_ops.shape(f), grad], attrs, "Conv2DBackpropFilter"))


# -- cost: 2 flops (multiply, add) per filter tap per output element, as TF's flops registry ---------------
@registry.RegisterCost("Conv2D")
def conv2d_cost(input_shapes: Sequence[Sequence[int]], output_shapes: Sequence[Sequence[int]],
                attrs: Mapping[str, Any]) -> tuple[int, int]:
    """``(flops, elements read and written)`` of ``Conv2D`` over its input and output shapes."""
    (n, oh, ow, o), (kh, kw, c, _) = output_shapes[0], input_shapes[1]
    elements = sum(math.prod(s) for s in input_shapes) + math.prod(output_shapes[0])
    return 2 * n * oh * ow * o * kh * kw * c, elements


@registry.RegisterCost("Conv2DBackpropInput")
def _backprop_input_cost(input_shapes, output_shapes, attrs):
    (kh, kw, c, _), (n, oh, ow, o) = input_shapes[1], input_shapes[2]
    return 2 * n * oh * ow * o * kh * kw * c, math.prod(output_shapes[0]) + math.prod(input_shapes[2])


@registry.RegisterCost("Conv2DBackpropFilter")
def _backprop_filter_cost(input_shapes, output_shapes, attrs):
    (kh, kw, c, _), (n, oh, ow, o) = output_shapes[0], input_shapes[2]
    return 2 * n * oh * ow * o * kh * kw * c, math.prod(input_shapes[0]) + math.prod(input_shapes[2])
