"""``tf.nn.lrn`` / ``tf.nn.local_response_normalization`` (``LRN``) and its gradient op ``LRNGrad``.

Source: ``tensorflow/python/ops/nn_ops.py`` (the names), ``core/ops/nn_ops.cc`` (shape functions),
``core/kernels/lrn_op.cc`` (the formula) and ``nn_grad.py`` (``_LRNGrad``), TF 1.x. Over the last
(depth) axis of a 4-D tensor::

    sqr_sum[a, b, c, d] = sum(input[a, b, c, d - depth_radius : d + depth_radius + 1] ** 2)
    output = input / (bias + alpha * sqr_sum) ** beta

TF's kernels take float16/bfloat16/float32; dfcore also takes float64 (for exact gradient checks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.scopes import name_scope
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from .array_ops_util import merge_shapes, with_rank
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = ["lrn", "local_response_normalization"]

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
_ATTRS = ("depth_radius", "bias", "alpha", "beta")


def _window_sums(values, radius):
    """``sum(values[..., d - radius : d + radius + 1])`` for every depth d (zeros past the edges)."""
    padded = np.pad(values, [(0, 0)] * (values.ndim - 1) + [(radius, radius)])
    return np.lib.stride_tricks.sliding_window_view(padded, 2 * radius + 1, axis=-1).sum(axis=-1)


def _norm(x, attrs):
    """``bias + alpha * sqr_sum``, computed in float64 at least."""
    x = x.astype(np.promote_types(x.dtype, np.float64), copy=False)
    return attrs["bias"] + attrs["alpha"] * _window_sums(np.square(x), attrs["depth_radius"])


def _check_4d(op, x):
    if np.ndim(x) != 4:
        raise errors.InvalidArgumentError(None, op, f"input must be 4-dimensional, got shape {list(np.shape(x))}")


@registry.RegisterShape("LRN")
def _lrn_shape(op):
    x = op.inputs[0]
    return [(x.dtype.base_dtype, with_rank(op, x.shape, 4))]


@registry.RegisterKernel("LRN")
def _lrn_kernel(op):
    attrs = {name: op.get_attr(name) for name in _ATTRS}

    def compute(x):
        _check_4d(op, x)
        return (x * _norm(x, attrs) ** -attrs["beta"]).astype(x.dtype)

    return compute


@registry.RegisterShape("LRNGrad")
def _lrn_grad_shape(op):
    grads, image, output = op.inputs
    shape = with_rank(op, grads.shape, 4)
    for tensor in (image, output):
        shape = merge_shapes(op, shape, with_rank(op, tensor.shape, 4))
    return [(grads.dtype.base_dtype, shape)]


@registry.RegisterKernel("LRNGrad")
def _lrn_grad_kernel(op):
    """``dx_j = g_j N_j^-beta - 2 alpha beta x_j sum_{i: |i - j| <= r} g_i y_i / N_i`` (N: the norm)."""
    attrs = {name: op.get_attr(name) for name in _ATTRS}

    def compute(grads, image, output):
        _check_4d(op, image)
        if np.shape(grads) != np.shape(image) or np.shape(output) != np.shape(image):
            raise errors.InvalidArgumentError(None, op, "input_grads, input_image, and out_image should have the same "
                                                        "shape")
        norm = _norm(image, attrs)
        back = _window_sums(grads * output / norm, attrs["depth_radius"])
        dx = grads * norm ** -attrs["beta"] - 2 * attrs["alpha"] * attrs["beta"] * image * back
        return dx.astype(grads.dtype)

    return compute


@registry.RegisterGradient("LRN")
def _lrn_grad(op, grad):
    attrs = {name: op.get_attr(name) for name in _ATTRS}
    return apply_op1("LRNGrad", [grad, op.inputs[0], op.outputs[0]], attrs, "LRNGrad")


def lrn(input: TensorLike, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0, beta: float = 0.5,
        name: str | None = None) -> Tensor:
    """Local response normalization of ``input`` ``[batch, height, width, depth]`` (float) across depth:
    ``input / (bias + alpha * sqr_sum) ** beta`` with ``sqr_sum`` the sum of squares over the
    ``2 * depth_radius + 1`` nearest depths; same shape and dtype.

    Raises:
        TypeError: a non-float input.
        ValueError: a negative ``depth_radius``.
        InvalidArgumentError: ``input`` not of rank 4 (names the op and the shapes).
    Source: ``tensorflow/python/ops/nn_ops.py`` (``gen_nn_ops.lrn``).
    """
    if int(depth_radius) < 0:
        raise ValueError(f"LRN: depth_radius must be >= 0, got {depth_radius}")
    with name_scope(name, "LRN", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        if x.dtype.base_dtype not in _FLOATS:
            raise TypeError(f"Value passed to parameter 'input' has DataType {x.dtype.base_dtype.name} not in list of "
                            f"allowed values: {', '.join(d.name for d in _FLOATS)}")
        attrs = {"depth_radius": int(depth_radius), "bias": float(bias), "alpha": float(alpha), "beta": float(beta)}
        return apply_op1("LRN", [x], attrs, scope)


local_response_normalization = lrn


def _lrn_cost(passes):
    """Per element and pass: a square, ``2r + 1`` window adds, scale and bias, a power and a product (``2r + 6``);
    the gradient makes two passes."""

    def cost(input_shapes, output_shapes, attrs):
        size = int(np.prod(input_shapes[0]))
        io = sum(int(np.prod(s)) for s in input_shapes + output_shapes)
        return passes * (2 * attrs["depth_radius"] + 6) * size, io

    return cost


registry.RegisterCost("LRN")(_lrn_cost(1))
registry.RegisterCost("LRNGrad")(_lrn_cost(2))
