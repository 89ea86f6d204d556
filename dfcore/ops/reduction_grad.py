"""Gradients of the reductions (``Sum``, ``Mean``, ``Max``, ``Min``, ``Prod``).

Source: ``tensorflow/python/ops/math_grad.py``. The incoming gradient has the
reduced shape; :func:`restore_reduced_dims` reshapes it (with length-1 reduced
axes) so it broadcasts against the reduction's input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..framework import dtypes, registry
from . import array_ops, constant_op, math_ops
from .array_ops_layout import tile
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.operation import Operation
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike


def restore_reduced_dims(grad: TensorLike, op: Operation) -> Tensor:
    """Reshape a tensor of a reduction's output shape so it broadcasts against the reduction's input."""
    x, axes = op.inputs
    if op.get_attr("keep_dims"):
        return grad
    axes_value = array_ops.constant_value(axes)
    if x.shape.ndims is not None and axes_value is not None:
        rank = x.shape.ndims
        reduced = {int(a) % rank for a in np.reshape(axes_value, -1)} if rank else set()
        kept = [1 if i in reduced else d for i, d in enumerate(x.shape.as_list())]
        if None not in kept:
            return array_ops.reshape(grad, kept)
    return array_ops.reshape(grad, reduced_shape(array_ops.shape(x), axes))


def reduced_shape(input_shape: TensorLike, axes: TensorLike, name: str | None = None) -> Tensor:
    """``input_shape`` with the dims in ``axes`` set to 1 (TF's ``reduced_shape``); int32, same length."""
    return apply_op1("ReducedShape", [input_shape, axes], {}, name or "ReducedShape")


@registry.RegisterShape("ReducedShape")
def _reduced_shape_shape(op):
    return [(dtypes.int32, op.inputs[0].shape)]


@registry.RegisterArrayKernel("ReducedShape")
def _reduced_shape_kernel(op, backend):
    host, from_host = backend.to_host, backend.from_host

    def compute(shape, axes):  # shape metadata: computed on the host (TF's HostMemory inputs and output)
        out = np.array(host(shape), dtype=np.int32)
        if out.size:
            out[np.reshape(host(axes), -1) % out.size] = 1
        return from_host(out)

    return compute


registry.NotDifferentiable("ReducedShape")


@registry.RegisterGradient("Sum")
def _sum_grad(op, grad):
    """The reduced gradient tiled back over the reduced axes (TF's ``_SumGrad``): only the input's *shape* is
    used, a constant when static, else a ``Shape`` op (TF's placer puts shape metadata with its input), so a sum
    computed on another device costs no copy of its input. A reduction of every axis of an input of known rank
    tiles ``reshape(grad, [1] * rank)`` by that shape (TF's fast path)."""
    return _tiled(op, grad)[0], None


def _tiled(op, grad):
    """``(Sum's input gradient, the input's Shape op or None when static)``."""
    x, axes = op.inputs
    axes_value, rank = array_ops.constant_value(axes), x.shape.ndims
    if rank is not None and axes_value is not None and sorted(
            {int(a) % max(rank, 1) for a in np.reshape(axes_value, -1)}) == list(range(rank)):
        input_shape = None if x.shape.is_fully_defined() else array_ops.shape(x)
        multiples = constant_op.constant(x.shape.as_list(), dtypes.int32) if input_shape is None else input_shape
        return tile(array_ops.reshape(grad, [1] * rank), multiples), input_shape
    expanded = restore_reduced_dims(grad, op)
    kept = expanded.shape.as_list() if expanded.shape.ndims is not None else None
    if x.shape.is_fully_defined() and kept is not None and None not in kept:
        multiples = constant_op.constant([d // max(k, 1) for d, k in zip(x.shape.as_list(), kept)], dtypes.int32)
        return tile(expanded, multiples), None
    with x.graph.colocate_with(x.op):  # as TF: the tile multiples are computed beside the input's shape
        input_shape = array_ops.shape(x)
        multiples = math_ops.floordiv(input_shape, math_ops.maximum(reduced_shape(input_shape, axes), 1))
    return tile(expanded, multiples), input_shape


@registry.RegisterGradient("Mean")
def _mean_grad(op, grad):
    """Sum's gradient divided by the number of elements averaged into each output: a constant when the shapes
    are static, else ``prod(shape(x)) // max(prod(shape(y)), 1)`` from the ``Shape`` ops (placed with ``x`` and
    ``y``; Sum's gradient shares the first) (TF's ``_MeanGrad``)."""
    x, y = op.inputs[0], op.outputs[0]
    sum_grad, input_shape = _tiled(op, grad)
    in_size, out_size = x.shape.num_elements(), y.shape.num_elements()
    if in_size is not None and out_size is not None:
        factor = constant_op.constant(in_size // max(out_size, 1), sum_grad.dtype)
    else:
        in_size = math_ops.reduce_prod(array_ops.shape(x) if input_shape is None else input_shape)
        out_size = math_ops.maximum(math_ops.reduce_prod(array_ops.shape(y)), 1)
        factor = math_ops.cast(math_ops.floordiv(in_size, out_size), sum_grad.dtype)
    return math_ops.realdiv(sum_grad, factor), None


def _min_or_max_grad(op, grad):
    """The gradient goes to the elements equal to the extreme value, split evenly between ties (TF)."""
    x, axes = op.inputs
    y = restore_reduced_dims(op.outputs[0], op)
    grad = restore_reduced_dims(grad, op)
    indicators = math_ops.cast(math_ops.equal(y, x), grad.dtype)
    num_selected = math_ops.reduce_sum(indicators, axes, keepdims=True)
    return math_ops.multiply(math_ops.realdiv(indicators, num_selected), grad), None


registry.RegisterGradient("Max")(_min_or_max_grad)
registry.RegisterGradient("Min")(_min_or_max_grad)


@registry.RegisterGradient("Prod")
def _prod_grad(op, grad):
    """Each element's gradient is the product of the others, exact when the input holds zeros:
    with no zero it is ``prod/x``; with one zero only that zero gets the product of the non-zeros;
    with two or more zeros it is 0."""
    x, axes = op.inputs
    grad = restore_reduced_dims(grad, op)
    is_zero = math_ops.cast(math_ops.equal(x, 0), x.dtype)
    safe_x = math_ops.add(x, is_zero)
    nonzero_prod = math_ops.reduce_prod(safe_x, axes, keepdims=True)
    zeros = math_ops.reduce_sum(is_zero, axes, keepdims=True)
    no_zero = math_ops.cast(math_ops.equal(zeros, 0), x.dtype)
    one_zero = math_ops.cast(math_ops.equal(zeros, 1), x.dtype)
    others = math_ops.add(math_ops.multiply(math_ops.realdiv(nonzero_prod, safe_x), no_zero),
                          math_ops.multiply(math_ops.multiply(nonzero_prod, is_zero), one_zero))
    return math_ops.multiply(grad, others), None
