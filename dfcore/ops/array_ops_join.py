"""Array ops that join and split tensors: ``concat`` (``ConcatV2``), ``split``
(``Split``/``SplitV``), ``stack`` (``Pack``), ``unstack`` (``Unpack``), and the
``ConcatOffset`` helper of concat's gradient.

Source: ``tensorflow/python/ops/array_ops.py`` and ``core/ops/array_ops.cc``.
Gradients live in :mod:`dfcore.ops.array_grad`.
"""

import numpy as np

from .. import errors
from ..framework import dtypes, registry, scopes
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import contains_tensor, convert_to_tensor, register_tensor_conversion_function
from ..framework.tensor_shape import Dimension, TensorShape
from . import common_shapes
from .array_ops_util import (
    INDEX_TYPES,
    SAME_DTYPE_LIST,
    constant_value,
    constant_value_as_shape,
    merge_shapes,
    register_constant_value,
    register_partial_shape,
    scoped_op,
    static_ints,
    unknown_of_rank,
    with_rank,
    with_rank_at_least,
)

__all__ = ["concat", "split", "stack", "unstack"]


def _one_or_tuple(parts):
    """Kernel result for a multi-output op: the array itself when there is one output."""
    parts = tuple(parts)
    return parts[0] if len(parts) == 1 else parts


# -- concat -------------------------------------------------------------------------------
def concat(values, axis, name="concat"):
    """The tensors in ``values`` joined along dimension ``axis`` (negative counts from the end).

    One value gives an Identity named ``concat`` (TF1).
    Raises:
        InvalidArgumentError: ranks or non-axis dims differ, scalars, or axis out of range (TF's wording).
        TypeError: the values' dtypes differ.
    """
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) == 1:
        from .array_ops import identity

        with scopes.name_scope(name or "concat", values=values) as scope:
            axis_tensor = convert_to_tensor(axis, name="concat_dim", dtype=dtypes.int32)
            axis_tensor.shape.assert_is_compatible_with(TensorShape([]))
            return identity(values[0], name=scope)
    inputs = [("values", list(values), SAME_DTYPE_LIST), ("axis", axis, INDEX_TYPES)]
    return scoped_op("ConcatV2", name, inputs, {"N": len(values)}).outputs[0]


@registry.RegisterShape("ConcatV2")
def _concat_shape(op):
    values, axis = op.inputs[:-1], op.inputs[-1]
    dtype = values[0].dtype.base_dtype
    with_rank(op, axis.shape, 0)
    a = static_ints(axis)
    if a is None:
        rank = None
        for v in values:
            if rank is None:
                rank = v.shape.ndims
            if rank is not None:
                with_rank(op, v.shape, rank)
        if rank == 0:
            raise common_shapes.shape_error(op, "Can't concatenate scalars (use tf.stack instead)")
        return [(dtype, unknown_of_rank(rank))]
    min_rank = -a if a < 0 else a + 1
    for v in values:
        with_rank_at_least(op, v.shape, min_rank)
    if all(v.shape.ndims is None for v in values):
        return [(dtype, TensorShape(None))]
    known = next(v.shape for v in values if v.shape.ndims is not None)
    a %= known.ndims
    before, middle, after = TensorShape(None), 0, TensorShape(None)
    for v in reversed(values):
        dims = v.shape
        if dims.ndims is None:
            middle = None
            continue
        before = merge_shapes(op, dims[:a], before)
        after = merge_shapes(op, dims[a + 1:], after)
        d = dims.as_tuple()[a]
        middle = None if middle is None or d is None else middle + d
    return [(dtype, before.concatenate([middle]).concatenate(after))]


@registry.RegisterArrayKernel("ConcatV2")
def _concat_kernel(op, backend):
    xp, host = backend.xp, backend.to_host

    def compute(*args):  # the axis is read on the host (TF's HostMemory("axis"))
        values, axis = args[:-1], int(host(args[-1]))
        rank = values[0].ndim
        if not -rank <= axis < rank:
            raise errors.InvalidArgumentError(
                None, op, f"ConcatOp : Expected concatenating dimensions in the range [{-rank}, {rank}), but got "
                          f"{axis}")
        axis %= rank
        first = tuple(values[0].shape)
        for i, v in enumerate(values[1:], start=1):
            shape = tuple(v.shape)
            if len(shape) != rank or shape[:axis] + shape[axis + 1:] != first[:axis] + first[axis + 1:]:
                raise errors.InvalidArgumentError(
                    None, op, f"ConcatOp : Dimensions of inputs should match: shape[0] = [{','.join(map(str, first))}] "
                    f"vs. shape[{i}] = [{','.join(map(str, shape))}]")
        return xp.concat(values, axis=axis)

    return compute


