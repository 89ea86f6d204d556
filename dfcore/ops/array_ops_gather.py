"""Index-driven array ops: ``gather`` (``GatherV2``), ``unsorted_segment_sum``
(``UnsortedSegmentSum``, which also densifies gather's gradient) and ``one_hot`` (``OneHot``).

Source: ``tensorflow/python/ops/array_ops.py``, ``math_ops.py`` and
``core/ops/array_ops.cc``, ``math_ops.cc``. Gradients live in :mod:`dfcore.ops.array_grad`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, registry, scopes
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import common_shapes
from .array_ops_util import INDEX_TYPES, merge_shapes, scoped_op, static_ints, unknown_of_rank, with_rank

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import DTypeLike, TensorLike

__all__ = ["gather", "unsorted_segment_sum", "one_hot"]


def _position(shape, flat_index):
    return ",".join(str(int(i)) for i in np.unravel_index(flat_index, shape)) if shape else ""


def _check_range(op, name, values, limit, wording):
    """Raise TF's run-time error for the first entry of ``values`` outside ``[0, limit)``."""
    values = np.asarray(values)
    bad = np.flatnonzero((values < 0) | (values >= limit))
    if bad.size:
        value = values.reshape(-1)[bad[0]]
        raise errors.InvalidArgumentError(
            None, op, f"{name}[{_position(values.shape, bad[0])}] = {value} is {wording} [0, {limit})")


# -- gather -----------------------------------------------------------------------------
def gather(params: TensorLike, indices: TensorLike, validate_indices: bool | None = None, name: str | None = None,
           axis: TensorLike = 0) -> Tensor:
    """Slices of ``params`` along ``axis`` at ``indices``; the output shape is
    ``params.shape[:axis] + indices.shape + params.shape[axis + 1:]``.

    Raises:
        InvalidArgumentError: ``axis`` out of range (construction) or an index outside
            ``[0, params.shape[axis])`` (run time, TF's wording).
    """
    inputs = [("params", params, None), ("indices", indices, INDEX_TYPES), ("axis", axis, INDEX_TYPES)]
    return scoped_op("GatherV2", name, inputs).outputs[0]


@registry.RegisterShape("GatherV2")
def _gather_shape(op):
    params, indices, axis = op.inputs
    dtype = params.dtype.base_dtype
    with_rank(op, axis.shape, 0)
    a = static_ints(axis)
    p_rank, i_rank = params.shape.ndims, indices.shape.ndims
    if a is None or p_rank is None or i_rank is None:
        known = p_rank is not None and i_rank is not None
        return [(dtype, unknown_of_rank(p_rank + i_rank - 1 if known else None))]
    if not -p_rank <= a < p_rank:
        raise common_shapes.shape_error(op, f"Shape must be at least rank {-a if a < 0 else a + 1} but is rank "
                                            f"{p_rank}")
    a %= p_rank
    p_dims = list(params.shape.as_tuple())
    return [(dtype, TensorShape(p_dims[:a] + list(indices.shape.as_tuple()) + p_dims[a + 1:]))]


@registry.RegisterKernel("GatherV2")
def _gather_kernel(op):
    def compute(params, indices, axis):
        axis = int(axis) % np.ndim(params)
        _check_range(op, "indices", indices, np.shape(params)[axis], "not in")
        return np.take(params, indices, axis=axis)

    return compute


# -- unsorted_segment_sum ---------------------------------------------------------------
def unsorted_segment_sum(data: TensorLike, segment_ids: TensorLike, num_segments: TensorLike,
                         name: str | None = None) -> Tensor:
    """``output[i] = sum of data[j...] over the j... with segment_ids[j...] == i`` for i < num_segments.

    ``segment_ids`` has the leading shape of ``data``; the output shape is
    ``[num_segments] + data.shape[rank(segment_ids):]``. Segments with no entry are 0.
    Raises:
        InvalidArgumentError: ``segment_ids.shape`` is not a prefix of ``data.shape``, or an id is
            outside ``[0, num_segments)`` (negative ids are errors, as in TF 1.x before 1.12).
    """
    inputs = [("data", data, None), ("segment_ids", segment_ids, INDEX_TYPES),
              ("num_segments", num_segments, INDEX_TYPES)]
    return scoped_op("UnsortedSegmentSum", name, inputs).outputs[0]


@registry.RegisterShape("UnsortedSegmentSum")
def _unsorted_segment_sum_shape(op):
    data, ids, num = op.inputs
    with_rank(op, num.shape, 0)
    n = static_ints(num)
    dtype = data.dtype.base_dtype
    if ids.shape.ndims is None or data.shape.ndims is None:
        return [(dtype, TensorShape(None))]
    k = ids.shape.ndims
    if data.shape.ndims < k:
        raise common_shapes.shape_error(op, f"Shape must be at least rank {k} but is rank {data.shape.ndims}")
    merge_shapes(op, data.shape[:k], ids.shape)
    return [(dtype, TensorShape([n]).concatenate(data.shape[k:]))]


