"""The one interpreter of an all-reduce schedule: what each rank sends, receives, reduces, copies and divides,
and in which order; *how* a chunk moves is a small message layer's business.

Source: the schedules of :mod:`dfcore.distribute.schedules` (Gibiansky, "Bringing HPC Techniques to Deep
Learning", Baidu 2017; NCCL's ``all_reduce.h``). Three layers run under it: the in-process numpy one
(:mod:`dfcore.distribute.all_reduce`), the device-array one (:mod:`dfcore.distribute.all_reduce_arrays`)
and the MPI one (:mod:`dfcore.mpi.collectives`).

Rules (each written here once):

- a rank's current value of a chunk is its output once the output holds the chunk (a message stored or
  reduced it there, or — for ``"mean"`` — a ``Finalize`` divided it there), else its input, which is never
  changed (out of place);
- a message's receiver reduces the chunk with its current value (``"reduce"``) or stores it (``"copy"``)
  into its output; ``Finalize`` (``"mean"`` only) divides the rank's current value into its output;
- at the end, each rank's output takes, from its input, the chunks no step wrote;
- the steps run in schedule order. An in-process layer moves one message at a time (its receiver reads
  the sender's chunk before it changes); the MPI layer moves *batches* — the consecutive messages of one
  round, cut at every ``Finalize`` — posted together, so no order of ranks can deadlock (no rank receives
  in a round what it sends in it, so both orders give the same bits).
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from . import schedules


@dataclasses.dataclass(frozen=True, slots=True)
class Move:
    """One message as the interpreter runs it.

    Attributes:
        index: its position among ``schedule.messages``; step: its position in ``schedule.steps``.
        op: ``"reduce"`` or ``"copy"``; src, dst: the ranks; lo, hi: its elements ``[lo, hi)``.
        src_written, dst_written: whether the sender's (receiver's) output already holds the chunk, else its
            input is the current value.
    """

    index: int
    step: int
    op: str
    src: int
    dst: int
    lo: int
    hi: int
    src_written: bool
    dst_written: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Batch:
    """Messages moved together (a batched plan): ``sends`` those a held rank sends, ``recvs`` those a held
    rank receives, in schedule order."""

    sends: tuple[Move, ...]
    recvs: tuple[Move, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Divide:
    """``Finalize`` of a ``"mean"``: ``rank`` divides elements ``[lo, hi)`` (``written``: its output holds them)."""

    rank: int
    lo: int
    hi: int
    written: bool


@dataclasses.dataclass(frozen=True, eq=False)
class Plan:
    """``items`` (:class:`Move` — :class:`Batch` in a batched plan — and :class:`Divide`, in order) and
    ``unwritten``: ``(rank, ranges)`` of each held rank, the element ranges its output never receives.
    Compared and hashed by identity (:func:`plan` caches them)."""

    items: tuple[Move | Batch | Divide, ...]
    unwritten: tuple[tuple[int, tuple[tuple[int, int], ...]], ...]


class MessageLayer(abc.ABC):
    """How one all-reduce holds its ranks' buffers and moves chunks between them (a layer subclasses it).
    A layer moves messages one at a time (:meth:`transfer`) or, under a batched plan, batch by batch
    (:meth:`exchange`); it defines only the one its plan uses, and every other method.

    Attributes:
        inputs, outputs: held rank → its 1-D input (never written) and output buffer (sliceable arrays).
    """

    inputs: Any
    outputs: Any

    def transfer(self, move: Move, source: Any) -> Any:
        """Send ``source`` from ``move.src`` and return it as it arrived at ``move.dst``."""
        raise NotImplementedError(f"{type(self).__name__} moves batches: run it a batched plan")

    def exchange(self, batch: Batch, sources: Sequence[Any]) -> Sequence[Any]:
        """Send ``sources`` (aligned with ``batch.sends``) and return what arrived for ``batch.recvs``."""
        raise NotImplementedError(f"{type(self).__name__} moves one message at a time: run it an unbatched plan")

    @abc.abstractmethod
    def reduce(self, move: Move, own: Any, message: Any) -> None:
        """Write ``own`` combined with ``message`` into the receiver's output at ``[move.lo, move.hi)``."""

    @abc.abstractmethod
    def copy(self, move: Move, message: Any) -> None:
        """Store ``message`` into the receiver's output at ``[move.lo, move.hi)``."""

    @abc.abstractmethod
    def divide(self, item: Divide, value: Any) -> None:
        """Write ``value`` divided by the number of ranks into ``item.rank``'s output at ``[lo, hi)``."""

    @abc.abstractmethod
    def fill(self, rank: int, lo: int, hi: int) -> None:
        """Copy rank ``rank``'s input into its output at ``[lo, hi)`` (a range no step wrote)."""


