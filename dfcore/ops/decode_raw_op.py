"""``tf.decode_raw`` (``tf.io.decode_raw``): the bytes of each string reinterpreted as numbers (op ``DecodeRaw``).

Source: ``tensorflow/core/kernels/decode_raw_op.cc``: every string of the input must have the same length,
a multiple of the output type's size; the output shape is the input's plus one axis of
``length / itemsize``. ``little_endian`` says the byte order of the data (one-byte types ignore it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import DTypeLike, TensorLike

__all__ = ["decode_raw"]

registry.NotDifferentiable("DecodeRaw")


def decode_raw(input_bytes: TensorLike = None, out_type: DTypeLike | None = None, little_endian: bool = True,
               name: str | None = None, bytes: TensorLike = None) -> Tensor:
    """A ``out_type`` tensor of shape ``input.shape + [length / itemsize]`` from a string tensor.

    ``bytes`` is TF 1.x's older name of ``input_bytes``.
    Raises (when run) InvalidArgumentError: strings of different lengths, or a length that is not a
    multiple of ``out_type``'s size.
    """
    value = input_bytes if input_bytes is not None else bytes
    out_type = dtypes.as_dtype(out_type)
    return apply_op1("DecodeRaw", [value], {"out_type": out_type, "little_endian": bool(little_endian)},
                     name or "DecodeRaw", dtype=dtypes.string)


@registry.RegisterShape("DecodeRaw")
def _decode_raw_shape(op):
    shape = op.inputs[0].shape
    dims = None if shape.ndims is None else shape.as_list() + [None]
    return [(op.get_attr("out_type"), TensorShape(dims))]


@registry.RegisterKernel("DecodeRaw")
def _decode_raw_kernel(op):
    out = np.dtype(op.get_attr("out_type").as_numpy_dtype)
    out = out.newbyteorder("<" if op.get_attr("little_endian") else ">") if out.itemsize > 1 else out

    def compute(value):
        strings = np.asarray(value, dtype=object)
        flat = [s.encode() if isinstance(s, str) else s for s in strings.reshape(-1)]
        size = len(flat[0]) if flat else 0
        for i, item in enumerate(flat):
            if len(item) != size:
                raise errors.InvalidArgumentError(None, op, "DecodeRaw requires input strings to all be the same "
                                                            f"size, but element {i} has size {size} != {len(item)}")
        if size % out.itemsize:
            raise errors.InvalidArgumentError(None, op, f"Input to DecodeRaw has length {size} that is not a "
                                                        f"multiple of {out.itemsize}, the size of "
                                                        f"{op.get_attr('out_type').name}")
        data = np.frombuffer(b"".join(flat), dtype=out).astype(out.newbyteorder("="))
        return data.reshape(strings.shape + (size // out.itemsize,))

    return compute
