"""``tf.reverse`` (``tf.reverse_v2``): a tensor with the order of its elements along some axes reversed
(op ``ReverseV2``).

Source: ``tensorflow/core/ops/array_ops.cc`` (``ReverseV2``) and ``core/kernels/reverse_op.cc``: ``axis``
is a 1-D int vector, negative entries count from the end; an axis out of range or named twice is an
InvalidArgumentError. The gradient reverses the incoming gradient along the same axes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import registry
from . import common_shapes
from .array_ops_util import INDEX_TYPES, scoped_op

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["reverse", "reverse_v2"]


def reverse(tensor: TensorLike, axis: TensorLike, name: str | None = None) -> Tensor:
    """``tensor`` (any shape and dtype) reversed along each axis in ``axis`` (an int32/int64 vector)."""
    return scoped_op("ReverseV2", name, [("tensor", tensor, None), ("axis", axis, INDEX_TYPES)]).outputs[0]


reverse_v2 = reverse

registry.RegisterShape("ReverseV2")(common_shapes.unchanged)


def _axes(op, axis, rank):
    axes = [int(a) for a in np.reshape(axis, -1)]
    for a in axes:
        if not -rank <= a < rank:
            raise errors.InvalidArgumentError(None, op, f"'axis'[{axes.index(a)}] = {a} is out of valid range "
                                                        f"[0, {rank - 1}")
    normal = [a % rank for a in axes]
    if len(set(normal)) != len(normal):
        raise errors.InvalidArgumentError(None, op, f"axis {normal[0]} specified more than once.")
    return tuple(normal)


@registry.RegisterArrayKernel("ReverseV2")
def _reverse_kernel(op, backend):
    xp, host = backend.xp, backend.to_host

    def compute(tensor, axis):
        axes = _axes(op, host(axis), tensor.ndim)
        return xp.flip(tensor, axis=axes) if axes else tensor

    return compute


@registry.RegisterGradient("ReverseV2")
def _reverse_grad(op, grad):
    return [reverse(grad, op.inputs[1]), None]
