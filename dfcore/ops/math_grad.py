"""Gradients of the math ops, registered by op type.

Source: ``tensorflow/python/ops/math_grad.py``. Gradients of broadcasting ops
are summed back over the broadcast axes (:func:`unbroadcast`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from . import array_ops, math_ops

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike


def unbroadcast(grad: TensorLike, x: TensorLike, other: TensorLike = None) -> Tensor:
    """Sum ``grad`` over the axes along which ``x`` was broadcast, and reshape to x's shape.

    Static shapes decide the axes when both are fully known, or, given the op's ``other`` operand, when the
    ranks and the dims that matter are known (TF's ``SmartBroadcastGradientArgs``: ``x`` is broadcast along an
    axis where its dim is 1, or missing, and the other's is not 1); otherwise the ``BroadcastGradientArgs`` op
    computes them at run time (as TF does). Static axes need no ``Shape`` of the operands (a copy of a shape
    between devices, where an operand lives on another one).
    """
    xs, gs = x.shape, grad.shape
    if xs.is_fully_defined() and gs.is_fully_defined():
        if xs == gs:
            return grad
        x_dims, g_dims = xs.as_list(), gs.as_list()
        lead = len(g_dims) - len(x_dims)
        axes: list[int] | None = list(range(lead)) + [lead + i for i, d in enumerate(x_dims)
                                                      if d == 1 and g_dims[lead + i] != 1]
        summed = math_ops.reduce_sum(grad, axes, keepdims=False) if axes else grad
        return array_ops.reshape(summed, x_dims)
    axes = None if other is None else _broadcast_axes(xs, other.shape)
    if axes is not None:
        if not axes and xs.ndims >= other.shape.ndims:
            return grad
        summed = math_ops.reduce_sum(grad, axes, keepdims=True) if axes else grad
        return array_ops.reshape(summed, xs.as_list() if xs.is_fully_defined() else array_ops.shape(x))
    sx, sg = array_ops.shape(x), array_ops.shape(grad)
    rx, _ = broadcast_gradient_args(sx, sg)
    return array_ops.reshape(math_ops.reduce_sum(grad, rx), sx)


def _broadcast_axes(x_shape, y_shape):
    """The axes (of the broadcast result) along which an operand of ``x_shape`` was broadcast against one of
    ``y_shape``, from static shapes; None when an unknown dim leaves it open."""
    if x_shape.ndims is None or y_shape.ndims is None:
        return None
    rank = max(x_shape.ndims, y_shape.ndims)
    x_dims = [1] * (rank - x_shape.ndims) + x_shape.as_list()
    y_dims = [1] * (rank - y_shape.ndims) + y_shape.as_list()
    axes = []
    for axis, (x_dim, y_dim) in enumerate(zip(x_dims, y_dims)):
        if x_dim == 1 and y_dim != 1:
            axes.append(axis)
        elif y_dim == 1 and x_dim != 1:
            continue  # the other operand was broadcast here
        elif x_dim is None or y_dim is None:
            return None
    return axes


def broadcast_gradient_args(s0: TensorLike, s1: TensorLike, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The reduction axes ``(r0, r1)`` for the gradients of two broadcast operands of shapes s0, s1."""
    from .op_util import apply_op

    op = apply_op("BroadcastGradientArgs", [s0, s1], {}, name or "BroadcastGradientArgs")
    return op.outputs[0], op.outputs[1]


@registry.RegisterShape("BroadcastGradientArgs")
def _bga_shape(op):
    return [(dtypes.int32, TensorShape([None])), (dtypes.int32, TensorShape([None]))]


@registry.RegisterArrayKernel("BroadcastGradientArgs")
def _bga_kernel(op, backend):
    host, from_host = backend.to_host, backend.from_host

    def compute(s0, s1):  # shape metadata: computed on the host (TF's HostMemory inputs and outputs)
        s0, s1 = [int(d) for d in host(s0)], [int(d) for d in host(s1)]
        rank = max(len(s0), len(s1))
        a = [1] * (rank - len(s0)) + list(s0)
        b = [1] * (rank - len(s1)) + list(s1)
        r0 = [i for i in range(rank) if a[i] == 1 and b[i] != 1 or i < rank - len(s0)]
        r1 = [i for i in range(rank) if b[i] == 1 and a[i] != 1 or i < rank - len(s1)]
        return from_host(np.asarray(r0, np.int32)), from_host(np.asarray(r1, np.int32))

    return compute


registry.NotDifferentiable("BroadcastGradientArgs")


# -- binary -------------------------------------------------------------------------
@registry.RegisterGradient("AddV2")
@registry.RegisterGradient("Add")
def _add_grad(op, grad):
    x, y = op.inputs
    return unbroadcast(grad, x, y), unbroadcast(grad, y, x)


@registry.RegisterGradient("Sub")
def _sub_grad(op, grad):
    x, y = op.inputs
    return unbroadcast(grad, x, y), unbroadcast(math_ops.negative(grad), y, x)


@registry.RegisterGradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return unbroadcast(math_ops.multiply(grad, y), x, y), unbroadcast(math_ops.multiply(x, grad), y, x)


@registry.RegisterGradient("RealDiv")
def _real_div_grad(op, grad):
    x, y = op.inputs
    gx = math_ops.realdiv(grad, y)
    gy = math_ops.multiply(grad, math_ops.realdiv(math_ops.realdiv(math_ops.negative(x), y), y))
    return unbroadcast(gx, x, y), unbroadcast(gy, y, x)


def _select_grad(op, grad, x_wins):
    """Gradient of Maximum/Minimum: to x where ``x_wins(x, y)`` (ties included), else to y."""
    x, y = op.inputs
    gx = math_ops.multiply(grad, math_ops.cast(x_wins(x, y), grad.dtype))
    gy = math_ops.subtract(grad, gx)
    return unbroadcast(gx, x, y), unbroadcast(gy, y, x)


@registry.RegisterGradient("Maximum")
def _maximum_grad(op, grad):
    return _select_grad(op, grad, math_ops.greater_equal)


@registry.RegisterGradient("Minimum")
def _minimum_grad(op, grad):
    return _select_grad(op, grad, math_ops.less_equal)


@registry.RegisterGradient("Pow")
def _pow_grad(op, grad):
    """``d(x^y)/dx = y·x^(y-1)``; ``d(x^y)/dy = x^y·log(x)``, taken as 0 where ``x <= 0`` (TF)."""
    x, y = op.inputs
    z = op.outputs[0]
    gx = math_ops.multiply(math_ops.multiply(grad, y), math_ops.pow(x, math_ops.subtract(y, 1)))
    positive = math_ops.cast(math_ops.greater(x, 0), x.dtype)
    log_x = math_ops.log(math_ops.maximum(x, math_ops.subtract(1, positive)))
    gy = math_ops.multiply(math_ops.multiply(grad, z), log_x)
    return unbroadcast(gx, x, y), unbroadcast(gy, y, x)


@registry.RegisterGradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    gx = math_ops.multiply(math_ops.scalar_mul(2.0, grad), math_ops.subtract(x, y))
    return unbroadcast(gx, x, y), unbroadcast(math_ops.negative(gx), y, x)


@registry.RegisterGradient("FloorMod")
def _floor_mod_grad(op, grad):
    x, y = op.inputs
    gy = math_ops.multiply(grad, math_ops.negative(math_ops.floordiv(x, y)))
    return unbroadcast(grad, x, y), unbroadcast(gy, y, x)


# -- unary --------------------------------------------------------------------------
@registry.RegisterGradient("Neg")
def _neg_grad(op, grad):
    return math_ops.negative(grad)


@registry.RegisterGradient("Square")
def _square_grad(op, grad):
    return math_ops.multiply(grad, math_ops.multiply(op.inputs[0], 2.0))


@registry.RegisterGradient("Sqrt")
def _sqrt_grad(op, grad):
    return math_ops.realdiv(math_ops.multiply(grad, 0.5), op.outputs[0])


@registry.RegisterGradient("Rsqrt")
def _rsqrt_grad(op, grad):
    y = op.outputs[0]
    return math_ops.multiply(math_ops.multiply(grad, -0.5), math_ops.multiply(math_ops.square(y), y))


@registry.RegisterGradient("Exp")
def _exp_grad(op, grad):
    return math_ops.multiply(grad, op.outputs[0])


@registry.RegisterGradient("Log")
def _log_grad(op, grad):
    return math_ops.multiply(grad, math_ops.reciprocal(op.inputs[0]))


@registry.RegisterGradient("Log1p")
def _log1p_grad(op, grad):
    return math_ops.multiply(grad, math_ops.reciprocal(math_ops.add(1.0, op.inputs[0])))


@registry.RegisterGradient("Abs")
def _abs_grad(op, grad):
    return math_ops.multiply(grad, math_ops.sign(op.inputs[0]))


@registry.RegisterGradient("Sign")
def _sign_grad(op, grad):
    return array_ops.zeros_like(op.inputs[0])


@registry.RegisterGradient("Reciprocal")
def _reciprocal_grad(op, grad):
    return math_ops.multiply(math_ops.negative(grad), math_ops.square(op.outputs[0]))


@registry.RegisterGradient("Sigmoid")
def _sigmoid_grad(op, grad):
    y = op.outputs[0]
    return math_ops.multiply(grad, math_ops.multiply(y, math_ops.subtract(1.0, y)))


@registry.RegisterGradient("Tanh")
def _tanh_grad(op, grad):
    return math_ops.multiply(grad, math_ops.subtract(1.0, math_ops.square(op.outputs[0])))


@registry.RegisterGradient("Cast")
def _cast_grad(op, grad):
    src = op.get_attr("SrcT")
    return math_ops.cast(grad, src) if src.is_floating else None


# -- n-ary, matmul, scans ----------------------------------------------------------
@registry.RegisterGradient("AddN")
@registry.RegisterGradient("AccumulateNV2")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


def _matmul_grads(a, b, grad, ta, tb):
    """Gradients of ``matmul(a, b, ta, tb)`` w.r.t. a and b (TF's four cases)."""
    mm = math_ops.matmul
    if not ta and not tb:
        return mm(grad, b, transpose_b=True), mm(a, grad, transpose_a=True)
    if not ta and tb:
        return mm(grad, b), mm(grad, a, transpose_a=True)
    if ta and not tb:
        return mm(b, grad, transpose_b=True), mm(a, grad)
    return mm(b, grad, transpose_a=True, transpose_b=True), mm(grad, a, transpose_a=True, transpose_b=True)


@registry.RegisterGradient("MatMul")
def _matmul_grad(op, grad):
    a, b = op.inputs
    return _matmul_grads(a, b, grad, op.get_attr("transpose_a"), op.get_attr("transpose_b"))


@registry.RegisterGradient("BatchMatMul")
def _batch_matmul_grad(op, grad):
    x, y = op.inputs
    return _matmul_grads(x, y, grad, op.get_attr("adj_x"), op.get_attr("adj_y"))


@registry.RegisterGradient("Cumsum")
def _cumsum_grad(op, grad):
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    return math_ops.cumsum(grad, op.inputs[1], exclusive=exclusive, reverse=not reverse), None


from . import linalg_grad, reduction_grad  # noqa: E402,F401 - register the reduction and linalg gradients