@register_constant_value("ConcatV2")
def _concat_value(tensor):
    values = [constant_value(t) for t in tensor.op.inputs]
    if any(v is None for v in values):
        return None
    return np.concatenate(values[:-1], axis=int(values[-1]))


@register_partial_shape("ConcatV2")
def _concat_partial_shape(tensor):
    parts = [constant_value_as_shape(t) for t in tensor.op.inputs[:-1]]
    shape = TensorShape([])
    for part in parts:
        shape = shape.concatenate(part)
    return shape


def concat_offset(concat_dim, shape, name=None):
    """The offsets of each input of a concat along ``concat_dim``, given their shapes (int32 vectors)."""
    inputs = [("concat_dim", concat_dim, dtypes.int32), ("shape", list(shape), SAME_DTYPE_LIST)]
    return scoped_op("ConcatOffset", name, inputs, {"N": len(shape)}).outputs


@registry.RegisterShape("ConcatOffset")
def _concat_offset_shape(op):
    return [(dtypes.int32, t.shape) for t in op.inputs[1:]]


@registry.RegisterArrayKernel("ConcatOffset")
def _concat_offset_kernel(op, backend):
    host, from_host = backend.to_host, backend.from_host

    def compute(concat_dim, *shapes):  # shape metadata: computed on the host (TF's HostMemory)
        concat_dim, shapes = host(concat_dim), [host(s) for s in shapes]
        axis = int(concat_dim) % len(shapes[0])
        offsets, position = [], 0
        for shape in shapes:
            offset = np.zeros(len(shape), dtype=np.int32)
            offset[axis] = position
            offsets.append(offset)
            position += int(shape[axis])
        return _one_or_tuple(from_host(o) for o in offsets)

    return compute


registry.NotDifferentiable("ConcatOffset")


