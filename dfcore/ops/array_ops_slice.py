"""Slicing: ``slice`` (``Slice``), ``strided_slice`` (``StridedSlice`` and its gradient
op ``StridedSliceGrad``) and ``Tensor.__getitem__`` (ints, slices with steps, ``...``,
``tf.newaxis``, scalar int tensors).

Source: ``tensorflow/python/ops/array_ops.py`` (``_slice_helper``, ``strided_slice``)
and ``core/util/strided_slice_op.cc``. A strided slice is run as the numpy basic
index it encodes, so its semantics (negative indices, clamping) are Python's.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..framework import dtypes, registry, scopes
from ..framework.tensor import Tensor
from ..framework.tensor_shape import TensorShape
from . import common_shapes
from .array_ops_util import (
    INDEX_TYPES,
    constant_value,
    constant_value_as_shape,
    register_constant_value,
    register_partial_shape,
    run_failure,
    scoped_op,
    shape_failure,
    static_ints,
    unknown_of_rank,
    vector_length,
    with_rank,
)
from .variables import Variable

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = ["slice", "strided_slice"]

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
_SLICE_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
                     "tf.int32/tf.int64 tensors are valid indices")


# -- slice ------------------------------------------------------------------------------
def slice(input_: TensorLike, begin: TensorLike, size: TensorLike, name: str | None = None) -> Tensor:
    """The block of ``input_`` starting at ``begin`` of extent ``size`` (-1: to the end).

    Raises:
        InvalidArgumentError: lengths differ from the rank, or the block leaves the input (TF's wording).
    """
    inputs = [("input", input_, None), ("begin", begin, INDEX_TYPES), ("size", size, INDEX_TYPES)]
    return scoped_op("Slice", name, inputs).outputs[0]


def _slice_bounds(begin, size, dims, fail):
    """The output dims of a Slice (None where unknown); calls ``fail(message)`` on a bad block."""
    out = []
    for i, (b, s, d) in enumerate(zip(begin, size, dims)):
        if b is not None and d is not None and not 0 <= b <= d:
            fail(f"Expected begin[{i}] in [0, {d}], but got {b}")
        if s == -1:
            out.append(None if b is None or d is None else d - b)
            continue
        if s is not None and (s < 0 or (b is not None and d is not None and b + s > d)):
            fail(f"Expected size[{i}] in [0, {'?' if b is None or d is None else d - b}], but got {s}")
        out.append(s)
    return out


@registry.RegisterShape("Slice")
def _slice_shape(op):
    x, begin, size = op.inputs
    n = vector_length(op, begin)
    m = vector_length(op, size)
    if n is not None and m is not None and n != m:
        raise common_shapes.shape_error(op, f"Dimensions must be equal, but are {n} and {m}")
    rank = x.shape.ndims if x.shape.ndims is not None else n if n is not None else m
    if rank is not None and n is not None:
        with_rank(op, x.shape, n)
    b, s = static_ints(begin), static_ints(size)
    if s is None or rank is None:
        return [(x.dtype.base_dtype, unknown_of_rank(rank))]

    def fail(message):
        raise common_shapes.shape_error(op, message)

    dims = x.shape.as_tuple() or (None,) * rank
    return [(x.dtype.base_dtype, TensorShape(_slice_bounds(b or [None] * rank, s, dims, fail)))]


@registry.RegisterArrayKernel("Slice")
def _slice_kernel(op, backend):
    host = backend.to_host

    def fail(message):
        raise errors.InvalidArgumentError(None, op, message)

    def compute(x, begin, size):  # begin and size are read on the host (TF's HostMemory)
        begin, size = host(begin), host(size)
        if len(begin) != x.ndim or len(size) != x.ndim:
            fail(f"Expected begin and size arguments to be 1-D tensors of size {x.ndim}, but got shapes "
                 f"[{len(begin)}] and [{len(size)}] instead.")
        begin = [int(b) for b in begin]
        sizes = _slice_bounds(begin, [int(s) for s in size], tuple(x.shape), fail)
        return x[tuple(_builtin_slice(b, b + s) for b, s in zip(begin, sizes))]

    return compute


_builtin_slice = builtins.slice


# -- strided_slice ------------------------------------------------------------------------
def strided_slice(input_: TensorLike, begin: TensorLike, end: TensorLike, strides: TensorLike = None,
                  begin_mask: int = 0, end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                  shrink_axis_mask: int = 0, name: str | None = None) -> Tensor:
    """``input_[begin:end:strides]`` per dimension, with TF's bit masks: ``begin_mask``/``end_mask``
    ignore that entry's begin/end, ``ellipsis_mask`` marks ``...``, ``new_axis_mask`` a new
    size-1 axis, ``shrink_axis_mask`` an integer index (the dimension is removed).

    Raises:
        InvalidArgumentError: begin/end/strides of different lengths, a zero stride, more than
            one ellipsis, or an index out of bounds (TF's wording).
    """
    if strides is None:
        from .array_ops import ones_like

        strides = ones_like(begin)
    attrs = dict(zip(_MASKS, (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)))
    inputs = [("input", input_, None), ("begin", begin, INDEX_TYPES), ("end", end, INDEX_TYPES),
              ("strides", strides, INDEX_TYPES)]
    return scoped_op("StridedSlice", name, inputs, {k: int(v) for k, v in attrs.items()}).outputs[0]


def _index_items(op, n, begin, end, strides, fail):
    """The index items (``...``, None, ``_Shrink``, ``_Range``) a strided slice of ``n`` entries
    encodes; ``begin``/``end``/``strides`` may be None (unknown at construction)."""
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask = (op.get_attr(m) for m in _MASKS)
    if bin(ellipsis_mask).count("1") > 1:
        fail("Multiple ellipses in slice spec not allowed")
    items: list[Any] = []
    for i in range(n):
        bit = 1 << i
        b = None if begin is None else begin[i]
        if ellipsis_mask & bit:
            items.append(Ellipsis)
        elif new_axis_mask & bit:
            items.append(None)
        elif shrink_mask & bit:
            items.append(_Shrink(b))
        else:
            s = None if strides is None else strides[i]
            if s == 0:
                fail(f"strides[{i}] must be non-zero")
            start = _OPEN if begin_mask & bit else b
            stop = _OPEN if end_mask & bit else (None if end is None else end[i])
            items.append(_Range(start, stop, s))
    return items


class _Shrink:
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


class _Range:
    __slots__ = ("start", "stop", "step")

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def known(self):
        return None not in (self.start, self.stop, self.step)

    def as_slice(self):
        return _builtin_slice(*(None if v is _OPEN else v for v in (self.start, self.stop, self.step)))


_OPEN = object()  # a masked begin/end: open-ended


def _numpy_index(items):
    return tuple(item.index if isinstance(item, _Shrink) else item.as_slice() if isinstance(item, _Range) else item
                 for item in items)


def _sliced_dims(dims, items, fail):
    """Output dims of indexing ``dims`` (ints or None) with ``items``; TF's errors on bad indices."""
    real = sum(1 for item in items if item is not None and item is not Ellipsis)
    if real > len(dims):
        fail(f"Index out of range using input dim {len(dims)}; input has only {len(dims)} dims")
    if Ellipsis not in items:
        items = items + [Ellipsis]
    out, j = [], 0
    for item in items:
        if item is Ellipsis:
            count = len(dims) - real
            out.extend(dims[j:j + count])
            j += count
        elif item is None:
            out.append(1)
        elif isinstance(item, _Shrink):
            d = dims[j]
            if item.index is not None and d is not None and not -d <= item.index < d:
                fail(f"slice index {item.index} of dimension {j} out of bounds.")
            j += 1
        else:
            d = dims[j]
            out.append(len(range(d)[item.as_slice()]) if d is not None and item.known() else None)
            j += 1
    return out


@registry.RegisterShape("StridedSlice")
def _strided_slice_shape(op):
    x, begin, end, strides = op.inputs
    lengths = [vector_length(op, t) for t in (begin, end, strides)]
    known = {n for n in lengths if n is not None}
    if len(known) > 1:
        shapes = ", ".join(f"[{n}]" for n in lengths)
        raise common_shapes.shape_error(
            op, f"Expected begin, end, and strides to be 1D equal size tensors, but got shapes {shapes} instead.")
    dtype = x.dtype.base_dtype
    if not known or x.shape.ndims is None:
        return [(dtype, TensorShape(None))]
    fail = shape_failure(op)
    items = _index_items(op, known.pop(), static_ints(begin), static_ints(end), static_ints(strides), fail)
    return [(dtype, TensorShape(_sliced_dims(list(x.shape.as_tuple()), items, fail)))]


@registry.RegisterArrayKernel("StridedSlice")
def _strided_slice_kernel(op, backend):
    fail, xp, host = run_failure(op), backend.xp, backend.to_host

    def compute(x, begin, end, strides):  # begin, end, strides are read on the host (TF's HostMemory)
        begin, end, strides = host(begin), host(end), host(strides)
        items = _index_items(op, len(begin), begin.tolist(), end.tolist(), strides.tolist(), fail)
        _sliced_dims(list(x.shape), items, fail)
        return xp.asarray(x)[_numpy_index(items)]

    return compute


@register_constant_value("StridedSlice")
def _strided_slice_value(tensor):
    values = [constant_value(t) for t in tensor.op.inputs]
    if any(v is None for v in values):
        return None
    x, begin, end, strides = (np.asarray(v) for v in values)
    items = _index_items(tensor.op, len(begin), begin.tolist(), end.tolist(), strides.tolist(),
                         shape_failure(tensor.op))
    return x[_numpy_index(items)]  # the op's shape function has already checked the index


@register_partial_shape("StridedSlice")
def _strided_slice_partial_shape(tensor):
    """A slice (no ``...``, new axis or int index) of a partly known shape vector."""
    op = tensor.op
    source = constant_value_as_shape(op.inputs[0])
    bounds = [static_ints(t) for t in op.inputs[1:]]
    length = tensor.shape.as_tuple()
    fallback = unknown_of_rank(length[0] if length and len(length) == 1 else None)
    if source.ndims is None or any(b is None for b in bounds) or len(bounds[0]) != 1:
        return fallback
    (item,) = _index_items(op, 1, bounds[0], bounds[1], bounds[2], shape_failure(op))  # begin, end, strides
    if not isinstance(item, _Range):
        return fallback
    return TensorShape(list(source.as_tuple())[item.as_slice()])


def strided_slice_grad(shape: TensorLike, begin: TensorLike, end: TensorLike, strides: Sequence[int], dy: TensorLike,
                       begin_mask: int = 0, end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                       shrink_axis_mask: int = 0, name: str | None = None) -> Tensor:
    """The gradient of a StridedSlice: zeros of ``shape`` with ``dy`` written where the slice was read."""
    attrs = dict(zip(_MASKS, (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)))
    inputs = [("shape", shape, INDEX_TYPES), ("begin", begin, INDEX_TYPES), ("end", end, INDEX_TYPES),
              ("strides", strides, INDEX_TYPES), ("dy", dy, None)]
    return scoped_op("StridedSliceGrad", name, inputs, {k: int(v) for k, v in attrs.items()}).outputs[0]


@registry.RegisterShape("StridedSliceGrad")
def _strided_slice_grad_shape(op):
    shape = op.inputs[0]
    dims = static_ints(shape)
    return [(op.inputs[4].dtype.base_dtype, TensorShape(dims) if dims is not None else
             unknown_of_rank(vector_length(op, shape)))]


@registry.RegisterArrayKernel("StridedSliceGrad")
def _strided_slice_grad_kernel(op, backend):
    fail, xp, host = run_failure(op), backend.xp, backend.to_host

    def compute(shape, begin, end, strides, dy):  # shape and bounds are read on the host (TF's HostMemory)
        shape, begin, end, strides = host(shape), host(begin), host(end), host(strides)
        dy = xp.asarray(dy)
        out = xp.zeros(tuple(int(d) for d in shape), dtype=dy.dtype)
        out[_numpy_index(_index_items(op, len(begin), begin.tolist(), end.tolist(), strides.tolist(), fail))] = dy
        return out

    return compute


# -- Tensor.__getitem__ ------------------------------------------------------------------------
def _check_index(index):
    if isinstance(index, bool) or not (isinstance(index, (int, np.integer)) or
                                       (isinstance(index, Tensor) and index.dtype.base_dtype in INDEX_TYPES)):
        raise TypeError(f"{_SLICE_TYPE_ERROR}, got {index!r}")


def _slice_helper(tensor, slice_spec):
    """``tensor[slice_spec]`` as a StridedSlice named ``strided_slice`` (TF's ``_slice_helper``).

    Raises:
        TypeError: an index that is not an int, slice, ``...``, None or scalar int tensor
            (boolean masks are not supported).
    """
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    begin: list[Any] = []
    end: list[Any] = []
    strides: list[Any] = []
    masks: dict[str, Any] = dict.fromkeys(_MASKS, 0)
    for i, s in enumerate(slice_spec):
        bit = 1 << i
        if isinstance(s, _builtin_slice):
            for value, target, mask in ((s.start, begin, "begin_mask"), (s.stop, end, "end_mask")):
                if value is None:
                    target.append(0)
                    masks[mask] |= bit
                else:
                    _check_index(value)
                    target.append(value)
            if s.step is not None:
                _check_index(s.step)
            strides.append(1 if s.step is None else s.step)
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        else:
            _check_index(s)
            begin.append(s)
            end.append(s + 1)
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
    with scopes.name_scope(None, "strided_slice", [tensor] + begin + end + strides) as name:
        from .array_ops_join import stack

        if begin:
            packed = [stack(begin), stack(end), stack(strides)]
            if any(p.dtype.base_dtype is dtypes.int64 for p in packed):
                from . import math_ops

                packed = [math_ops.cast(p, dtypes.int64) for p in packed]
        else:
            from .constant_op import constant

            packed = [constant([], dtype=dtypes.int32)] * 3
        return strided_slice(tensor, packed[0], packed[1], packed[2], name=name, **masks)


Tensor._override_operator("__getitem__", _slice_helper)
Variable._overload_operator("__getitem__")
