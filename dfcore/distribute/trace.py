"""What a collective did, as plain frozen records for lessons and widgets.

A :class:`CollectiveTrace` holds one :class:`RoundRecord` per algorithm round, each with
the :class:`ChunkTransfer` of every message in that round (source and destination rank
and device, chunk, element range, bytes, the value sent and the receiver's partial
result right after it), the bytes each device sent and each link carried, and the
tensor-fusion copies (:class:`FusionCopy`) when small tensors were packed. Values are
numpy arrays the trace owns (messages and snapshots, never the caller's output
buffers), except ``inputs``.
"""

from __future__ import annotations

import dataclasses
import types

import numpy as np

from ..runtime.rendezvous import TransferRecord


@dataclasses.dataclass(frozen=True)
class ChunkTransfer:
    """One message of a collective.

    Attributes:
        src, dst: sender and receiver ranks (indices into ``CollectiveTrace.devices``).
        src_device, dst_device: their full device names.
        chunk_id: the first leaf chunk carried; ``chunk_ids`` all of them (one, except in
            recursive halving-doubling and whole-tensor messages).
        element_range: ``(start, stop)`` in the flattened tensor.
        nbytes: bytes moved (``(stop − start) · itemsize``).
        op: ``"reduce"`` (the receiver combined it with its own) or ``"copy"`` (stored it).
        key: the rendezvous key it crossed under.
        value_sent: the elements sent (1-D array).
        partial_sum_after: the receiver's elements of ``element_range`` right after this
            message was applied (for ``"copy"``: the value received).
    """

    src: int
    dst: int
    src_device: str
    dst_device: str
    chunk_id: int
    chunk_ids: tuple[int, ...]
    element_range: tuple[int, int]
    nbytes: int
    op: str
    key: str
    value_sent: np.ndarray | None = None
    partial_sum_after: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class RoundRecord:
    """One round: its index, its phase (``scatter_reduce``/``allgather`` for the ring;
    ``reduce``/``broadcast``, ``fold``/``unfold`` for the others) and its transfers."""

    round: int
    phase: str
    transfers: tuple[ChunkTransfer, ...]


@dataclasses.dataclass(frozen=True)
class FusionCopy:
    """A tensor-fusion copy (Horovod's names): ``MEMCPY_IN_FUSION_BUFFER`` packs tensor
    ``tensor_index`` of ``device`` into ``buffer_range`` of the fusion buffer,
    ``MEMCPY_OUT_FUSION_BUFFER`` unpacks it."""

    name: str
    device: str
    tensor_index: int
    buffer_range: tuple[int, int]
    nbytes: int


@dataclasses.dataclass(frozen=True)
class CollectiveTrace:
    """Everything one all-reduce did.

    Attributes:
        algorithm, convention, reduction: as requested.
        devices: full device names, in rank order.
        num_elements, dtype: the flattened tensor's length and numpy dtype name.
        num_subchunks: segments per tensor (see :mod:`dfcore.distribute.schedules`).
        chunk_ranges: ``(start, stop)`` of every leaf chunk.
        rounds: :class:`RoundRecord` per round, in order.
        bytes_sent_per_device: device → bytes it sent (read-only mapping).
        bytes_per_link: ``(src_device, dst_device)`` → bytes carried (read-only mapping).
        fusion_copies: :class:`FusionCopy` records (empty without fusion).
        inputs: each rank's flattened input, as given (not copied: a caller that keeps the
            trace should not modify its inputs).
    """

    algorithm: str
    convention: str
    reduction: str
    devices: tuple[str, ...]
    num_elements: int
    dtype: str
    num_subchunks: int
    chunk_ranges: tuple[tuple[int, int], ...]
    rounds: tuple[RoundRecord, ...]
    bytes_sent_per_device: types.MappingProxyType[str, int]
    bytes_per_link: types.MappingProxyType[tuple[str, str], int]
    fusion_copies: tuple[FusionCopy, ...] = ()
    inputs: tuple[np.ndarray, ...] | None = None

    @property
    def transfers(self) -> tuple[ChunkTransfer, ...]:
        """Every :class:`ChunkTransfer`, round by round."""
        return tuple(t for r in self.rounds for t in r.transfers)

    @property
    def num_rounds(self) -> int:
        return len(self.rounds)


@dataclasses.dataclass(frozen=True)
class AllReduceResult:
    """What :func:`dfcore.distribute.all_reduce` returns.

    Attributes:
        outputs: one array per device, the input's shape and dtype.
        trace: the :class:`CollectiveTrace`, or None when run with ``trace=False``.
        transfers: the rendezvous :class:`~dfcore.runtime.rendezvous.TransferRecord` of
            each message, in match order.
        simulated_time_s: the deterministic replay on the machine profile.
        wall_time_s: measured time of the data movement and reductions.
        predicted_time_s: the α-β(-γ) formula of the algorithm
            (:func:`dfcore.distribute.collective_cost.predicted_time_s`).
    """

    outputs: tuple[np.ndarray, ...]
    trace: CollectiveTrace | None
    transfers: tuple[TransferRecord, ...]
    simulated_time_s: float
    wall_time_s: float
    predicted_time_s: float
