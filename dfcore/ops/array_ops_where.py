"""``tf.where`` (TF 1.x): ``Select`` picks from x or y by a condition; ``Where`` lists the true coordinates.

Source: ``tensorflow/python/ops/array_ops.py`` (``where``), ``core/ops/array_ops.cc`` (``Select``,
``Where``) and ``array_grad.py`` (``_SelectGrad``). TF 1.x's ``Select`` does not broadcast: the
condition has x's shape, or is a scalar, or a vector as long as x's first dimension (then it picks rows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from . import common_shapes
from .array_ops_util import merge_shapes, scoped_op

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["where"]


def where(condition: TensorLike, x: TensorLike = None, y: TensorLike = None, name: str | None = None) -> Tensor:
    """``x`` where ``condition`` is true, else ``y`` (``Select``); with neither x nor y, the int64 coordinates
    ``[num_true, rank(condition)]`` of the true entries of ``condition``, in row-major order (``Where``).

    ``condition`` is bool: x's shape, a scalar, or a vector of x's first dimension (picks whole rows).
    Raises:
        ValueError: only one of x and y given (TF's wording).
        InvalidArgumentError: x and y shapes differ, or the condition fits neither form (names the op).
    Source: ``tensorflow/python/ops/array_ops.py``.
    """
    if x is None and y is None:
        return scoped_op("Where", name, [("input", condition, (dtypes.bool,))]).outputs[0]
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    inputs = [("condition", condition, (dtypes.bool,)), ("t", x, None), ("e", y, None)]
    return scoped_op("Select", name, inputs).outputs[0]


@registry.RegisterShape("Select")
def _select_shape(op):
    condition, x, y = op.inputs
    if x.dtype.base_dtype is not y.dtype.base_dtype:
        raise TypeError(f"Input 'e' of 'Select' Op has type {y.dtype.base_dtype.name} that does not match type "
                        f"{x.dtype.base_dtype.name} of argument 't'.")
    shape = merge_shapes(op, x.shape, y.shape)
    c_rank, x_rank = condition.shape.ndims, shape.ndims
    if c_rank is None or x_rank is None or c_rank == 0:
        return [(x.dtype.base_dtype, shape)]
    if c_rank == x_rank:
        return [(x.dtype.base_dtype, merge_shapes(op, condition.shape, shape))]
    if c_rank == 1 and x_rank > 1:
        first = merge_shapes(op, condition.shape, shape[:1])
        return [(x.dtype.base_dtype, first.concatenate(shape[1:]))]
    raise common_shapes.shape_error(op, f"Shape must be rank 0, 1 or {x_rank} but is rank {c_rank}")


@registry.RegisterArrayKernel("Select")
def _select_kernel(op, backend):
    xp = backend.xp

    def compute(condition, x, y):
        condition, x_shape = xp.asarray(condition), tuple(x.shape)
        if x_shape != tuple(y.shape):
            raise errors.InvalidArgumentError(None, op, f"'then' and 'else' must have the same size.  but received: "
                                                        f"{list(x_shape)} vs. {list(y.shape)}")
        if condition.ndim == 1 and x.ndim > 1:
            if condition.shape[0] != x_shape[0]:
                raise errors.InvalidArgumentError(None, op, f"Number of batches of 'then' must match size of 'cond', "
                                                            f"but saw: {x_shape[0]} vs. {condition.shape[0]}")
            condition = xp.reshape(condition, (-1,) + (1,) * (x.ndim - 1))
        elif condition.ndim not in (0, x.ndim) or (condition.ndim and tuple(condition.shape) != x_shape):
            raise errors.InvalidArgumentError(None, op, f"'cond' and 'then' must have the same shape: "
                                                        f"{list(condition.shape)} vs. {list(x_shape)}")
        return xp.where(condition, x, y)

    return compute


@registry.RegisterGradient("Select")
def _select_grad(op, grad):
    from .array_ops import zeros_like

    zeros = zeros_like(op.inputs[1])
    condition = op.inputs[0]
    return None, where(condition, grad, zeros), where(condition, zeros, grad)


@registry.RegisterShape("Where")
def _where_shape(op):
    rank = op.inputs[0].shape.ndims
    return [(dtypes.int64, TensorShape([None, rank]) if rank is not None else TensorShape([None, None]))]


registry.RegisterKernel("Where")(lambda op: lambda condition: np.argwhere(np.asarray(condition)).astype(np.int64))
registry.NotDifferentiable("Where")
