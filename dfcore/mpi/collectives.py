"""All-reduce across the ranks of an MPI job: the all-reduce issue's schedules over point-to-point MPI, traced.

Source: docs/architecture.md#where-each-tf-format-is-built (the ring convention) and
docs/architecture.md#transports; the schedules of :mod:`dfcore.distribute.schedules` (rank i of
the communicator plays device i); mpi4py's buffer interface (``Sendrecv``/``Isend``/
``Irecv``, no pickling) and ``MPI.Allreduce`` as the reference.

One call per rank, collective over ``comm``. The schedule is run by
:mod:`dfcore.distribute.schedule_interpreter` (this module is its MPI message layer) in *batches*:
runs of consecutive messages of one round, split at every ``Finalize`` (mean's division).
Every rank walks the same batches; in each it posts the receives and sends of its own
messages at once — one ``Sendrecv`` when it has exactly one of each (every ring step),
else ``Irecv``/``Isend`` and ``Waitall`` — so no order of ranks can deadlock. A received
chunk is stored straight into the output (``"copy"``) or lands in a preallocated scratch
buffer and is added into the output with ``np.add(own, message, out=...)`` (``"reduce"``),
reading the input until the output holds the chunk, so nothing is copied twice and the
input is never modified. Results are bit for bit those of the in-process
:func:`dfcore.distribute.all_reduce` (same messages, same order of additions).

Before any data moves, one small ``Allgather`` of a digest of every rank's (shape, dtype,
algorithm parameters) and its world rank (hence its device) checks that the ranks agree
(:class:`~dfcore.errors.InvalidArgumentError` naming the ranks otherwise). With ``trace=True`` each rank
keeps a :class:`RankTrace` of its
messages (wall times from ``time.perf_counter``, relative to the end of that ``Allgather`` —
exact to the allgather's skew on one host); :func:`gather_result` / :func:`gather_trace`
collect them on one rank into the in-process :class:`~dfcore.distribute.trace.AllReduceResult`
/ :class:`~dfcore.distribute.trace.CollectiveTrace` format, with devices named
``/job:<job>/replica:0/task:<t>/device:CPU:0`` after the job layout, so ``AllReduceView``
shows an MPI run.

``mpi4py`` is imported inside the functions only.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..distribute import collective_cost, schedule_interpreter, schedules
from ..distribute.all_reduce import build_trace, machine_for_devices, message_keys
from ..distribute.arguments import check_rank
from ..distribute.trace import AllReduceResult
from ..runtime.rendezvous import TransferRecord
from .world import world

if TYPE_CHECKING:
    from ..distribute.trace import CollectiveTrace

__all__ = ["RankTrace", "all_reduce", "gather_result", "gather_trace", "last_rank_trace", "mpi_allreduce"]

_DTYPES = (np.float16, np.float32, np.float64)
_UFUNC = {"sum": np.add, "mean": np.add, "max": np.maximum}
_TAG_MODULUS = 32767  # MPI guarantees tags up to at least this
_last: dict[str, RankTrace] = {}  # name -> this rank's RankTrace of its last traced all_reduce of that name
_scratch = threading.local()


@dataclasses.dataclass(frozen=True)
class RankTrace:
    """What one rank saw of one all-reduce (times in s from the end of the agreement ``Allgather``).

    Attributes:
        rank, device: the rank in the communicator and its full device name.
        name, algorithm, convention, reduction, num_subchunks: as called.
        num_ranks, num_elements, dtype: the communicator size, flattened length, dtype name.
        wall_time_s: the data movement and reductions on this rank.
        send_times: message index (in ``schedule.messages``) → when this rank posted its send.
        recv_times: message index → ``(posted, completed)`` of this rank's receive.
        values_sent, partials: message index → the value sent / the partial result after it
            (``trace_values=True`` only, else None).
        input, output: this rank's flattened input and its result (``trace_values=True`` only;
            kept as they are, not copied).
    """

    rank: int
    device: str
    name: str
    algorithm: str
    convention: str
    reduction: str
    num_subchunks: int
    num_ranks: int
    num_elements: int
    dtype: str
    wall_time_s: float
    send_times: dict
    recv_times: dict
    values_sent: dict | None = None
    partials: dict | None = None
    input: object = None
    output: object = None


def all_reduce(value: Any, comm: Any = None, algorithm: str = "ring", reduction: str = "sum", num_subchunks: int = 1,
               convention: str = "textbook", trace: bool = True, trace_values: bool = False,
               name: str = "allreduce") -> np.ndarray:
    """All-reduce this rank's ``value`` with every rank of ``comm``; call it on every rank.

    Args:
        value: array-like, float16/32/64, the same shape and dtype on every rank (not modified).
        comm: an mpi4py communicator (default: dfcore's private duplicate of ``COMM_WORLD``,
            :func:`dfcore.mpi.world.world`).
        algorithm, reduction, num_subchunks, convention: as :func:`dfcore.distribute.all_reduce`
            (``"ring"``/``"reduce_to_one"``/``"tree"``/``"recursive_halving_doubling"``;
            ``"sum"``/``"mean"``/``"max"``); the same on every rank.
        trace: keep this rank's :class:`RankTrace` (see :func:`last_rank_trace`, :func:`gather_trace`).
        trace_values: also keep every value sent and partial result (copies; ≈ 3(N−1)/N·K elements).
        name: names the collective in the trace and its rendezvous-style keys.

    Returns:
        A fresh array of ``value``'s shape and dtype: the reduction over all ranks.

    Raises:
        InvalidArgumentError: the ranks disagree on shape, dtype or algorithm parameters (every
            rank raises, naming each rank's value).
        TypeError: a dtype other than float16/32/64, or a non-integer ``num_subchunks``.
        ValueError: unknown algorithm/reduction/convention or ``num_subchunks`` out of range —
            the in-process all-reduce's :func:`~dfcore.distribute.schedules.check_arguments`,
            run on every rank after the agreement (so a rank that alone got a bad value cannot
            leave the others waiting) and before any data moves.
        ImportError: mpi4py is missing.
    """
    comm = world()[0] if comm is None else comm
    array = np.asarray(value)
    devices = _agree(comm, array, (algorithm, reduction, num_subchunks, convention), name)
    me, n = comm.Get_rank(), comm.Get_size()
    schedules.check_arguments(algorithm, n, array.size, num_subchunks, convention, reduction=reduction)
    flat = np.ascontiguousarray(array).reshape(-1)
    schedule = schedules.build_schedule(algorithm, n, flat.size, num_subchunks, convention)
    plan = schedule_interpreter.plan(schedule, reduction == "mean", (me,), batched=True)
    out = np.empty_like(flat)
    recorder = _Recorder(trace_values) if trace else None
    start = time.perf_counter()
    schedule_interpreter.run(plan, _MpiLayer(comm, me, flat, out, reduction, recorder, start,
                                             _scratch_buffer(flat.dtype, _scratch_size(plan))))
    wall = time.perf_counter() - start
    if recorder is not None:  # traced
        _last[name] = RankTrace(
            me, devices[me], name, algorithm, convention, reduction, schedule.num_subchunks, n, flat.size,
            flat.dtype.name, wall, recorder.send_times, recorder.recv_times, recorder.values_sent,
            recorder.partials, flat if trace_values else None, out if trace_values else None)
    return out.reshape(array.shape)


def mpi_allreduce(value: Any, comm: Any = None, reduction: str = "sum") -> np.ndarray:
    """The reference: ``MPI.Allreduce`` of this rank's ``value`` into a fresh array (call on every rank).

    ``"mean"`` is MPI's sum divided by the number of ranks. Shapes and dtypes are not checked
    across ranks (MPI's rules apply).

    Raises:
        ValueError: unknown reduction.
        TypeError: a dtype other than float16/32/64.
    """
    from mpi4py import MPI

    comm = world()[0] if comm is None else comm
    schedules.check_reduction(reduction)
    array = np.ascontiguousarray(value)
    if array.dtype.type not in _DTYPES:
        raise TypeError(f"mpi_allreduce supports float16, float32 and float64, got {array.dtype}")
    out = np.empty_like(array)
    comm.Allreduce(array, out, op=MPI.MAX if reduction == "max" else MPI.SUM)
    if reduction == "mean":
        np.divide(out, out.dtype.type(comm.Get_size()), out=out)
    return out


def last_rank_trace(name: str = "allreduce") -> RankTrace | None:
    """This rank's :class:`RankTrace` of its last traced :func:`all_reduce` called ``name``, or None."""
    return _last.get(name)


def gather_trace(name: str = "allreduce", comm: Any = None, root: int = 0) -> CollectiveTrace | None:
    """Every rank's last traced all-reduce ``name`` as one ``CollectiveTrace`` on ``root`` (None elsewhere).

    Collective over ``comm``; raises as :func:`gather_result`.
    """
    result = gather_result(name, comm, root)
    return None if result is None else result.trace


def gather_result(name: str = "allreduce", comm: Any = None, root: int = 0) -> AllReduceResult | None:
    """Every rank's last traced all-reduce ``name`` as one ``AllReduceResult`` on ``root`` (None elsewhere).

    Collective over ``comm``. The result is in the in-process format: ``trace`` (values and
    ``inputs`` only if run with ``trace_values``), ``transfers`` (one ``TransferRecord`` per
    message: the sender's post time, the receiver's post and completion times, in completion
    order), ``wall_time_s`` (the slowest rank), ``simulated_time_s`` and ``predicted_time_s``
    (the ranks as CPUs of ``machine_for_devices``), ``outputs`` (every rank's result with
    ``trace_values``, else empty).

    Raises:
        FailedPreconditionError: on ``root``, when a rank has no traced all-reduce ``name``
            or the ranks' traces are of different collectives.
        ValueError: ``root`` is not a rank of ``comm`` (checked before the gather).
    """
    comm = world()[0] if comm is None else comm
    check_rank("root", root, comm.Get_size())
    ranks = comm.gather(_last.get(name), root=root)
    if comm.Get_rank() != root:
        return None
    missing = [r for r, rec in enumerate(ranks) if rec is None]
    if missing:
        raise errors.FailedPreconditionError(None, None, f"No traced all_reduce named {name!r} on ranks {missing}: "
                                             "call all_reduce(..., trace=True, name=...) on every rank first")
    first = ranks[0]
    shape = (first.algorithm, first.convention, first.reduction, first.num_subchunks, first.num_elements, first.dtype)
    if any((r.algorithm, r.convention, r.reduction, r.num_subchunks, r.num_elements, r.dtype) != shape
           for r in ranks):
        raise errors.FailedPreconditionError(None, None, f"The ranks' last traces named {name!r} are of different "
                                             "all-reduces; give each collective its own name")
    schedule = schedules.build_schedule(first.algorithm, len(ranks), first.num_elements, first.num_subchunks,
                                        first.convention)
    devices = tuple(r.device for r in ranks)
    with_values = first.values_sent is not None
    messages = schedule.messages
    records = ([[ranks[m.src].values_sent[i], ranks[m.dst].partials[i]] for i, m in enumerate(messages)]
               if with_values else None)
    inputs = tuple(r.input for r in ranks) if with_values else None
    trace = build_trace(schedule, devices, first.reduction, first.dtype, records, name, inputs)
    itemsize = np.dtype(first.dtype).itemsize
    keys = [k for k in message_keys(schedule, devices, name) if k is not None]
    transfers = [TransferRecord(key, key.split(";")[3], devices[m.src], devices[m.dst],
                                (m.element_range[1] - m.element_range[0]) * itemsize, ranks[m.src].send_times[i],
                                *ranks[m.dst].recv_times[i]) for i, (key, m) in enumerate(zip(keys, messages))]
    transfers.sort(key=lambda t: t.match_time_s)
    machine = machine_for_devices(devices)
    return AllReduceResult(
        outputs=tuple(r.output for r in ranks) if with_values else (), trace=trace, transfers=tuple(transfers),
        simulated_time_s=collective_cost.simulated_time_s(schedule, devices, machine, itemsize, first.reduction),
        wall_time_s=max(r.wall_time_s for r in ranks),
        predicted_time_s=collective_cost.predicted_time_s(first.algorithm, first.num_elements, itemsize, devices,
                                                          machine, first.num_subchunks, first.reduction))


@functools.cache
def _device_of(world_rank):
    return world()[1].task_name(world_rank) + "/device:CPU:0"


def _agree(comm, array, params, name):
    """Check that the ranks agree with one 16-byte-per-rank ``Allgather`` (a digest of shape, dtype and
    parameters, and the world rank); on a mismatch every rank gathers the details to name them.
    Returns the devices in ``comm``'s rank order."""
    meta = (array.shape, array.dtype.str, params)
    digest = int.from_bytes(hashlib.blake2b(repr(meta).encode(), digest_size=8).digest(), "little", signed=True)
    mine = np.array([digest, world()[0].Get_rank()], np.int64)
    everyone = np.empty((comm.Get_size(), 2), np.int64)
    comm.Allgather(mine, everyone)
    if (everyone[:, 0] != digest).any():
        _disagreement(comm.allgather(meta), name)
    if array.dtype.type not in _DTYPES:
        raise TypeError(f"all_reduce supports float16, float32 and float64; the ranks' dtype is {array.dtype}")
    return tuple(_device_of(int(r)) for r in everyone[:, 1])


def _disagreement(metas, name):
    """Raise InvalidArgumentError naming what the ranks disagree on (``metas``: every rank's meta)."""
    for what, values in (("shape", [list(shape) for shape, _, _ in metas]),
                         ("dtype", [np.dtype(d).name for _, d, _ in metas]),
                         ("(algorithm, reduction, num_subchunks, convention)", [p for _, _, p in metas])):
        if any(v != values[0] for v in values):
            listed = "; ".join(f"rank {r}: {v}" for r, v in enumerate(values))
            raise errors.InvalidArgumentError(
                None, None, f"all_reduce {name!r}: the {len(values)} ranks must agree on the {what}, got {listed}")


@functools.lru_cache(maxsize=256)
def _scratch_size(plan):
    """Elements of the receive buffer a rank's batches need at most: the chunks one batch reduces."""
    return max((sum(m.hi - m.lo for m in item.recvs if m.op == "reduce")
                for item in plan.items if isinstance(item, schedule_interpreter.Batch)), default=0)


def _scratch_buffer(dtype, size):
    """A per-thread reusable receive buffer of at least ``size`` elements of ``dtype``."""
    buffers = _scratch.__dict__.setdefault("buffers", {})
    buffer = buffers.get(dtype)
    if buffer is None or buffer.size < size:
        buffer = buffers[dtype] = np.empty(size, dtype)
    return buffer


class _Recorder:
    def __init__(self, values):
        self.send_times, self.recv_times = {}, {}
        self.values_sent: dict[Any, Any] | None = {} if values else None
        self.partials: dict[Any, Any] | None = {} if values else None


class _MpiLayer(schedule_interpreter.MessageLayer):
    """The MPI message layer (:mod:`~dfcore.distribute.schedule_interpreter`): this rank's buffers; a batch's
    receives and sends posted at once (one ``Sendrecv`` when it has one of each, else ``Irecv``/``Isend`` and
    ``Waitall``), tagged with the message index; a chunk to reduce lands in ``scratch``, one to copy straight
    in the output."""

    def __init__(self, comm, me, flat, out, reduction, recorder, start, scratch):
        from mpi4py import MPI

        self.mpi, self.comm = MPI, comm
        self.inputs, self.outputs = {me: flat}, {me: out}
        self.flat, self.out, self.scratch = flat, out, scratch
        self.ufunc, self.divisor = _UFUNC[reduction], flat.dtype.type(comm.Get_size())
        self.recorder, self.start = recorder, start

    def exchange(self, batch, sources):
        byte, out, recorder = self.mpi.BYTE, self.out, self.recorder
        into, offset = [], 0
        for move in batch.recvs:
            if move.op == "reduce":
                into.append(self.scratch[offset:offset + move.hi - move.lo])
                offset += move.hi - move.lo
            else:
                into.append(out[move.lo:move.hi])
        posted = time.perf_counter() - self.start
        if recorder is not None:
            for move, source in zip(batch.sends, sources):
                recorder.send_times[move.index] = posted
                if recorder.values_sent is not None:
                    recorder.values_sent[move.index] = source.copy()
        if len(batch.sends) == 1 and len(batch.recvs) == 1:
            sent, arriving = batch.sends[0], batch.recvs[0]
            self.comm.Sendrecv([sources[0], byte], sent.dst, sent.index % _TAG_MODULUS,
                               [into[0], byte], arriving.src, arriving.index % _TAG_MODULUS)
        else:
            requests = [self.comm.Irecv([buf, byte], move.src, move.index % _TAG_MODULUS)
                        for buf, move in zip(into, batch.recvs)]
            requests += [self.comm.Isend([source, byte], move.dst, move.index % _TAG_MODULUS)
                         for source, move in zip(sources, batch.sends)]
            self.mpi.Request.Waitall(requests)
        if recorder is not None:
            done = time.perf_counter() - self.start
            for move in batch.recvs:
                recorder.recv_times[move.index] = (posted, done)
        return into

    def reduce(self, move, own, message):
        self.ufunc(own, message, out=self.out[move.lo:move.hi])
        self._record(move)

    def copy(self, move, message):  # received straight into the output
        self._record(move)

    def _record(self, move):
        if self.recorder is not None and self.recorder.partials is not None:
            self.recorder.partials[move.index] = self.out[move.lo:move.hi].copy()

    def divide(self, item, value):
        np.divide(value, self.divisor, out=self.out[item.lo:item.hi])

    def fill(self, rank, lo, hi):
        self.out[lo:hi] = self.flat[lo:hi]
