"""``tf.image``: resizing, flips, crops and pads, brightness and contrast (fixed and random), per-image
standardization, dtype conversion (see :mod:`dfcore.ops.image_ops` and the modules beside it)."""

from .ops.image_convert import convert_image_dtype
from .ops.image_ops import (
    adjust_brightness,
    adjust_contrast,
    central_crop,
    flip_left_right,
    flip_up_down,
    per_image_standardization,
    resize_image_with_crop_or_pad,
)
from .ops.image_random import (
    random_brightness,
    random_contrast,
    random_crop,
    random_flip_left_right,
    random_flip_up_down,
)
from .ops.image_resize import ResizeMethod, resize_bilinear, resize_images, resize_nearest_neighbor

resize = resize_images  # TF 1.x's tf.image.resize is resize_images

__all__ = ["ResizeMethod", "adjust_brightness", "adjust_contrast", "central_crop", "convert_image_dtype",
           "flip_left_right", "flip_up_down", "per_image_standardization", "random_brightness", "random_contrast",
           "random_crop", "random_flip_left_right", "random_flip_up_down", "resize", "resize_bilinear",
           "resize_image_with_crop_or_pad", "resize_images", "resize_nearest_neighbor"]


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.image", name)