@functools.lru_cache(maxsize=256)
def plan(schedule: schedules.Schedule, mean: bool, ranks: tuple[int, ...] | None = None,
         batched: bool = False) -> Plan:
    """The :class:`Plan` of ``schedule`` for the held ``ranks`` (None: all of them), worked out once.

    Args:
        mean: the reduction is a mean (its ``Finalize`` steps divide, and write the chunk).
        batched: group the messages into :class:`Batch` items (each round's consecutive messages, cut at
            every ``Finalize``); False: one :class:`Move` item a message (every rank held).
    Raises:
        ValueError: ``ranks`` given for an unbatched plan.
    """
    if ranks is not None and not batched:
        raise ValueError("An unbatched plan holds every rank; give ranks only with batched=True")
    held = range(schedule.num_ranks) if ranks is None else ranks
    written = [bytearray(len(schedule.chunk_ranges)) for _ in range(schedule.num_ranks)]
    items: list[Move | Batch | Divide] = []
    sends: list[Move] = []
    recvs: list[Move] = []
    current = None

    def flush():
        if sends or recvs:
            items.append(Batch(tuple(sends), tuple(recvs)))
        sends.clear()
        recvs.clear()

    index = 0
    for position, step in enumerate(schedule.steps):
        lo, hi = step.element_range
        if isinstance(step, schedules.Finalize):
            flush()
            current = None
            if mean:
                if step.rank in held:
                    items.append(Divide(step.rank, lo, hi, bool(written[step.rank][step.chunks[0]])))
                written[step.rank][step.chunks[0]:step.chunks[-1] + 1] = b"\1" * len(step.chunks)
            continue
        if step.round != current:
            flush()
            current = step.round
        s, d = step.src, step.dst
        move = Move(index, position, step.op, s, d, lo, hi, bool(written[s][step.chunks[0]]),
                    bool(written[d][step.chunks[0]]))
        if not batched:
            items.append(move)
        else:
            if s in held:
                sends.append(move)
            if d in held:
                recvs.append(move)
        written[d][step.chunks[0]:step.chunks[-1] + 1] = b"\1" * len(step.chunks)
        index += 1
    flush()
    unwritten = tuple((rank, tuple(r for c, r in enumerate(schedule.chunk_ranges) if not written[rank][c]))
                      for rank in held)
    return Plan(tuple(items), unwritten)


def run(plan: Plan, layer: MessageLayer) -> None:
    """Run ``plan`` through ``layer``: every batch, reduction, copy, division and final fill, in order.

    Raises:
        whatever the layer raises (the caller aborts its transport).
    """
    inputs, outputs = layer.inputs, layer.outputs
    transfer, reduce, copy = layer.transfer, layer.reduce, layer.copy

    def combine(move: Move, message: Any) -> None:
        if move.op == "reduce":
            reduce(move, (outputs if move.dst_written else inputs)[move.dst][move.lo:move.hi], message)
        else:
            copy(move, message)

    for item in plan.items:
        if isinstance(item, Move):
            combine(item, transfer(item, (outputs if item.src_written else inputs)[item.src][item.lo:item.hi]))
        elif isinstance(item, Batch):
            sources = [(outputs if m.src_written else inputs)[m.src][m.lo:m.hi] for m in item.sends]
            for move, message in zip(item.recvs, layer.exchange(item, sources)):
                combine(move, message)
        else:
            layer.divide(item, (outputs if item.written else inputs)[item.rank][item.lo:item.hi])
    for rank, ranges in plan.unwritten:
        for lo, hi in ranges:
            layer.fill(rank, lo, hi)
