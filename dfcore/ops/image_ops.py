"""``tf.image``'s deterministic ops: flips, brightness and contrast, per-image standardization, centred
crops and pads.

Source: ``tensorflow/python/ops/image_ops_impl.py``. Images are ``[height, width, channels]`` or batches
``[batch, height, width, channels]``. Brightness and contrast work in float: integer images are converted
to float32 with :func:`convert_image_dtype` and back (saturating), float16/float32 ones are kept as they
are. Built from existing ops (``ReverseV2``, ``Slice``, ``Pad``, ``Mean`` ...), so each has their gradients.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..framework import dtypes
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from . import math_ops
from .array_ops_layout import pad
from .array_ops_reverse import reverse
from .array_ops_slice import slice as slice_
from .image_convert import convert_image_dtype
from .nn_ops import relu
from .reductions import reduce_mean

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["adjust_brightness", "adjust_contrast", "central_crop", "flip_left_right", "flip_up_down",
           "per_image_standardization", "resize_image_with_crop_or_pad"]


def image_tensor(image: TensorLike, name: str = "image") -> Tensor:
    """``image`` as a Tensor of rank 3 or more (or unknown rank).

    Raises:
        ValueError: rank below 3 (TF's ``_Assert3DImage`` wording).
    """
    image = convert_to_tensor(image, name=name)
    if image.shape.ndims is not None and image.shape.ndims < 3:
        raise ValueError(f"'image' (shape {image.shape}) must be at least three-dimensional.")
    return image


def _flip(image, axis_from_end, name, scope):
    with name_scope(name, scope, [image]):
        image = image_tensor(image)
        return reverse(image, [-axis_from_end])


def flip_left_right(image: TensorLike, name: str | None = None) -> Tensor:
    """``image`` mirrored along its width axis (``-2``)."""
    return _flip(image, 2, name, "flip_left_right")


def flip_up_down(image: TensorLike, name: str | None = None) -> Tensor:
    """``image`` mirrored along its height axis (``-3``)."""
    return _flip(image, 3, name, "flip_up_down")


def _in_float(image, adjust):
    """``adjust(float image)`` converted back to ``image``'s dtype (saturating), as TF's adjusters do."""
    original = image.dtype.base_dtype
    as_float = image if original in (dtypes.float16, dtypes.float32) else convert_image_dtype(image, dtypes.float32)
    return convert_image_dtype(adjust(as_float), original, saturate=True)


def adjust_brightness(image: TensorLike, delta: TensorLike, name: str | None = None) -> Tensor:
    """``image + delta`` (``delta`` a float scalar, in the float pixel range ``[0, 1]``), same shape and dtype."""
    with name_scope(name, "adjust_brightness", [image, delta]):
        image = convert_to_tensor(image, name="image")
        return _in_float(image, lambda flt: math_ops.add(flt, math_ops.cast(delta, flt.dtype)))


def adjust_contrast(images: TensorLike, contrast_factor: TensorLike, name: str | None = None) -> Tensor:
    """Each channel's pixels moved away from (factor > 1) or toward their mean: ``(x - mean) * factor + mean``
    with the mean over height and width, per image and channel."""
    with name_scope(name, "adjust_contrast", [images, contrast_factor]):
        images = image_tensor(images, "images")

        def adjust(flt):
            mean = reduce_mean(flt, axis=[-3, -2], keepdims=True)
            factor = math_ops.cast(contrast_factor, flt.dtype)
            return math_ops.add(math_ops.multiply(math_ops.subtract(flt, mean), factor), mean)

        return _in_float(images, adjust)


def per_image_standardization(image: TensorLike, name: str | None = None) -> Tensor:
    """float32 ``(x - mean) / max(stddev, 1 / sqrt(num_pixels))`` over each image's height, width and channels
    (zero mean, unit variance; a constant image gives zeros)."""
    with name_scope(name, "per_image_standardization", [image]):
        image = math_ops.cast(image_tensor(image), dtypes.float32)
        dims = image.shape.as_list()[-3:]
        if None in dims:
            raise ValueError(f"per_image_standardization needs static height, width and channels, got {dims}")
        mean = reduce_mean(image, axis=[-1, -2, -3], keepdims=True)
        variance = relu(math_ops.subtract(reduce_mean(math_ops.square(image), axis=[-1, -2, -3], keepdims=True),
                                          math_ops.square(mean)))
        min_stddev = 1.0 / float(dims[0] * dims[1] * dims[2]) ** 0.5
        scale = math_ops.maximum(math_ops.sqrt(variance), min_stddev)
        return math_ops.divide(math_ops.subtract(image, mean), scale)


def _static_hw(image):
    dims = image.shape.as_list()
    if None in dims[-3:-1]:
        raise ValueError(f"dfcore needs the image's static height and width here, got shape {image.shape}")
    return dims[-3], dims[-2]


def _window(image, top, left, height, width):
    """The ``height x width`` window at ``(top, left)`` of the last three axes (channels whole)."""
    lead = image.shape.ndims - 3
    return slice_(image, [0] * lead + [top, left, 0], [-1] * lead + [height, width, -1])


def resize_image_with_crop_or_pad(image: TensorLike, target_height: int, target_width: int) -> Tensor:
    """``image`` centred in ``target_height x target_width``: cropped evenly where larger, zero-padded evenly
    where smaller (the extra pixel of an odd difference goes after, bottom or right).

    Raises:
        ValueError: a target not positive (TF's wording), or unknown static height or width.
    """
    with name_scope(None, "resize_image_with_crop_or_pad", [image]):
        image = image_tensor(image)
        for label, target in (("target_height", target_height), ("target_width", target_width)):
            if target <= 0:
                raise ValueError(f"{label} must be > 0.")
        height, width = _static_hw(image)
        top, left = max((height - target_height) // 2, 0), max((width - target_width) // 2, 0)
        cropped = _window(image, top, left, min(height, target_height), min(width, target_width))
        pad_top, pad_left = max((target_height - height) // 2, 0), max((target_width - width) // 2, 0)
        lead = [[0, 0]] * (image.shape.ndims - 3)
        paddings = lead + [[pad_top, max(target_height - height, 0) - pad_top],
                           [pad_left, max(target_width - width, 0) - pad_left], [0, 0]]
        return pad(cropped, paddings) if any(any(p) for p in paddings) else cropped


def central_crop(image: TensorLike, central_fraction: float) -> Tensor:
    """The central ``central_fraction`` of ``image``'s height and width: starts ``int((size - size * f) / 2)``,
    the same margin both sides.

    Raises:
        ValueError: ``central_fraction`` outside ``(0, 1]`` (TF's wording), or unknown static height or width.
    """
    with name_scope(None, "central_crop", [image]):
        image = image_tensor(image)
        if central_fraction <= 0.0 or central_fraction > 1.0:
            raise ValueError("central_fraction must be within (0, 1]")
        if central_fraction == 1.0:
            return image
        height, width = _static_hw(image)
        top, left = int((height - height * central_fraction) / 2), int((width - width * central_fraction) / 2)
        return _window(image, top, left, height - 2 * top, width - 2 * left)
