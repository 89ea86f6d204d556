"""Shape functions shared by many ops, with TF's error wording.

Source: ``tensorflow/core/framework/common_shape_fns.cc``. Each returns the
``[(DType, TensorShape)]`` list a registered shape function must return.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import errors
from ..framework.tensor_shape import TensorShape

if TYPE_CHECKING:
    from ..framework.dtypes import DType
    from ..framework.operation import Operation


def shape_error(op: Operation, message: str) -> errors.InvalidArgumentError:
    """InvalidArgumentError in TF's form: ``<message> for '<name>' (op: '<Type>') with input shapes: [2,3], [4].``"""
    shapes = ", ".join(t.shape.tf_str() for t in op.inputs)
    return errors.InvalidArgumentError(None, op, f"{message} for '{op.name}' (op: '{op.type}') with input shapes: "
                                                 f"{shapes}.")


def unchanged(op: Operation) -> list[tuple[DType, TensorShape]]:
    """One output with the first input's dtype and shape."""
    x = op.inputs[0]
    return [(x.dtype.base_dtype, x.shape)]


def scalar_of(dtype: DType) -> Callable[[Operation], list[tuple[DType, TensorShape]]]:
    return lambda op: [(dtype, TensorShape([]))]


def no_outputs(op: Operation) -> list[tuple[DType, TensorShape]]:
    return []


def broadcast_dims(op: Operation, a: TensorShape, b: TensorShape) -> TensorShape:
    """numpy broadcasting of two static shapes; unknown dims stay unknown."""
    if a.ndims is None or b.ndims is None:
        return TensorShape(None)
    da, db = a.as_list(), b.as_list()
    rank = max(len(da), len(db))
    da = [1] * (rank - len(da)) + da
    db = [1] * (rank - len(db)) + db
    out = []
    for x, y in zip(da, db):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        elif x == y:
            out.append(x)
        else:
            raise shape_error(op, f"Dimensions must be equal, but are {x} and {y}")
    return TensorShape(out)


def broadcast_binary(op: Operation) -> list[tuple[DType, TensorShape]]:
    """Elementwise binary op: same dtype, broadcast shape."""
    x, y = op.inputs
    return [(x.dtype.base_dtype, broadcast_dims(op, x.shape, y.shape))]


def broadcast_binary_bool(op: Operation) -> list[tuple[DType, TensorShape]]:
    """Comparison: broadcast shape, bool output."""
    from ..framework import dtypes

    x, y = op.inputs
    return [(dtypes.bool, broadcast_dims(op, x.shape, y.shape))]


def require_same_dtype(op: Operation) -> DType:
    first = op.inputs[0].dtype.base_dtype
    for i, tensor in enumerate(op.inputs[1:], start=1):
        if tensor.dtype.base_dtype is not first:
            raise TypeError(
                f"Input {i} of '{op.name}' Op has type {tensor.dtype.base_dtype.name} that does not match type "
                f"{first.name} of input 0."
            )
    return first
