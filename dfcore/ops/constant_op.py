"""``constant``: the ``Const`` op, whose value is stored in the graph.

Source: ``tensorflow/python/framework/constant_op.py``. Python floats become
float32 and ints int32 unless ``dtype`` says otherwise; a scalar is broadcast to
``shape`` when one is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..framework import dtypes, registry
from ..framework.tensor_conversion import infer_dtype, register_tensor_conversion_function, to_numpy
from ..framework.tensor_shape import TensorShape
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import DTypeLike, TensorLike


def constant(value: TensorLike, dtype: DTypeLike | None = None, shape: TensorLike = None, name: str = "Const",
             verify_shape: bool = False) -> Tensor:
    """A Tensor holding ``value``.

    Args:
        value: a Python scalar, nested list or numpy array.
        dtype: the element type; inferred (float → float32, int → int32) when None.
        shape: optional shape; a scalar or single-element value is broadcast to it.
    Raises:
        TypeError: ``value`` cannot be represented in ``dtype``.
        ValueError: ``value`` has the wrong number of elements for ``shape``.
    """
    dtype = infer_dtype(value) if dtype is None else dtypes.as_dtype(dtype).base_dtype
    array = to_numpy(value, dtype)
    if shape is not None:
        shape = [int(d) for d in TensorShape(shape).as_list()]
        if verify_shape and list(array.shape) != shape:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {array.shape}.")
        if array.size == 1:
            array = np.broadcast_to(array.reshape(()), shape).copy()
        elif array.size == int(np.prod(shape)):
            array = array.reshape(shape)
        else:
            raise ValueError(f"Too many elements provided. Needed at most {int(np.prod(shape))}, but received "
                             f"{array.size}")
    array.setflags(write=False)
    return apply_op1("Const", [], {"value": array, "dtype": dtype}, name or "Const")


@registry.RegisterShape("Const")
def _const_shape(op):
    value = op.get_attr("value")
    return [(op.get_attr("dtype"), TensorShape(value.shape))]


@registry.RegisterArrayKernel("Const")
def _const_kernel(op, backend):
    value = backend.from_host(op.get_attr("value"))  # copied to the device once, when the kernel is built
    return lambda: value


registry.NotDifferentiable("Const")


def is_constant(tensor: Tensor) -> bool:
    return tensor.op.type == "Const"


def _constant_conversion(value, dtype=None, name=None, as_ref=False):
    """``convert_to_tensor`` of any other value (a Python or numpy value): a ``Const`` op."""
    return constant(value, dtype=dtype, name=name or "Const")


register_tensor_conversion_function(object, _constant_conversion, priority=200)
