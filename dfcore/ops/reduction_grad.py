"""Gradients of the reductions (``Sum``, ``Mean``, ``Max``, ``Min``, ``Prod``).

Source: ``tensorflow/python/ops/math_grad.py``. The incoming gradient has the
reduced shape; :func:`restore_reduced_dims` reshapes it (with length-1 reduced
axes) so it broadcasts against the reduction's input.
"""

import numpy as np

from ..framework import dtypes, registry
from . import array_ops, math_ops
from .op_util import apply_op1


def restore_reduced_dims(grad, op):
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


def reduced_shape(input_shape, axes, name=None):
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
    x = op.inputs[0]
    expanded = restore_reduced_dims(grad, op)
    return math_ops.multiply(expanded, array_ops.ones_like(x)), None


@registry.RegisterGradient("Mean")
def _mean_grad(op, grad):
    """Sum's gradient divided by the number of elements averaged (static when shapes are known)."""
    x, y = op.inputs[0], op.outputs[0]
    sum_grad = _sum_grad(op, grad)[0]
    in_size, out_size = x.shape.num_elements(), y.shape.num_elements()
    if in_size is not None and out_size is not None:
        factor = np.asarray(in_size // max(out_size, 1), dtype=grad.dtype.as_numpy_dtype)
    else:
        in_size = math_ops.reduce_prod(array_ops.shape(x))
        out_size = math_ops.maximum(math_ops.reduce_prod(array_ops.shape(y)), 1)
        factor = math_ops.cast(math_ops.floordiv(in_size, out_size), grad.dtype)
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
