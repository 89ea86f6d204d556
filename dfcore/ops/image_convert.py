"""``tf.image.convert_image_dtype`` and ``tf.saturate_cast``: images between integer and float encodings.

Source: ``tensorflow/python/ops/image_ops_impl.py`` (``convert_image_dtype``) and ``math_ops.py``
(``saturate_cast``). Floats hold pixel values in ``[0, 1]``, integers in ``[0, dtype.max]``: integer to
integer shifts by the ratio of the ranges (``(max_out + 1) // (max_in + 1)``), integer to float multiplies by
``1 / max_in``, float to integer multiplies by ``max_out + 0.5`` then casts (wrapping out-of-range values
as a C cast does, unless ``saturate``). Built from ``Cast``/``Mul``/``FloorDiv``/clipping ops, so the
float paths have those ops' gradients.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..framework import dtypes
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from . import math_ops
from .array_ops import identity

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import DTypeLike, TensorLike

__all__ = ["convert_image_dtype", "saturate_cast"]


def saturate_cast(value: TensorLike, dtype: DTypeLike, name: str | None = None) -> Tensor:
    """``value`` cast to ``dtype``, first clipped to the range both dtypes can hold (no wrap-around)."""
    with name_scope(name, "saturate_cast", [value]) as name:
        value = convert_to_tensor(value, name="value")
        dtype = dtypes.as_dtype(dtype).base_dtype
        source = value.dtype.base_dtype
        if source.min < dtype.min:
            value = math_ops.maximum(value, math_ops.cast(dtype.min, source))
        if source.max > dtype.max:
            value = math_ops.minimum(value, math_ops.cast(dtype.max, source))
        return math_ops.cast(value, dtype, name=name)


def convert_image_dtype(image: TensorLike, dtype: DTypeLike, saturate: bool = False, name: str | None = None) -> Tensor:
    """``image`` (any shape) in ``dtype``, its values rescaled between the two dtypes' pixel ranges.

    Raises:
        AttributeError: ``dtype`` is neither an integer nor a floating dtype (TF's check).
    """
    image = convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise AttributeError("dtype must be either floating point or integer")
    source = image.dtype.base_dtype
    if dtype == source:
        return identity(image, name=name)
    with name_scope(name, "convert_image", [image]) as name:
        if source.is_integer and dtype.is_integer:
            scale_in, scale_out = source.max, dtype.max
            if scale_in > scale_out:
                scaled = math_ops.floordiv(image, math_ops.cast((scale_in + 1) // (scale_out + 1), source))
                return math_ops.cast(scaled, dtype, name=name)
            cast = math_ops.cast(image, dtype)
            return math_ops.multiply(cast, math_ops.cast((scale_out + 1) // (scale_in + 1), dtype), name=name)
        if source.is_floating and dtype.is_floating:
            return math_ops.cast(image, dtype, name=name)
        if source.is_integer:
            cast = math_ops.cast(image, dtype)
            return math_ops.multiply(cast, math_ops.cast(1.0 / source.max, dtype), name=name)
        scaled = math_ops.multiply(image, math_ops.cast(dtype.max + 0.5, source))
        return saturate_cast(scaled, dtype, name=name) if saturate else math_ops.cast(scaled, dtype, name=name)
