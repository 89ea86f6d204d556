"""``data_format`` of the convolution and pooling ops: ``NHWC`` (what the kernels compute in) and ``NCHW``.

Source: TF's ``tensorflow/core/util/tensor_format.h`` (``GetTensorDimIndex``); TF 2.21's CPU kernels accept
``NCHW`` for ``Conv2D``, its backprops, ``MaxPool`` and ``AvgPool`` in graph mode (checked with tensorflow-cpu
2.21). dfcore runs an ``NCHW`` op as its ``NHWC`` kernel between two transposes (``strides``, ``dilations``
and ``ksize`` are read in the op's own layout).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..framework import registry

if TYPE_CHECKING:
    from ..framework.operation import Operation

FORMATS = ("NHWC", "NCHW")


def spatial(values: Sequence[Any], data_format: str) -> tuple[Any, ...]:
    """``(height, width)`` entries of a 4-vector (``strides``, ``ksize``, a shape) in ``data_format``."""
    return tuple(values[2:4]) if data_format == "NCHW" else tuple(values[1:3])


def nhwc_shape(shape: Sequence[int], data_format: str) -> tuple[int, ...]:
    """A 4-D ``shape`` in ``data_format`` as NHWC (a tuple)."""
    n, *rest = shape
    return (n, *rest[1:], rest[0]) if data_format == "NCHW" else tuple(shape)


def from_nhwc_shape(shape: Sequence[Any], data_format: str) -> list[Any]:
    """An NHWC 4-D ``shape`` in ``data_format`` (a list)."""
    return [shape[0], shape[3], shape[1], shape[2]] if data_format == "NCHW" else list(shape)


def layout_kernel(roles: Sequence[str], data_format: str, compute: Callable[..., Any],
                  out_is_tensor: bool = True) -> Callable[..., Any]:
    """``compute`` (an NHWC kernel) made to take and give ``data_format`` arrays: ``roles`` names each input,
    ``"x"`` a 4-D tensor, ``"shape"`` a 4-vector of sizes, ``"-"`` anything else (a filter); the output is a
    4-D tensor unless ``out_is_tensor`` is False (a filter's gradient)."""
    if data_format != "NCHW":
        return compute

    def convert(role, value):
        if role == "x":
            return value.transpose(0, 2, 3, 1)
        if role == "shape":
            return np.asarray(nhwc_shape([int(d) for d in value], data_format))
        return value

    def nchw(*inputs):
        out = compute(*(convert(role, value) for role, value in zip(roles, inputs)))
        return np.ascontiguousarray(out.transpose(0, 3, 1, 2)) if out_is_tensor else out

    return nchw


def register_layout_kernels(op_type: str, roles: Sequence[str],
                            make_compute: Callable[[Operation], Callable[..., Any]]) -> None:
    """Register ``op_type``'s kernel and its ``out=`` kernel from one NHWC ``make_compute(op)``, which returns
    ``compute(empty, *inputs)`` (``empty(shape, dtype)`` makes its output buffer): the kernel allocates with
    ``np.empty`` (between the transposes of :func:`layout_kernel` for an ``NCHW`` op); the ``out=`` kernel writes
    into the device allocator's buffer for an ``NHWC`` op, and an ``NCHW`` op runs the plain kernel (the
    transposes make fresh arrays anyway). ``roles`` are :func:`layout_kernel`'s."""

    def plain(op, compute):
        return layout_kernel(roles, op.get_attr("data_format"), lambda *inputs: compute(np.empty, *inputs))

    def kernel(op):
        return plain(op, make_compute(op))

    def out_kernel(op):
        compute = make_compute(op)
        if op.get_attr("data_format") == "NCHW":
            run = plain(op, compute)
            return lambda allocator, *inputs: run(*inputs)
        return lambda allocator, *inputs: compute(allocator.allocate, *inputs)

    registry.RegisterKernel(op_type)(kernel)
    registry.RegisterOutKernel(op_type)(out_kernel)
