"""``tf.image``'s random augmentations (``random_flip_left_right``, ``random_flip_up_down``,
``random_brightness``, ``random_contrast``) and ``tf.random_crop``.

Source: ``tensorflow/python/ops/image_ops_impl.py`` and ``random_ops.py`` (``random_crop``). Each draws from
a ``RandomUniform``/``RandomUniformInt`` op, so dfcore's seed rules apply (graph seed and op seed, see
:mod:`dfcore.ops.random_ops`): the same seeds give the same choices in a new session, but not TF's numbers
(TF's generator is Philox). A single image is flipped with probability 1/2 through ``cond``; a batch
chooses per image.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..framework import dtypes
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from . import math_ops
from .array_ops import reshape, shape as shape_of
from .array_ops_layout import expand_dims
from .array_ops_reverse import reverse
from .array_ops_slice import slice as slice_
from .control_flow_cond import cond
from .control_flow_ops import Assert, with_dependencies
from .image_ops import adjust_brightness, adjust_contrast, image_tensor
from .random_ops import random_uniform
from .reductions import reduce_all

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["random_brightness", "random_contrast", "random_crop", "random_flip_left_right", "random_flip_up_down"]


def _random_flip(image, axis_from_end, seed, scope):
    with name_scope(None, scope, [image]) as scope:
        image = image_tensor(image)
        if image.shape.ndims == 3:
            mirror = math_ops.less(random_uniform([], 0, 1.0, seed=seed), 0.5)
            return cond(mirror, lambda: reverse(image, [-axis_from_end]), lambda: image, name=scope)
        batch = shape_of(image)[0]
        flips = math_ops.round(random_uniform(expand_dims(batch, 0), 0, 1.0, seed=seed))
        flips = math_ops.cast(reshape(flips, [-1, 1, 1, 1]), image.dtype)
        return math_ops.add(math_ops.multiply(flips, reverse(image, [-axis_from_end])),
                            math_ops.multiply(math_ops.subtract(math_ops.cast(1, image.dtype), flips), image))


def random_flip_left_right(image: TensorLike, seed: int | None = None) -> Tensor:
    """``image`` (``[h, w, c]`` or ``[batch, h, w, c]``) mirrored left-right with probability 1/2."""
    return _random_flip(image, 2, seed, "random_flip_left_right")


def random_flip_up_down(image: TensorLike, seed: int | None = None) -> Tensor:
    """``image`` (``[h, w, c]`` or ``[batch, h, w, c]``) mirrored up-down with probability 1/2."""
    return _random_flip(image, 3, seed, "random_flip_up_down")


def random_brightness(image: TensorLike, max_delta: TensorLike, seed: int | None = None) -> Tensor:
    """:func:`adjust_brightness` by a delta uniform in ``[-max_delta, max_delta)``.

    Raises:
        ValueError: ``max_delta`` negative (TF's wording).
    """
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, random_uniform([], -max_delta, max_delta, seed=seed))


def random_contrast(image: TensorLike, lower: TensorLike, upper: TensorLike, seed: int | None = None) -> Tensor:
    """:func:`adjust_contrast` by a factor uniform in ``[lower, upper)``.

    Raises:
        ValueError: ``upper <= lower`` or ``lower < 0`` (TF's wording).
    """
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    return adjust_contrast(image, random_uniform([], lower, upper, seed=seed))


def random_crop(value: TensorLike, size: TensorLike, seed: int | None = None, name: str | None = None) -> Tensor:
    """A ``size`` (int32 vector, one entry per axis) window of ``value`` at a uniformly random offset.

    Raises (when run) InvalidArgumentError: ``value``'s shape smaller than ``size`` somewhere
    ("Need value.shape >= size, got ...", as TF's Assert).
    """
    with name_scope(name, "random_crop", [value, size]) as name:
        value = convert_to_tensor(value, name="value")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        shape = shape_of(value)
        check = Assert(reduce_all(math_ops.greater_equal(shape, size)),
                       ["Need value.shape >= size, got ", shape, size], summarize=1000)
        shape = with_dependencies([check], shape)
        limit = math_ops.add(math_ops.subtract(shape, size), 1)
        offset = math_ops.floormod(random_uniform(shape_of(shape), dtype=size.dtype, maxval=size.dtype.max,
                                                  seed=seed), limit)
        return slice_(value, offset, size, name=name)
