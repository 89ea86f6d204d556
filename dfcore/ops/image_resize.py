"""``tf.image.resize_images`` (TF 1.x's ``tf.image.resize``), ``resize_bilinear``, ``resize_nearest_neighbor``
and their gradients (ops ``ResizeBilinear``, ``ResizeNearestNeighbor``, ``ResizeBilinearGrad``,
``ResizeNearestNeighborGrad``).

Source: ``tensorflow/python/ops/image_ops_impl.py`` and ``core/kernels/resize_bilinear_op.cc`` /
``resize_nearest_neighbor_op.cc``. Output pixel ``d`` samples input coordinate ``d * in / out`` (TF 1.x's
default), ``d * (in - 1) / (out - 1)`` with ``align_corners``, ``(d + 0.5) * in / out - 0.5`` with
``half_pixel_centers``. Bilinear interpolates the 2x2 neighbours (output float32, whatever the input);
nearest takes ``floor`` of the coordinate (``round`` with ``align_corners``) and keeps the dtype. Each
method is a pair of sampling matrices ``[out, in]`` for rows and columns, so the gradient is the
transposed product.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from .array_ops import constant_value, shape
from .array_ops_layout import expand_dims, squeeze
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["ResizeMethod", "resize_bilinear", "resize_images", "resize_nearest_neighbor"]


class ResizeMethod:
    """The ``method`` values of :func:`resize_images` (TF's numbering)."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def _resize_op(op_type, images, size, align_corners, half_pixel_centers, name):
    attrs = {"align_corners": bool(align_corners), "half_pixel_centers": bool(half_pixel_centers)}
    size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
    return apply_op1(op_type, [images, size], attrs, name or op_type)


def resize_bilinear(images: TensorLike, size: TensorLike, align_corners: bool = False, name: str | None = None,
                    half_pixel_centers: bool = False) -> Tensor:
    """``[batch, size[0], size[1], channels]`` float32 from ``[batch, height, width, channels]`` images."""
    return _resize_op("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


def resize_nearest_neighbor(images: TensorLike, size: TensorLike, align_corners: bool = False, name: str | None = None,
                            half_pixel_centers: bool = False) -> Tensor:
    """``[batch, size[0], size[1], channels]`` of the images' dtype, each pixel its nearest source pixel."""
    return _resize_op("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers, name)


_METHODS = {ResizeMethod.BILINEAR: resize_bilinear, ResizeMethod.NEAREST_NEIGHBOR: resize_nearest_neighbor}


def resize_images(images: TensorLike, size: TensorLike, method: int = ResizeMethod.BILINEAR,
                  align_corners: bool = False, preserve_aspect_ratio: bool = False, name: str | None = None) -> Tensor:
    """``images`` (``[batch, h, w, c]`` or ``[h, w, c]``) resized to ``size`` (``[new_h, new_w]`` int32).

    A static ``size`` equal to the images' own returns them unchanged (dtype kept), as TF does.
    Raises:
        ValueError: images not 3-D or 4-D, or ``size`` not a 2-vector (TF's wording).
        NotImplementedError: BICUBIC or AREA, or ``preserve_aspect_ratio`` (not in dfcore).
    """
    if method not in _METHODS:
        raise NotImplementedError(f"resize_images: method {method} is not implemented in dfcore "
                                  "(BILINEAR and NEAREST_NEIGHBOR are)")
    if preserve_aspect_ratio:
        raise NotImplementedError("resize_images: preserve_aspect_ratio is not implemented in dfcore")
    with name_scope(name, "resize", [images, size]):
        images = convert_to_tensor(images, name="images")
        if images.shape.ndims not in (None, 3, 4):
            raise ValueError("'images' must have either 3 or 4 dimensions.")
        batched = images.shape.ndims != 3
        if not batched:
            images = expand_dims(images, 0)
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        if size.shape.ndims is not None and size.shape.as_list() != [2]:
            raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
        static = constant_value(size)
        if static is not None and images.shape.ndims == 4 and list(static) == images.shape.as_list()[1:3]:
            resized = images
        else:
            resized = _METHODS[method](images, size, align_corners=align_corners)
        return resized if batched else squeeze(resized, [0])


@registry.RegisterShape("ResizeBilinear")
@registry.RegisterShape("ResizeNearestNeighbor")
def _resize_shape(op):
    images, size = op.inputs
    dims = [None] * 4 if images.shape.ndims is None else images.shape.as_list()
    if len(dims) != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {len(dims)} for '{op.name}' (op: '{op.type}')")
    static = constant_value(size)
    new = [None, None] if static is None else [int(v) for v in np.reshape(static, -1)]
    dtype = dtypes.float32 if op.type == "ResizeBilinear" else images.dtype.base_dtype
    return [(dtype, TensorShape([dims[0], *new, dims[3]]))]


def _coordinates(op, bilinear, in_size, out_size):
    """The source coordinate of each output pixel along one axis, as TF's kernels compute it (nearest
    neighbour's half-pixel scaler has no ``- 0.5``)."""
    if op.get_attr("align_corners") and out_size > 1:
        scale = (in_size - 1) / (out_size - 1)
    else:
        scale = in_size / out_size
    positions = np.arange(out_size, dtype=np.float64)
    if op.get_attr("half_pixel_centers"):
        return (positions + 0.5) * scale - (0.5 if bilinear else 0.0)
    return positions * scale


def _matrix(op, bilinear, in_size, out_size):
    """The ``[out, in]`` sampling matrix of one axis (float64)."""
    coords = _coordinates(op, bilinear, in_size, out_size)
    matrix = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    if bilinear:
        low = np.floor(coords)
        lerp = coords - low
        top = np.clip(low, 0, in_size - 1).astype(np.int64)
        bottom = np.clip(np.ceil(coords) if op.get_attr("half_pixel_centers") else low + 1, 0,
                         in_size - 1).astype(np.int64)
        np.add.at(matrix, (rows, top), 1.0 - lerp)
        np.add.at(matrix, (rows, bottom), lerp)
    else:
        index = np.floor(coords + 0.5) if op.get_attr("align_corners") else np.floor(coords)  # C roundf
        matrix[rows, np.clip(index, 0, in_size - 1).astype(np.int64)] = 1.0
    return matrix


def _matrices(op, bilinear, in_hw, out_hw):
    if min(out_hw) <= 0:
        raise errors.InvalidArgumentError(None, op, f"output dimensions must be positive, got {list(out_hw)}")
    return _matrix(op, bilinear, in_hw[0], out_hw[0]), _matrix(op, bilinear, in_hw[1], out_hw[1])


@registry.RegisterKernel("ResizeBilinear")
def _resize_bilinear_kernel(op):
    def compute(images, size):
        rows, cols = _matrices(op, True, images.shape[1:3], [int(v) for v in size])
        out = np.einsum("yh,bhwc,xw->byxc", rows, images.astype(np.float64), cols)
        return out.astype(np.float32)

    return compute


@registry.RegisterKernel("ResizeNearestNeighbor")
def _resize_nearest_kernel(op):
    def compute(images, size):
        rows, cols = _matrices(op, False, images.shape[1:3], [int(v) for v in size])
        return images[:, rows.argmax(axis=1)][:, :, cols.argmax(axis=1)]

    return compute


def _grad_kernel(bilinear):
    def factory(op):
        def compute(grads, original):
            in_hw = original.shape[1:3] if bilinear else [int(v) for v in original]
            rows, cols = _matrices(op, bilinear, in_hw, grads.shape[1:3])
            out = np.einsum("yh,byxc,xw->bhwc", rows, grads.astype(np.float64), cols)
            return out.astype(original.dtype if bilinear else grads.dtype)

        return compute

    return factory


registry.RegisterKernel("ResizeBilinearGrad")(_grad_kernel(True))
registry.RegisterKernel("ResizeNearestNeighborGrad")(_grad_kernel(False))


@registry.RegisterShape("ResizeBilinearGrad")
def _resize_bilinear_grad_shape(op):
    return [(op.inputs[1].dtype.base_dtype, op.inputs[1].shape)]


@registry.RegisterShape("ResizeNearestNeighborGrad")
def _resize_nearest_grad_shape(op):
    grads, size = op.inputs
    dims = [None] * 4 if grads.shape.ndims is None else grads.shape.as_list()
    static = constant_value(size)
    new = [None, None] if static is None else [int(v) for v in np.reshape(static, -1)]
    return [(grads.dtype.base_dtype, TensorShape([dims[0], *new, dims[3]]))]


def _attrs(op):
    return {"align_corners": op.get_attr("align_corners"), "half_pixel_centers": op.get_attr("half_pixel_centers")}


@registry.RegisterGradient("ResizeBilinear")
def _resize_bilinear_grad(op, grad):
    return [apply_op1("ResizeBilinearGrad", [grad, op.inputs[0]], _attrs(op), "ResizeBilinearGrad"), None]


@registry.RegisterGradient("ResizeNearestNeighbor")
def _resize_nearest_grad(op, grad):
    size = shape(op.inputs[0])[1:3]
    return [apply_op1("ResizeNearestNeighborGrad", [grad, size], _attrs(op), "ResizeNearestNeighborGrad"), None]
