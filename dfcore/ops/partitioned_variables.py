"""Partitioned variables: one logical variable stored as shards along one axis.

Source: ``tensorflow/python/ops/partitioned_variables.py`` (the partitioners) and
``variable_scope.py`` / ``variables.py`` (``_get_partitioned_variable``, ``PartitionedVariable``),
TF 1.x. ``tf.get_variable(name, shape, partitioner=...)`` makes the shards
``name/part_0``, ``name/part_1``, …; each is an ordinary variable, so under
``tf.train.replica_device_setter`` they go round-robin over the ps tasks — this is how TF spreads
one large embedding over several parameter servers. Shard ``i`` of ``n`` along an axis of size
``d`` has ``d // n`` rows, plus one for the first ``d % n`` shards. Used as a tensor, a partitioned
variable is the concatenation of its shards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from ..framework import graph as graph_lib
from ..framework.tensor_conversion import register_tensor_conversion_function
from ..framework.tensor_shape import TensorShape
from .array_ops_join import concat

if TYPE_CHECKING:
    from ..framework.graph import Graph
    from ..framework.operation import Operation
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import DTypeLike
    from .variables import Variable


@dataclasses.dataclass(frozen=True)
class SaveSliceInfo:
    """Where a shard sits in its full variable: ``full_name``, ``full_shape``, ``var_offset``, ``var_shape``."""

    full_name: str
    full_shape: list
    var_offset: list
    var_shape: list


@dataclasses.dataclass(frozen=True)
class PartitionInfo:
    """What an initializer is told about the shard it initializes (TF's ``_PartitionInfo``)."""

    full_shape: list
    var_offset: list


def fixed_size_partitioner(num_shards: int, axis: int = 0) -> Callable[..., list[int]]:
    """A partitioner making ``num_shards`` shards along ``axis`` (fewer if that axis is shorter).

    Raises:
        ValueError: ``num_shards`` < 1.
    """
    if int(num_shards) < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}")

    def partitioner(shape, dtype):
        partitions = [1] * len(shape)
        partitions[axis] = min(int(num_shards), int(shape[axis]))
        return partitions

    return partitioner


def min_max_variable_partitioner(max_partitions: int = 1, axis: int = 0, min_slice_size: int = 256 << 10,
                                 bytes_per_string_element: int = 16) -> Callable[..., list[int]]:
    """A partitioner giving shards of at least ``min_slice_size`` bytes each, at most ``max_partitions``.

    Raises:
        ValueError: ``max_partitions`` < 1 or ``min_slice_size`` < 1.
    """
    if max_partitions < 1 or min_slice_size < 1:
        raise ValueError("max_partitions and min_slice_size must be >= 1")

    def partitioner(shape, dtype):
        element_bytes = bytes_per_string_element if dtype.name == "string" else dtype.size
        total_bytes = element_bytes
        for dim in shape:
            total_bytes *= int(dim)
        wanted = max(1, min(max_partitions, int(shape[axis]), total_bytes // min_slice_size))
        partitions = [1] * len(shape)
        partitions[axis] = wanted
        return partitions

    return partitioner


def shard_slices(shape: Sequence[int], partitions: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """``[(offset, shard shape), ...]`` of the shards ``partitions`` (one count > 1, or none) makes of ``shape``.

    Raises:
        ValueError: ``partitions`` has the wrong length, a count < 1, or more than one axis split (TF's wording).
    """
    shape = [int(d) for d in shape]
    if len(partitions) != len(shape) or any(int(p) < 1 for p in partitions):
        raise ValueError(f"Partitioner returned invalid partitions {partitions} for shape {shape}")
    split = [i for i, p in enumerate(partitions) if int(p) > 1]
    if len(split) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: shape: {shape}, partitioning: {partitions}")
    if not split:
        return [([0] * len(shape), shape)]
    axis = split[0]
    count = int(partitions[axis])
    base, extra = divmod(shape[axis], count)
    slices, offset = [], 0
    for i in range(count):
        size = base + (1 if i < extra else 0)
        slices.append(([offset if d == axis else 0 for d in range(len(shape))],
                       [size if d == axis else s for d, s in enumerate(shape)]))
        offset += size
    return slices


class PartitionedVariable:
    """A variable stored as shards (``name/part_<i>``) along one axis; iterating gives the shards.

    Attributes:
        name: the full name (``"embedding"``); shape: the full :class:`TensorShape`; dtype.
    """

    def __init__(self, name: str, shape: Sequence[int], dtype: DTypeLike, variables: Sequence[Variable],
                 partitions: Sequence[int]):
        self.name, self._shape, self.dtype = name, TensorShape(shape), dtype
        self._variables, self._partitions = list(variables), list(partitions)

    def __iter__(self) -> Iterator[Variable]:
        return iter(self._variables)

    def __len__(self) -> int:
        return len(self._variables)

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    @property
    def op(self) -> Operation:
        return self._variables[0].op

    @property
    def graph(self) -> Graph:
        return self._variables[0].graph

    def _get_variable_list(self):
        return list(self._variables)

    def _get_partitions(self):
        return list(self._partitions)

    def _partition_axis(self):
        split = [i for i, p in enumerate(self._partitions) if p > 1]
        return split[0] if split else 0

    def as_tensor(self) -> Tensor:
        """The full value: the shards concatenated along the partition axis (``<name>/ConcatPartitions``)."""
        graph = graph_lib.get_default_graph()
        with graph.name_scope(""), graph.name_scope(self.name + "/ConcatPartitions/"):
            if len(self._variables) == 1:
                return self._variables[0].value()
            return concat([v.value() for v in self._variables], self._partition_axis(), name="concat")

    def __repr__(self):
        return f"<PartitionedVariable '{self.name}' shape={self._shape} shards={len(self._variables)}>"


def _to_tensor(value, dtype=None, name=None, as_ref=False):
    if dtype is not None and not dtype.is_compatible_with(value.dtype):
        raise ValueError(f"Incompatible type conversion requested to type '{dtype.name}' for variable of type "
                         f"'{value.dtype.name}'")
    return value.as_tensor()


register_tensor_conversion_function(PartitionedVariable, _to_tensor)

__all__ = ["PartitionedVariable", "fixed_size_partitioner", "min_max_variable_partitioner"]