@registry.RegisterKernel("UnsortedSegmentSum")
def _unsorted_segment_sum_kernel(op):
    def compute(data, ids, num_segments):
        n = int(num_segments)
        data, ids = np.asarray(data), np.asarray(ids)
        if data.shape[:ids.ndim] != ids.shape:
            raise errors.InvalidArgumentError(
                None, op, f"data.shape = [{','.join(map(str, data.shape))}] does not start with segment_ids.shape = "
                f"[{','.join(map(str, ids.shape))}]")
        _check_range(op, "segment_ids", ids, n, "out of range")
        out = np.zeros((n,) + data.shape[ids.ndim:], dtype=data.dtype)
        np.add.at(out, ids, data)
        return out

    return compute


# -- one_hot ------------------------------------------------------------------------------
def one_hot(indices: TensorLike, depth: TensorLike, on_value: TensorLike = None, off_value: TensorLike = None,
            axis: TensorLike = None, dtype: DTypeLike | None = None, name: str | None = None) -> Tensor:
    """A one-hot tensor: ``on_value`` where the new ``axis`` (default last) equals ``indices``,
    ``off_value`` elsewhere (indices outside ``[0, depth)`` give an all-off row).

    The dtype comes from ``dtype``, else from ``on_value``/``off_value``, else float32;
    the defaults are 1 and 0 of that dtype.
    Raises:
        TypeError: ``dtype``, ``on_value`` and ``off_value`` disagree (TF's wording).
        InvalidArgumentError: ``axis`` outside ``[-1, rank(indices)]``.
    """
    with scopes.name_scope(name, "one_hot", [indices, depth, on_value, off_value, axis, dtype]) as name:
        on_dtype = convert_to_tensor(on_value).dtype.base_dtype if on_value is not None else None
        off_dtype = convert_to_tensor(off_value).dtype.base_dtype if off_value is not None else None
        if on_value is not None or off_value is not None:
            if dtype is not None:
                dtype = dtypes.as_dtype(dtype)
                for value_dtype, label in ((on_dtype, "on_value"), (off_dtype, "off_value")):
                    if value_dtype is not None and value_dtype is not dtype:
                        raise TypeError(f"dtype {value_dtype} of {label} does not match dtype parameter {dtype}")
            else:
                dtype = on_dtype or off_dtype
        dtype = dtypes.as_dtype(dtype or dtypes.float32)
        if on_value is None:
            on_value, on_dtype = convert_to_tensor(1, dtype, name="on_value"), dtype
        if off_value is None:
            off_value, off_dtype = convert_to_tensor(0, dtype, name="off_value"), dtype
        if on_dtype is not off_dtype:
            raise TypeError(f"dtype {on_dtype} of on_value does not match dtype {off_dtype} of off_value")
        inputs = [("indices", indices, (dtypes.int64, dtypes.int32, dtypes.uint8)), ("depth", depth, dtypes.int32),
                  ("on_value", on_value, dtype), ("off_value", off_value, dtype)]
        return scoped_op("OneHot", name, inputs, {"axis": -1 if axis is None else int(axis)}).outputs[0]


@registry.RegisterShape("OneHot")
def _one_hot_shape(op):
    indices, depth, on_value, off_value = op.inputs
    for tensor in (depth, on_value, off_value):
        with_rank(op, tensor.shape, 0)
    axis = op.get_attr("axis")
    rank = indices.shape.ndims
    d = static_ints(depth)
    if d is not None and d < 0:
        raise common_shapes.shape_error(op, f"depth must be non-negative, got: {d}")
    if rank is None:
        return [(on_value.dtype.base_dtype, TensorShape(None))]
    if not -1 <= axis <= rank:
        raise common_shapes.shape_error(op, f"Expected axis to be -1 or between [0, {rank}].  But received: {axis}")
    dims = list(indices.shape.as_tuple())
    at = rank if axis == -1 else axis
    return [(on_value.dtype.base_dtype, TensorShape(dims[:at] + [d] + dims[at:]))]


@registry.RegisterArrayKernel("OneHot")
def _one_hot_kernel(op, backend):
    axis, xp, host = op.get_attr("axis"), backend.xp, backend.to_host
    dtype = backend.dtype(op.inputs[2].dtype.as_numpy_dtype)

    def compute(indices, depth, on_value, off_value):  # depth is read on the host (TF's HostMemory("depth"))
        depth = int(host(depth))
        if depth < 0:
            raise errors.InvalidArgumentError(None, op, f"depth must be non-negative, got: {depth}")
        indices = xp.asarray(indices)
        at = indices.ndim if axis == -1 else axis
        classes = xp.reshape(xp.arange(depth, dtype=indices.dtype), (depth,) + (1,) * (indices.ndim - at))
        return xp.astype(xp.where(xp.expand_dims(indices, axis=at) == classes, on_value, off_value), dtype)

    return compute
