"""All-reduce built from ordinary graph ops, as TF's ``all_reduce.py`` builds it.

Source: ``tensorflow/python/distribute/v1/all_reduce.py`` (formerly
``contrib/all_reduce``): ``build_ring_all_reduce``, ``build_recursive_hd_all_reduce``,
``build_shuffle_all_reduce``. Every chunk is a ``Split`` output; every step is a
``red_op`` (e.g. ``tf.add``) or ``Identity`` placed on the receiving device, so the
partitioner turns every chunk that crosses devices into a ``_Send``/``_Recv`` pair and
``sess.partitions(...)`` shows the algorithm. The ring and halving-doubling builders
follow the same :mod:`dfcore.distribute.schedules` as the runtime collective — same
chunks, same order of additions, so the same values bit for bit.

Differences from TF: chunks are cut by the schedules' rule (``np.array_split``-like, no
padding); the ring's per-subchunk rotation of TF's ``_ring_permutations`` is not done
(every subchunk uses the ring given by ``gpu_perm``); recursive halving-doubling accepts
any number of devices (non-powers of two fold first, see schedules).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..framework.scopes import device as device_scope
from ..framework.tensor import Tensor
from ..ops import array_ops, array_ops_join
from . import schedules
from .arguments import check_count


def build_ring_all_reduce(input_tensors: Sequence[Tensor], num_workers: int, num_subchunks: int,
                          gpu_perm: Sequence[int], red_op: Callable[..., Tensor],
                          un_op: Callable[[Tensor], Tensor] | None = None) -> list[Tensor]:
    """Ring all-reduce subgraph (textbook convention).

    Args:
        input_tensors: N Tensors of one dtype and fully known shape, one per device (their
            ``.device`` places each rank's ops); worker ``w`` holds inputs
            ``w·G … w·G+G−1`` with ``G = N / num_workers``.
        num_workers: number of workers (tasks) spanned by the inputs.
        num_subchunks: segments per tensor (each step moves one chunk of every segment).
        gpu_perm: the ring order of the G devices within each worker.
        red_op: binary reduction, e.g. ``tf.add``.
        un_op: optional unary op applied to each fully reduced chunk (e.g. divide by N).
    Returns:
        N output Tensors, in input order, each on its input's device.
    Raises:
        ValueError: no inputs, N not divisible by ``num_workers``, ``gpu_perm`` not a
            permutation of ``range(G)``, shapes not fully known / not equal, or ``num_subchunks``
            outside ``[1, ⌈K/N⌉]`` (:func:`~dfcore.distribute.schedules.check_arguments`), all
            before any op is built.
    """
    n = len(input_tensors)
    check_count("num_workers", num_workers, 1)
    if n == 0 or n % num_workers:
        raise ValueError(f"{n} input tensors cannot be spread over {num_workers} workers")
    per_worker = n // num_workers
    if sorted(gpu_perm) != list(range(per_worker)):
        raise ValueError(f"gpu_perm must be a permutation of range({per_worker}), got {list(gpu_perm)}")
    order = [w * per_worker + g for w in range(num_workers) for g in gpu_perm]
    return _build(input_tensors, order, "ring", num_subchunks, red_op, un_op)


def build_recursive_hd_all_reduce(input_tensors: Sequence[Tensor], red_op: Callable[..., Tensor],
                                  un_op: Callable[[Tensor], Tensor] | None = None) -> list[Tensor]:
    """Recursive halving-doubling all-reduce subgraph (any N; see schedules); same args as the ring."""
    return _build(input_tensors, list(range(len(input_tensors))), "recursive_halving_doubling", 1, red_op, un_op)


def build_shuffle_all_reduce(input_tensors: Sequence[Tensor], gather_devices: Sequence[str],
                             red_op: Callable[..., Tensor],
                             un_op: Callable[[Tensor], Tensor] | None = None) -> list[Tensor]:
    """Shuffle all-reduce: "essentially the algorithm implemented when using parameter servers" (TF).

    Each input is cut into ``len(gather_devices)`` shards; shard j of every input goes to
    ``gather_devices[j]``, which reduces them with the n-ary ``red_op`` (e.g. ``tf.add_n``)
    and applies ``un_op``; every device then gathers the reduced shards and concatenates them.

    Returns:
        N output Tensors, in input order, each on its input's device.
    Raises:
        ValueError: no inputs or no gather devices, or shapes not fully known / not equal.
    """
    if not gather_devices:
        raise ValueError("build_shuffle_all_reduce needs at least one gather device")
    flats, shape, devices = _flatten(input_tensors)
    ranges = schedules.chunk_layout(int(flats[0].shape[0]), 1, len(gather_devices))
    shards = [_split(f, ranges, d) for f, d in zip(flats, devices)]
    reduced = []
    for j, gather in enumerate(gather_devices):
        with device_scope(gather):
            total = red_op([s[j] for s in shards])
            reduced.append(un_op(total) if un_op is not None else total)
    return [_join(reduced, shape, d) for d in devices]


def _common_shape(input_tensors):
    """The inputs' one fully known shape (checked before any op is built)."""
    if not input_tensors:
        raise ValueError("tensors cannot be empty")
    shape = input_tensors[0].shape
    for t in input_tensors:
        if not t.shape.is_fully_defined() or t.shape != shape:
            raise ValueError(f"All-reduce inputs need one fully known shape, got {shape} and {t.shape}")
    return shape


def _flatten(input_tensors):
    shape = _common_shape(input_tensors)
    devices = [t.device for t in input_tensors]
    flats = []
    for t, d in zip(input_tensors, devices):
        with device_scope(d):
            flats.append(array_ops.reshape(t, [-1]))
    return flats, shape.as_list(), devices


def _split(flat, ranges, device):
    with device_scope(device):
        return array_ops_join.split(flat, [b - a for a, b in ranges]) if len(ranges) > 1 else [flat]


def _join(chunks, shape, device):
    with device_scope(device):
        joined = array_ops_join.concat(chunks, 0) if len(chunks) > 1 else array_ops.identity(chunks[0])
        return array_ops.reshape(joined, shape)


def _build(input_tensors, order, algorithm, num_subchunks, red_op, un_op):
    """Emit ops for ``schedules.build_schedule(algorithm, …)``; rank k is input ``order[k]``."""
    schedule = schedules.build_schedule(algorithm, len(order), _common_shape(input_tensors).num_elements(),
                                        num_subchunks)
    flats, shape, devices = _flatten(input_tensors)
    devices = [devices[i] for i in order]
    chunks = [_split(flats[i], schedule.chunk_ranges, d) for i, d in zip(order, devices)]
    for step in schedule.steps:
        if isinstance(step, schedules.Finalize):
            if un_op is not None:
                with device_scope(devices[step.rank]):
                    for c in step.chunks:
                        chunks[step.rank][c] = un_op(chunks[step.rank][c])
            continue
        with device_scope(devices[step.dst]):
            for c in step.chunks:
                if step.op == "reduce":
                    chunks[step.dst][c] = red_op(chunks[step.dst][c], chunks[step.src][c])
                else:
                    chunks[step.dst][c] = array_ops.identity(chunks[step.src][c])
    outputs = [None] * len(order)
    for rank, i in enumerate(order):
        outputs[i] = _join(chunks[rank], shape, devices[rank])
    return outputs
