"""``tf.nn.embedding_lookup``: rows of one table, or of a table sharded over several variables.

Source: ``tensorflow/python/ops/embedding_ops.py`` (``embedding_lookup``,
``_embedding_lookup_and_transform``, ``_clip``), TF 1.x. With several shards the ids are split by
``partition_strategy`` with ``DynamicPartition``, each shard's ``GatherV2`` is colocated with (so placed
on the device of) its shard, and ``ParallelDynamicStitch`` puts the rows back in the ids' order.

* ``"mod"``: id ``i`` lives in shard ``i % n`` at row ``i // n``.
* ``"div"``: ids are dealt out in contiguous blocks, the first ``total % n`` shards one row longer
  (the layout of ``fixed_size_partitioner``, so ``div`` on a ``PartitionedVariable`` reads the
  concatenated table).

dfcore has no ``IndexedSlices``: the gradient reaching each shard is a dense tensor of the shard's
shape (``UnsortedSegmentSum`` of the looked-up rows' gradients), where TF would send sparse slices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..framework import dtypes
from ..framework.scopes import colocate_with, name_scope
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from . import array_ops, array_ops_gather, array_ops_join, array_ops_where, constant_op, math_ops
from .clip_ops import clip_by_norm
from .dynamic_partition import dynamic_partition, parallel_dynamic_stitch
from .partitioned_variables import PartitionedVariable

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = ["embedding_lookup"]


def embedding_lookup(params: TensorLike, ids: TensorLike, partition_strategy: str = "mod", name: str | None = None,
                     validate_indices: bool = True, max_norm: float | None = None) -> Tensor:
    """The rows ``params[ids]``: a tensor ``ids.shape + params.shape[1:]`` of params' dtype.

    Args:
        params: a Tensor or Variable (the table), a list of them (shards of one table, all with the same
            trailing dims), or a :class:`~dfcore.ops.partitioned_variables.PartitionedVariable`.
        ids: int32 or int64 ids into the (concatenated) table, any shape.
        partition_strategy: ``"mod"`` or ``"div"`` (see the module docstring); unused with one shard.
        validate_indices: ignored, as in TF.
        max_norm: if given, each looked-up row is clipped to this L2 norm (:func:`~dfcore.ops.clip_ops.clip_by_norm`).
    Raises:
        ValueError: no params, or an unknown ``partition_strategy`` (TF's wording).
        InvalidArgumentError: an id outside its shard (run time, from ``GatherV2``).
    Source: ``tensorflow/python/ops/embedding_ops.py``.
    """
    if params is None or (isinstance(params, (list, tuple)) and not params):
        raise ValueError("Need at least one param")
    if isinstance(params, PartitionedVariable):
        params = list(params)
    params = list(params) if isinstance(params, (list, tuple)) else [params]
    with name_scope(name, "embedding_lookup", params + [ids]) as scope:
        params = [convert_to_tensor(p, name="params") for p in params]
        ids = convert_to_tensor(ids, name="ids")
        if len(params) == 1:
            with colocate_with(params[0]):
                result = _clip(array_ops_gather.gather(params[0], ids, name=scope), ids, max_norm)
            return array_ops.identity(result)  # free of the table's colocation, as with several shards
        return _sharded_lookup(params, ids, partition_strategy, scope, max_norm)


def _sharded_lookup(params, ids, partition_strategy, scope, max_norm):
    n = len(params)
    flat_ids = array_ops.reshape(ids, [-1])
    original_indices = math_ops.range_(array_ops.size(flat_ids))
    if partition_strategy == "mod":
        p_assignments = math_ops.floormod(flat_ids, n)
        new_ids = math_ops.floordiv(flat_ids, n)
    elif partition_strategy == "div":
        p_assignments, new_ids = _div_assignments(params, flat_ids)
    else:
        raise ValueError("Unrecognized partition strategy: " + partition_strategy)
    p_assignments = math_ops.cast(p_assignments, dtypes.int32)
    gather_ids = dynamic_partition(new_ids, p_assignments, n)
    pindices = dynamic_partition(original_indices, p_assignments, n)
    partitioned_result = []
    for shard, shard_ids in zip(params, gather_ids):
        with colocate_with(shard):
            partitioned_result.append(array_ops_gather.gather(shard, shard_ids))
    ret = parallel_dynamic_stitch(pindices, partitioned_result, name=scope)
    element_shape = params[0].shape[1:]
    for shard in params[1:]:
        element_shape = element_shape.merge_with(shard.shape[1:])
    if element_shape.is_fully_defined():
        element_dims = element_shape.as_list()
    else:
        with colocate_with(params[0]):
            element_dims = array_ops.shape(params[0])[1:]
    ret = array_ops.reshape(ret, array_ops_join.concat([array_ops.shape(ids), element_dims], 0))
    ret.set_shape(ids.shape.concatenate(element_shape))
    return _clip(ret, ids, max_norm)


def _div_assignments(params, flat_ids):
    """``(shard of each id, row within the shard)`` for ``"div"``: blocks of ``total // n`` ids, the first
    ``total % n`` shards one longer (TF's formula, with the table's total rows known statically if possible)."""
    n = len(params)
    known = [shard.shape[0].value for shard in params]
    index_dtype = flat_ids.dtype.base_dtype
    if None not in known and sum(known):
        num_total_ids = constant_op.constant(sum(known), index_dtype)
    else:
        sizes = []
        for shard, size in zip(params, known):
            if size is None:
                with colocate_with(shard):
                    size = array_ops.shape(shard)[0]
            sizes.append(size)
        num_total_ids = math_ops.reduce_sum(math_ops.cast(array_ops_join.stack(sizes), index_dtype))
    ids_per_partition = math_ops.floordiv(num_total_ids, n)
    extras = math_ops.floormod(num_total_ids, n)
    p_assignments = math_ops.maximum(math_ops.floordiv(flat_ids, ids_per_partition + 1),
                                     math_ops.floordiv(flat_ids - extras, ids_per_partition))
    new_ids = array_ops_where.where(math_ops.less(p_assignments, extras),
                              math_ops.floormod(flat_ids, ids_per_partition + 1),
                              math_ops.floormod(flat_ids - extras, ids_per_partition))
    return p_assignments, new_ids


def _clip(params, ids, max_norm):
    """``params`` (looked-up rows) with each row's L2 norm clipped to ``max_norm``; unchanged if None."""
    if max_norm is None:
        return params
    ids_rank, params_rank = ids.shape.ndims, params.shape.ndims
    axes: Any
    if ids_rank and params_rank:
        axes = list(range(ids_rank, params_rank))
    else:
        axes = math_ops.range_(array_ops.rank(ids), array_ops.rank(params))
    return clip_by_norm(params, max_norm, axes=axes)
