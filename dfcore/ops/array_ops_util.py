"""Helpers shared by the array-op modules: op construction as TF's ``op_def_library``
does it (name scope, Consts named after arguments, dtype checks), static-shape
merging with TF's ``InferenceContext`` wording, and values known at graph
construction (TF's ``tensor_util.constant_value``), looked up by op type.

Source: ``tensorflow/python/framework/op_def_library.py``,
``core/framework/shape_inference.cc``, ``python/framework/tensor_util.py``.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

import numpy as np

from .. import errors
from ..framework import dtypes
from ..framework.graph import graph_of
from ..framework.operation import Operation
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_like import TensorLike
from ..framework.tensor_shape import TensorShape
from . import common_shapes
from .op_util import apply_op

INDEX_TYPES = (dtypes.int32, dtypes.int64)
SAME_DTYPE_LIST = "same-dtype list"


# -- building ops as TF's op_def_library does -----------------------------------------
def scoped_op(op_type: str, name: str | None, inputs: Sequence[tuple[str, TensorLike, Any]],
              attrs: Mapping[str, Any] | None = None) -> Operation:
    """Create an ``op_type`` op inside name scope ``name or op_type``, as TF's ``op_def_library``.

    Non-Tensor inputs become Consts named after their argument (``Transpose/perm``).
    ``inputs`` holds ``(arg, value, allowed)`` triples; ``allowed`` is None (any dtype),
    a DType (required), a tuple of allowed DTypes (the first for ``[]``), or
    ``SAME_DTYPE_LIST`` (a list of values of one dtype: ``values_0``, ``values_1``...).
    Returns the Operation.

    Raises:
        TypeError: a dtype outside ``allowed``, or a list whose dtypes differ (TF's wording).
    """
    flat: list[Any] = []
    for _, value, allowed in inputs:
        flat.extend(value if allowed is SAME_DTYPE_LIST else [value])
    graph = graph_of(flat)
    with graph.as_default(), graph.name_scope(name or op_type) as scope:
        tensors = []
        for arg, value, allowed in inputs:
            if allowed is SAME_DTYPE_LIST:
                tensors.extend(_convert_list(op_type, arg, value))
            else:
                tensors.append(_convert_arg(op_type, arg, value, allowed))
        return apply_op(op_type, tensors, attrs, scope or op_type)


def _convert_arg(op_type, arg, value, allowed):
    if allowed is None:
        return convert_to_tensor(value, name=arg)
    if isinstance(allowed, dtypes.DType):
        if isinstance(value, Tensor) and value.dtype.base_dtype is not allowed:
            raise TypeError(f"Input '{arg}' of '{op_type}' Op has type {value.dtype.base_dtype.name} that does not "
                            f"match expected type of {allowed.name}.")
        return convert_to_tensor(value, dtype=allowed, name=arg)
    empty = isinstance(value, (list, tuple)) and not value  # [] takes the first allowed dtype, as in TF
    tensor = convert_to_tensor(value, name=arg, preferred_dtype=allowed[0] if empty else None)
    if tensor.dtype.base_dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise TypeError(f"Value passed to parameter '{arg}' has DataType {tensor.dtype.base_dtype.name} not in list "
                        f"of allowed values: {names}")
    return tensor


def _convert_list(op_type, arg, values):
    dtype = None
    for value in values:
        if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
            dtype = convert_to_tensor(value).dtype.base_dtype
            break
    tensors = [convert_to_tensor(v, dtype=None if isinstance(v, Tensor) else dtype, name=f"{arg}_{i}")
               for i, v in enumerate(values)]
    types = [t.dtype.base_dtype for t in tensors]
    if any(t is not types[0] for t in types):
        raise TypeError(f"Tensors in list passed to '{arg}' of '{op_type}' Op have types "
                        f"[{', '.join(t.name for t in types)}] that don't all match.")
    return tensors


# -- shape-function helpers (TF's InferenceContext wording) ----------------------------
def merge_shapes(op: Operation, s0: TensorShape, s1: TensorShape, context: str = "") -> TensorShape:
    """The merge of two static shapes; ``context`` is appended to the error message.

    Raises:
        InvalidArgumentError: ``Shapes must be equal rank, but are 2 and 1`` or
            ``Dimension 0 in both shapes must be equal, but are 2 and 3``.
    """
    if s0.ndims is None:
        return s1
    if s1.ndims is None:
        return s0
    if s0.ndims != s1.ndims:
        raise common_shapes.shape_error(op, f"Shapes must be equal rank, but are {s0.ndims} and {s1.ndims}{context}")
    dims = []
    for i, (a, b) in enumerate(zip(s0.as_tuple(), s1.as_tuple())):
        if a is not None and b is not None and a != b:
            raise common_shapes.shape_error(
                op, f"Dimension {i} in both shapes must be equal, but are {a} and {b}{context}")
        dims.append(a if a is not None else b)
    return TensorShape(dims)


def with_rank(op: Operation, shape: TensorShape, rank: int) -> TensorShape:
    """``shape`` with rank ``rank``; raises TF's ``Shape must be rank 2 but is rank 1``."""
    if shape.ndims is None:
        return TensorShape([None] * rank)
    if shape.ndims != rank:
        raise common_shapes.shape_error(op, f"Shape must be rank {rank} but is rank {shape.ndims}")
    return shape


def with_rank_at_least(op: Operation, shape: TensorShape, rank: int) -> TensorShape:
    """Raises TF's ``Shape must be at least rank 2 but is rank 1`` for a lower known rank."""
    if shape.ndims is not None and shape.ndims < rank:
        raise common_shapes.shape_error(op, f"Shape must be at least rank {rank} but is rank {shape.ndims}")
    return shape


def vector_length(op: Operation, tensor: Tensor) -> int | None:
    """The static length of 1-D ``tensor`` (None if unknown); raises unless it has rank 1."""
    return with_rank(op, tensor.shape, 1).as_tuple()[0]


def static_ints(tensor: Tensor) -> Any:
    """``tensor``'s value as a list of ints (a scalar as an int) if known at construction, else None."""
    value = constant_value(tensor)
    if value is None:
        return None
    value = np.asarray(value)
    return int(value) if value.ndim == 0 else [int(v) for v in value.reshape(-1)]


def unknown_of_rank(rank: int | None) -> TensorShape:
    """A shape with ``rank`` unknown dims, or unknown rank when ``rank`` is None."""
    return TensorShape(None if rank is None else [None] * rank)


# -- static values ----------------------------------------------------------------
_CONSTANT_VALUE_FNS: dict[str, Callable[..., Any]] = {}


def register_constant_value(op_type: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``fn(tensor) -> numpy value or None``: the value of an
    output of ``op_type`` when it is known at graph construction (TF's ``constant_value``)."""

    def _register(fn):
        _CONSTANT_VALUE_FNS[op_type] = fn
        return fn

    return _register


def constant_value(tensor: Tensor) -> Any:
    """The value of ``tensor`` if it is known at graph construction, else None.

    Known: Consts, shapes/ranks/sizes of static shapes, and the ops registered with
    :func:`register_constant_value` (Identity, Pack, ConcatV2, StridedSlice...) of known inputs.
    """
    fn = _CONSTANT_VALUE_FNS.get(tensor.op.type)
    return None if fn is None else fn(tensor)


_PARTIAL_SHAPE_FNS: dict[str, Callable[..., Any]] = {}


def register_partial_shape(op_type: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``fn(tensor) -> TensorShape``: the partly known value of a 1-D
    shape tensor produced by ``op_type`` (TF's ``constant_value_as_shape``)."""

    def _register(fn):
        _PARTIAL_SHAPE_FNS[op_type] = fn
        return fn

    return _register


def constant_value_as_shape(tensor: Tensor) -> TensorShape:
    """The value of the 1-D int ``tensor`` as a TensorShape; unknown entries (and -1) are None.

    Fully known values, and the ops registered with :func:`register_partial_shape`
    (Pack of scalars, ConcatV2 of vectors), give known dims; otherwise the rank comes
    from the tensor's static length.
    """
    value = constant_value(tensor)
    if value is not None:
        return TensorShape([None if d == -1 else int(d) for d in np.reshape(value, -1)])
    fn = _PARTIAL_SHAPE_FNS.get(tensor.op.type)
    if fn is not None:
        return fn(tensor)
    dims = tensor.shape.as_tuple()
    return unknown_of_rank(dims[0] if dims and len(dims) == 1 else None)


def shape_failure(op: Operation) -> Callable[[str], NoReturn]:
    """A ``fail(message)`` raising TF's construction-time shape error for ``op``."""
    def fail(message):
        raise common_shapes.shape_error(op, message)

    return fail


def run_failure(op: Operation) -> Callable[[str], NoReturn]:
    """A ``fail(message)`` raising ``InvalidArgumentError`` for ``op`` while it runs."""
    def fail(message):
        raise errors.InvalidArgumentError(None, op, message)

    return fail