# -- split --------------------------------------------------------------------------------
def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Split ``value`` along ``axis`` into ``num_or_size_splits`` equal parts (op ``Split``)
    or into parts of the given sizes, one of which may be -1 (op ``SplitV``). Returns a list.

    Raises:
        ValueError: a scalar tensor of sizes, or ``num`` not inferable (TF's wording).
        InvalidArgumentError: the sizes do not fit the dimension.
    """
    size_splits = convert_to_tensor(num_or_size_splits)  # TF1 converts first, even a plain count
    if isinstance(num_or_size_splits, (int, np.integer, Dimension)) and not isinstance(num_or_size_splits, bool):
        inputs = [("split_dim", axis, dtypes.int32), ("value", value, None)]
        return scoped_op("Split", name, inputs, {"num_split": int(num_or_size_splits)}).outputs
    if size_splits.shape.ndims == 0:
        raise ValueError("Rank-0 tensors are not supported as the num_or_size_splits argument to split. "
                         f"Argument provided: {num_or_size_splits}")
    if num is None:
        dims = size_splits.shape.as_tuple()
        num = dims[0] if dims else None
        if num is None:
            raise ValueError(f"Cannot infer num from shape {num_or_size_splits}")
    inputs = [("value", value, None), ("size_splits", size_splits, INDEX_TYPES), ("split_dim", axis, dtypes.int32)]
    return scoped_op("SplitV", name, inputs, {"num_split": int(num)}).outputs


def _split_axis(op, split_dim, rank):
    with_rank(op, split_dim.shape, 0)
    a = static_ints(split_dim)
    if a is None or rank is None:
        return None
    if not -rank <= a < rank:
        raise common_shapes.shape_error(op, f"Dimension size, given by scalar input {a} must be in range "
                                            f"[{-rank}, {rank})")
    return a % rank


@registry.RegisterShape("Split")
def _split_shape(op):
    split_dim, value = op.inputs
    n = op.get_attr("num_split")
    rank = value.shape.ndims
    a = _split_axis(op, split_dim, rank)
    if a is None:
        return [(value.dtype.base_dtype, unknown_of_rank(rank))] * n
    dims = list(value.shape.as_tuple())
    if dims[a] is not None:
        if dims[a] % n:
            raise common_shapes.shape_error(
                op, f"Dimension size must be evenly divisible by {n} but is {dims[a]}\n\t"
                "Number of ways to split should evenly divide the split dimension")
        dims[a] //= n
    return [(value.dtype.base_dtype, TensorShape(dims))] * n


def _pieces(value, bounds, axis):
    """``value`` cut along ``axis`` at ``bounds`` (``[0, b1, ..., size]``), as views (basic slicing)."""
    lead = (slice(None),) * axis
    return [value[lead + (slice(start, stop), ...)] for start, stop in zip(bounds[:-1], bounds[1:])]


@registry.RegisterArrayKernel("Split")
def _split_kernel(op, backend):
    host = backend.to_host
    n = op.get_attr("num_split")

    def compute(split_dim, value):  # split_dim is read on the host (TF's HostMemory("split_dim"))
        split_dim = int(host(split_dim))
        axis = split_dim % max(value.ndim, 1)
        size = value.shape[axis]
        if size % n:
            raise errors.InvalidArgumentError(
                None, op, f"Number of ways to split should evenly divide the split dimension, but got split_dim "
                f"{split_dim} (size = {size}) and num_split {n}")
        return _one_or_tuple(_pieces(value, [size // n * i for i in range(n + 1)], axis))

    return compute


def _resolve_sizes(sizes, total, fail):
    """``sizes`` with its -1 (at most one) replaced; ``total`` may be None (unknown)."""
    if sum(1 for s in sizes if s == -1) > 1:
        fail("size_splits can only have one -1")
    known = sum(s for s in sizes if s != -1)
    if total is not None and (known > total if -1 in sizes else known != total):
        fail(f"can't split axis of size {total} into pieces of size [{','.join(map(str, sizes))}]")
    if -1 in sizes:
        return [None if total is None else total - known if s == -1 else s for s in sizes]
    return list(sizes)


@registry.RegisterShape("SplitV")
def _split_v_shape(op):
    value, size_splits, split_dim = op.inputs
    n = op.get_attr("num_split")
    dtype, rank = value.dtype.base_dtype, value.shape.ndims
    if rank == 0:
        raise common_shapes.shape_error(op, "Can't split scalars")
    a = _split_axis(op, split_dim, rank)
    sizes = static_ints(size_splits)
    if a is None or sizes is None:
        return [(dtype, unknown_of_rank(rank))] * n
    if len(sizes) != n:
        raise common_shapes.shape_error(op, "Length of size_splits should be equal to num_outputs")

    def fail(message):
        raise common_shapes.shape_error(op, message)

    dims = list(value.shape.as_tuple())
    return [(dtype, TensorShape(dims[:a] + [s] + dims[a + 1:])) for s in _resolve_sizes(sizes, dims[a], fail)]


@registry.RegisterArrayKernel("SplitV")
def _split_v_kernel(op, backend):
    host = backend.to_host

    def fail(message):
        raise errors.InvalidArgumentError(None, op, message)

    def compute(value, size_splits, split_dim):  # sizes and split_dim are read on the host (TF's HostMemory)
        axis = int(host(split_dim)) % max(value.ndim, 1)
        sizes = _resolve_sizes([int(s) for s in host(size_splits)], value.shape[axis], fail)
        return _one_or_tuple(_pieces(value, [0] + [int(b) for b in np.cumsum(sizes)], axis))

    return compute


# -- stack / unstack ------------------------------------------------------------------------
def stack(values, axis=0, name="stack"):
    """The rank-R tensors in ``values`` stacked into one rank-(R+1) tensor along ``axis``.

    A list of plain Python/numpy values with ``axis=0`` gives one Const named ``stack`` (TF1).
    Raises:
        ValueError: ``axis`` out of ``[-(R+1), R+1)`` (TF's wording).
        InvalidArgumentError: the shapes differ (``From merging shape 0 with other shapes.``).
    """
    if axis == 0 and not contains_tensor(values):
        return convert_to_tensor(values, name=name)
    first = values[0] if isinstance(values[0], Tensor) else convert_to_tensor(values[0], name=name)
    if first.shape.ndims is not None:
        expanded = first.shape.ndims + 1
        if not -expanded <= axis < expanded:
            raise ValueError(f"axis = {axis} not in [{-expanded}, {expanded})")
    inputs = [("values", list(values), SAME_DTYPE_LIST)]
    return scoped_op("Pack", name, inputs, {"N": len(values), "axis": int(axis)}).outputs[0]


def _pack_axis(op, axis, rank):
    if not -rank <= axis < rank:
        raise common_shapes.shape_error(op, f"Invalid axis: {axis}; must be in [{-rank},{rank})")
    return axis % rank


@registry.RegisterShape("Pack")
def _pack_shape(op):
    values = op.inputs
    shape = values[-1].shape
    for i in range(len(values) - 2, -1, -1):
        shape = merge_shapes(op, values[i].shape, shape, f"\n\tFrom merging shape {i} with other shapes.")
    if shape.ndims is None:
        return [(values[0].dtype.base_dtype, TensorShape(None))]
    axis = _pack_axis(op, op.get_attr("axis"), shape.ndims + 1)
    dims = list(shape.as_tuple())
    return [(values[0].dtype.base_dtype, TensorShape(dims[:axis] + [len(values)] + dims[axis:]))]


@registry.RegisterArrayKernel("Pack")
def _pack_kernel(op, backend):
    axis, stack = op.get_attr("axis"), backend.xp.stack
    return lambda *values: stack(values, axis=axis)


@register_constant_value("Pack")
def _pack_value(tensor):
    values = [constant_value(t) for t in tensor.op.inputs]
    return None if any(v is None for v in values) else np.stack(values, axis=tensor.op.get_attr("axis"))


@register_partial_shape("Pack")
def _pack_partial_shape(tensor):
    if tensor.op.get_attr("axis") != 0 or any(t.shape.ndims != 0 for t in tensor.op.inputs):
        return TensorShape([None] * len(tensor.op.inputs))
    dims = [static_ints(t) for t in tensor.op.inputs]
    return TensorShape([None if d is None or d == -1 else d for d in dims])


def unstack(value, num=None, axis=0, name="unstack"):
    """The rank-(R-1) slices of rank-R ``value`` along ``axis``, as a list of ``num`` tensors.

    Raises:
        ValueError: ``num`` unknown and not inferable, or ``axis`` out of range (TF's wording).
    """
    if num is None:
        value = convert_to_tensor(value)
        shape = value.shape
        if shape.ndims is not None:
            if not -shape.ndims <= axis < shape.ndims:
                raise ValueError(f"axis = {axis} not in [{-shape.ndims}, {shape.ndims})")
            num = shape.as_tuple()[axis]
        if num is None:
            raise ValueError(f"Cannot infer num from shape {shape}")
    return scoped_op("Unpack", name, [("value", value, None)], {"num": int(num), "axis": int(axis)}).outputs


def _tensor_iter(self):
    """``iter(tensor)``: its slices along axis 0 (TF's ``Tensor.__iter__``)."""
    shape = self._shape
    if shape.ndims is None or shape.ndims == 0 or shape.as_list()[0] is None:
        raise TypeError("Tensor objects are only iterable when the first dimension is known.")
    return iter(unstack(self))


def _autopacking_conversion(value, dtype=None, name=None, as_ref=False):
    """``convert_to_tensor`` of a list or tuple holding Tensors: one packed Tensor (TF's autopacking);
    ``NotImplemented`` for one without Tensors, which ``tf.constant`` converts."""
    if not contains_tensor(value):
        return NotImplemented
    items = list(value) if dtype is None else [convert_to_tensor(v, dtype=dtype) for v in value]
    return stack(items, name=name or "packed")


Tensor._override_operator("__iter__", _tensor_iter)
register_tensor_conversion_function((list, tuple), _autopacking_conversion, priority=99)


@registry.RegisterShape("Unpack")
def _unpack_shape(op):
    x = op.inputs[0]
    num = op.get_attr("num")
    if x.shape.ndims is None:
        return [(x.dtype.base_dtype, TensorShape(None))] * num
    axis = _pack_axis(op, op.get_attr("axis"), x.shape.ndims)
    dims = list(x.shape.as_tuple())
    if dims[axis] is not None and dims[axis] != num:
        raise common_shapes.shape_error(op, f"Dimension must be {num} but is {dims[axis]}")
    return [(x.dtype.base_dtype, TensorShape(dims[:axis] + dims[axis + 1:]))] * num


@registry.RegisterArrayKernel("Unpack")
def _unpack_kernel(op, backend):
    num, axis, unstack = op.get_attr("num"), op.get_attr("axis"), backend.xp.unstack

    def compute(value):
        if value.shape[axis] != num:
            raise errors.InvalidArgumentError(
                None, op, f"Input shape axis {axis} must equal {num}, got shape "
                          f"[{','.join(map(str, value.shape))}]")
        return _one_or_tuple(unstack(value, axis=axis))

    return compute
