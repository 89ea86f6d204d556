"""``tf.dynamic_partition`` (``DynamicPartition``) and ``tf.dynamic_stitch`` / ``tf.parallel_dynamic_stitch``
(``DynamicStitch``, ``ParallelDynamicStitch``), with their gradients.

Source: ``tensorflow/python/ops/data_flow_ops.py`` (the names), ``core/ops/data_flow_ops.cc`` (shape
functions), ``core/kernels/dynamic_partition_op.cc``, ``dynamic_stitch_op.cc`` and ``data_flow_grad.py``
(the gradients), TF 1.x. ``embedding_lookup`` uses them to split ids over shards and to put the rows back.
The two stitch ops compute the same thing here (the later of two equal indices wins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor import Tensor
from ..framework.tensor_shape import TensorShape
from . import common_shapes
from .array_ops_util import SAME_DTYPE_LIST, constant_value, merge_shapes, scoped_op
from .op_costs import io_elements

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = ["dynamic_partition", "dynamic_stitch", "parallel_dynamic_stitch"]


def _dims(shape):
    return ",".join(map(str, shape))


def _check_prefix(op, data_shape, index_shape, what):
    if tuple(data_shape[:len(index_shape)]) != tuple(index_shape):
        raise errors.InvalidArgumentError(None, op, f"{what[0]}.shape = [{_dims(data_shape)}] does not start with "
                                                    f"{what[1]}.shape = [{_dims(index_shape)}]")


# -- DynamicPartition ---------------------------------------------------------------------------
def dynamic_partition(data: TensorLike, partitions: TensorLike, num_partitions: int, name: str | None = None) -> list:
    """``num_partitions`` tensors: output ``i`` holds the slices ``data[js]`` with ``partitions[js] == i``,
    in order; ``partitions`` (int32) has the leading shape of ``data``, each output
    ``[count_i] + data.shape[rank(partitions):]``.

    Raises:
        ValueError: ``num_partitions`` < 1.
        InvalidArgumentError: ``partitions.shape`` not a prefix of ``data.shape``, or a partition outside
            ``[0, num_partitions)`` at run time (TF's wording).
    Source: ``tensorflow/python/ops/data_flow_ops.py`` (``gen_data_flow_ops.dynamic_partition``).
    """
    if int(num_partitions) < 1:
        raise ValueError(f"DynamicPartition: num_partitions must be >= 1, got {num_partitions}")
    inputs = [("data", data, None), ("partitions", partitions, (dtypes.int32,))]
    return list(scoped_op("DynamicPartition", name, inputs, {"num_partitions": int(num_partitions)}).outputs)


@registry.RegisterShape("DynamicPartition")
def _dynamic_partition_shape(op):
    data, partitions = op.inputs
    num = op.get_attr("num_partitions")
    if data.shape.ndims is None or partitions.shape.ndims is None:
        return [(data.dtype.base_dtype, TensorShape(None))] * num
    k = partitions.shape.ndims
    if data.shape.ndims < k:
        raise common_shapes.shape_error(op, f"Shape must be at least rank {k} but is rank {data.shape.ndims}")
    merge_shapes(op, data.shape[:k], partitions.shape)
    return [(data.dtype.base_dtype, TensorShape([None]).concatenate(data.shape[k:]))] * num


@registry.RegisterKernel("DynamicPartition")
def _dynamic_partition_kernel(op):
    num = op.get_attr("num_partitions")

    def compute(data, partitions):
        data, partitions = np.asarray(data), np.asarray(partitions)
        _check_prefix(op, data.shape, partitions.shape, ("data", "partitions"))
        bad = np.flatnonzero((partitions < 0) | (partitions >= num))
        if bad.size:
            where = ",".join(map(str, np.unravel_index(bad[0], partitions.shape)))
            raise errors.InvalidArgumentError(None, op, f"partitions[{where}] = {partitions.reshape(-1)[bad[0]]} is "
                                                        f"not in [0, {num})")
        parts = tuple(data[partitions == i] for i in range(num))
        return parts if num > 1 else parts[0]

    return compute


@registry.RegisterGradient("DynamicPartition")
def _dynamic_partition_grad(op, *grads):
    """Partition the positions of ``data``'s leading slices as ``data`` was, and stitch ``grads`` back there."""
    from . import array_ops, math_ops

    data, partitions = op.inputs
    prefix_shape = array_ops.shape(partitions)
    original_indices = array_ops.reshape(math_ops.range_(math_ops.reduce_prod(prefix_shape)), prefix_shape)
    partitioned = dynamic_partition(original_indices, partitions, op.get_attr("num_partitions"))
    reconstructed = dynamic_stitch(partitioned, list(grads))
    return array_ops.reshape(reconstructed, array_ops.shape(data)), None


# -- DynamicStitch ------------------------------------------------------------------------------
def _stitch(op_type, indices, data, name):
    indices, data = list(indices), list(data)
    if len(indices) != len(data) or not indices:
        raise ValueError(f"{op_type}: indices and data must be non-empty lists of the same length, got "
                         f"{len(indices)} and {len(data)}")
    inputs = [("indices", indices, SAME_DTYPE_LIST), ("data", data, SAME_DTYPE_LIST)]
    return scoped_op(op_type, name, inputs, {"N": len(indices)}).outputs[0]


def dynamic_stitch(indices: TensorLike, data: TensorLike, name: str | None = None) -> Tensor:
    """``merged[indices[m][i...]] = data[m][i...]``: one tensor ``[max(indices) + 1] + data[0].shape[rank(
    indices[0]):]`` from lists of int32 ``indices`` and of ``data`` (each ``data[m]`` starts with
    ``indices[m].shape``); where indices repeat, the later (m, i) wins.

    Raises:
        ValueError: lists of different lengths or empty.
        InvalidArgumentError: ``data[m].shape`` does not start with ``indices[m].shape`` (TF's wording).
    Source: ``tensorflow/python/ops/data_flow_ops.py`` (``gen_data_flow_ops.dynamic_stitch``).
    """
    return _stitch("DynamicStitch", indices, data, name)


def parallel_dynamic_stitch(indices: TensorLike, data: TensorLike, name: str | None = None) -> Tensor:
    """:func:`dynamic_stitch` as TF's ``ParallelDynamicStitch`` (the op ``embedding_lookup`` uses)."""
    return _stitch("ParallelDynamicStitch", indices, data, name)


def _stitch_shape(op):
    n = op.get_attr("N")
    indices, data = op.inputs[:n], op.inputs[n:]
    dtype = data[0].dtype.base_dtype
    element = TensorShape(None)
    for index, value in zip(indices, data):
        if index.dtype.base_dtype is not dtypes.int32:
            raise TypeError(f"Input 'indices' of '{op.type}' Op has type {index.dtype.base_dtype.name} that does "
                            f"not match expected type of int32.")
        if value.dtype.base_dtype is not dtype:
            raise TypeError(f"Tensors in list passed to 'data' of '{op.type}' Op have types that don't all match.")
        if index.shape.ndims is None or value.shape.ndims is None:
            continue
        k = index.shape.ndims
        if value.shape.ndims < k:
            raise common_shapes.shape_error(op, f"Shape must be at least rank {k} but is rank {value.shape.ndims}")
        merge_shapes(op, value.shape[:k], index.shape)
        element = merge_shapes(op, element, value.shape[k:])
    values = [constant_value(index) for index in indices]
    first = None
    if all(v is not None for v in values):
        first = max((int(np.max(v)) for v in values if np.size(v)), default=-1) + 1
    return [(dtype, TensorShape([first]).concatenate(element))]


def _stitch_kernel(op):
    n = op.get_attr("N")

    def compute(*inputs):
        indices, data = [np.asarray(v) for v in inputs[:n]], [np.asarray(v) for v in inputs[n:]]
        element = data[0].shape[indices[0].ndim:]
        for m, (index, value) in enumerate(zip(indices, data)):
            _check_prefix(op, value.shape, index.shape, (f"data[{m}]", f"indices[{m}]"))
            if value.shape[index.ndim:] != element:
                raise errors.InvalidArgumentError(
                    None, op, f"Need data[{m}].shape[{index.ndim}:] = [{_dims(value.shape[index.ndim:])}] to match "
                    f"data[0].shape[{indices[0].ndim}:] = [{_dims(element)}]")
        rows = max((int(index.max()) for index in indices if index.size), default=-1) + 1
        merged = np.zeros((rows,) + element, dtype=data[0].dtype)
        for index, value in zip(indices, data):
            merged[index.reshape(-1)] = value.reshape((-1,) + element)
        return merged

    return compute


def _stitch_grad(op, grad):
    """Each ``data[m]`` gets ``gather(grad, indices[m])``; the indices get none."""
    from .array_ops_gather import gather

    n = op.get_attr("N")
    return [None] * n + [gather(grad, index) for index in op.inputs[:n]]


def _free_cost(input_shapes, output_shapes, attrs):
    """Moves data, computes nothing: 0 flops, every element read and written once."""
    return 0, io_elements(input_shapes, output_shapes)


for _op_type in ("DynamicStitch", "ParallelDynamicStitch"):
    registry.RegisterShape(_op_type)(_stitch_shape)
    registry.RegisterKernel(_op_type)(_stitch_kernel)
    registry.RegisterGradient(_op_type)(_stitch_grad)
    registry.RegisterCost(_op_type)(_free_cost)
registry.RegisterCost("DynamicPartition")(_free_cost)
