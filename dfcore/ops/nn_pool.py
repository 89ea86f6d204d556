"""``tf.nn.max_pool`` and ``tf.nn.avg_pool`` (NHWC) and their gradient ops.

Source: ``tensorflow/python/ops/nn_ops.py`` and ``core/kernels/maxpooling_op.cc`` /
``avgpooling_op.cc`` (TF 1.x). Windows and ``SAME``/``VALID`` sizes are those of
:func:`dfcore.ops.nn_conv.output_size`. ``SAME`` padding never wins a max (it is -inf) and is left
out of an average's count, as in TF; a max's gradient goes to the first maximum of its window.
"""

import numpy as np

from ..framework import registry
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from .array_ops_util import with_rank
from .nn_conv import check_window_attrs, windowed_size
from .op_util import apply_op1

__all__ = ["avg_pool", "max_pool"]


def _geometry(op, shape):
    """``(out_h, out_w, top, left, kh, kw, sh, sw)`` of pooling ``op`` over an NHWC ``shape``."""
    kh, kw = op.get_attr("ksize")[1:3]
    sh, sw = op.get_attr("strides")[1:3]
    out_h, top = windowed_size(op, shape[1], kh, sh, 1)
    out_w, left = windowed_size(op, shape[2], kw, sw, 1)
    return out_h, out_w, top, left, kh, kw, sh, sw


def _windows(x, op, fill):
    """``(windows [N, out_h, out_w, C, kh, kw], padded x)``, padded with ``fill``."""
    out_h, out_w, top, left, kh, kw, sh, sw = _geometry(op, x.shape)
    height, width = max((out_h - 1) * sh + kh, x.shape[1] + top), max((out_w - 1) * sw + kw, x.shape[2] + left)
    xp = np.pad(x, ((0, 0), (top, height - x.shape[1] - top), (left, width - x.shape[2] - left), (0, 0)),
                constant_values=fill)
    view = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))
    return view[:, ::sh, ::sw][:, :out_h, :out_w], xp


def _pool_shape(op):
    x = op.inputs[0]
    xs = with_rank(op, x.shape, 4).as_list()
    spatial = [None, None]
    if None not in xs[1:3]:
        out_h, out_w = _geometry(op, xs)[:2]
        spatial = [out_h, out_w]
    return [(x.dtype.base_dtype, TensorShape([xs[0], *spatial, xs[3]]))]


def _scatter(op, shape, dtype, per_tap):
    """The padded-input gradient built from ``per_tap(i, j)`` (``[N, out_h, out_w, C]`` for window tap i, j),
    cropped to ``shape``."""
    out_h, out_w, top, left, kh, kw, sh, sw = _geometry(op, shape)
    height, width = max((out_h - 1) * sh + kh, shape[1] + top), max((out_w - 1) * sw + kw, shape[2] + left)
    dxp = np.zeros((shape[0], height, width, shape[3]), dtype=dtype)
    for i in range(kh):
        for j in range(kw):
            dxp[:, i: i + sh * (out_h - 1) + 1: sh, j: j + sw * (out_w - 1) + 1: sw] += per_tap(i, j)
    return dxp[:, top: top + shape[1], left: left + shape[2]]


# -- MaxPool ------------------------------------------------------------------------
registry.RegisterShape("MaxPool")(_pool_shape)


@registry.RegisterKernel("MaxPool")
def _max_pool_kernel(op):
    return lambda x: _windows(x, op, -np.inf)[0].max(axis=(4, 5)).astype(x.dtype, copy=False)


registry.RegisterShape("MaxPoolGrad")(lambda op: [(op.inputs[0].dtype.base_dtype, op.inputs[0].shape)])


@registry.RegisterKernel("MaxPoolGrad")
def _max_pool_grad_kernel(op):
    def compute(x, y, grad):
        windows = _windows(x, op, -np.inf)[0]
        n, oh, ow, c, kh, kw = windows.shape
        first = windows.reshape(n, oh, ow, c, kh * kw).argmax(axis=4)  # the first maximum of each window
        return _scatter(op, x.shape, grad.dtype, lambda i, j: np.where(first == i * kw + j, grad, 0))

    return compute


@registry.RegisterGradient("MaxPool")
def _max_pool_grad(op, grad):
    attrs = {name: op.get_attr(name) for name in ("ksize", "strides", "padding", "data_format")}
    return apply_op1("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], attrs, "MaxPoolGrad")


# -- AvgPool ------------------------------------------------------------------------
registry.RegisterShape("AvgPool")(_pool_shape)


def _counts(op, shape):
    """How many real (unpadded) inputs each output's window covers: ``[1, out_h, out_w, 1]``."""
    ones = np.ones((1, shape[1], shape[2], 1))
    return _windows(ones, op, 0.0)[0].sum(axis=(4, 5))


@registry.RegisterKernel("AvgPool")
def _avg_pool_kernel(op):
    def compute(x):
        total = _windows(x, op, 0.0)[0].sum(axis=(4, 5))
        return (total / _counts(op, x.shape)).astype(x.dtype, copy=False)

    return compute


registry.RegisterShape("AvgPoolGrad")(
    lambda op: [(op.inputs[1].dtype.base_dtype, TensorShape([None] * 4))])


@registry.RegisterKernel("AvgPoolGrad")
def _avg_pool_grad_kernel(op):
    def compute(input_shape, grad):
        shape = tuple(int(d) for d in input_shape)
        share = grad / _counts(op, shape)
        return _scatter(op, shape, grad.dtype, lambda i, j: share)

    return compute


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


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None):
    """The maximum of each ``ksize`` window of ``value`` ``[batch, height, width, channels]`` (float), moved by
    ``strides``; output sizes as :func:`~dfcore.ops.nn_conv.conv2d`'s.

    Raises:
        ValueError: ``ksize``/``strides`` not ``[1, h, w, 1]``, a padding other than SAME/VALID, ``NCHW``.
        InvalidArgumentError: ``value`` not of rank 4 (names the op).
    """
    return _pool("MaxPool", value, ksize, strides, padding, data_format, name)


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None):
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
