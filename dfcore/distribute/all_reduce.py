"""All-reduce as a runtime operation: real values, moved chunk by chunk through a rendezvous, traced.

Source: the ring step convention (docs/architecture.md#where-each-tf-format-is-built), Gibiansky, "Bringing
HPC Techniques to Deep Learning" (Baidu, 2017), NCCL's ``all_reduce.h`` and TF's ``all_reduce.py``. The
algorithms, the chunking rule and the exact bytes each device sends are documented in
:mod:`dfcore.distribute.schedules`; the time model in
:mod:`dfcore.distribute.collective_cost`.

Every message is a real transfer: the sender posts its current chunk to a
:class:`~dfcore.runtime.rendezvous.Rendezvous` under a key from
:func:`~dfcore.framework.rendezvous_key.create_key` whose tensor name is
``<name>/<algorithm>/r<round>/c<chunk>`` (so every message leaves a
:class:`~dfcore.runtime.rendezvous.TransferRecord`), and the receiver reduces it into its
output buffer or copies it there. Each message is copied once: without trace values the
rendezvous posts the sender's chunk itself (``send(copy=False)``: the receiver reads it at
once, before the sender's buffer changes), so the reduction or the copy into the output *is*
the transfer; with trace values the rendezvous copies it (the trace keeps that copy).
Messages run one after another on the calling thread, in schedule order, so results
are deterministic (bit for bit, run after run). Inputs are never modified (unless
``in_place``); outputs are fresh arrays.

Trace values cost no extra copy: the value sent is the message the rendezvous copied,
and a receiver's partial sum after a reduction is the message it sends next of the
same elements — copied only when its buffer is about to change first (or at the end).
"""

from __future__ import annotations

import contextlib
import functools
import time
import types
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .. import errors
from ..framework.device import DeviceSpec
from ..framework.rendezvous_key import create_key
from ..runtime import cost_model
from ..runtime.rendezvous import Rendezvous
from . import all_reduce_arrays, collective_cost, schedule_interpreter, schedules
from .trace import AllReduceResult, ChunkTransfer, CollectiveTrace, FusionCopy, RoundRecord

_REDUCE_UFUNC = {"sum": np.add, "mean": np.add, "max": np.maximum}
_DTYPES = (np.float16, np.float32, np.float64)
_LOCAL = "/job:localhost/replica:0/task:0"


def all_reduce(values: Sequence[Any], devices: Sequence[str] | None = None, algorithm: str = "ring",
               reduction: str = "sum", num_subchunks: int = 1, convention: str = "textbook",
               rendezvous: Rendezvous | None = None, machine: cost_model.MachineProfile | None = None,
               trace: bool = True, trace_values: bool = True, name: str = "allreduce", in_place: bool = False,
               root: int = 0, check_numerics: bool = False) -> AllReduceResult:
    """All-reduce one tensor per device.

    Args:
        values: a list of N array-likes, one per device, of one shape and one dtype
            (float16, float32 or float64); or N arrays of one array-API library (cupy arrays on real GPUs,
            array_api_strict), each on its device, which stay there (:mod:`~dfcore.distribute.all_reduce_arrays`).
        devices: N distinct device names (partial specs are completed on
            ``/job:localhost/replica:0/task:0``); default ``GPU:0`` … ``GPU:N−1``.
        algorithm: ``"ring"``, ``"reduce_to_one"``, ``"tree"`` or ``"recursive_halving_doubling"``.
        reduction: ``"sum"``, ``"mean"`` (sum, then divided by N) or ``"max"``.
        num_subchunks: segments per tensor, each moved as its own messages: an integer in
            ``[1, ⌈K/pieces⌉]`` (:func:`~dfcore.distribute.schedules.max_subchunks`).
        convention: ring chunk labels, ``"textbook"`` or ``"nccl"`` (see schedules).
        rendezvous: the :class:`Rendezvous` to move chunks through (a new one if None); on
            an error it is aborted with the first error.
        machine: a :class:`~dfcore.runtime.cost_model.MachineProfile` for simulated time
            (default: the devices as CPU / Tesla K20m on PCIe, as ``default_machine``).
        trace: build the :class:`~dfcore.distribute.trace.CollectiveTrace` with its values
            (False: ``result.trace`` is None; the rendezvous still records every transfer).
        trace_values: keep the value sent and the partial sum of every message in the trace
            (False: chunks, ranges and bytes only). Values hold ≈ 3(N−1)/N·K elements per
            device of fresh memory: at 16 MiB that, not the bookkeeping, is what tracing costs.
        name: first part of the rendezvous tensor names (unique per collective in one rendezvous).
        in_place: write the results into ``values`` (writeable contiguous arrays of the dtype).
        root: the reducing rank of ``reduce_to_one``, in ``[0, N)``.
        check_numerics: raise ``InvalidArgumentError`` if an input holds NaN or Inf.

    Returns:
        :class:`~dfcore.distribute.trace.AllReduceResult`.

    Raises:
        ValueError: an empty list, different shapes, a device listed twice, the wrong number
            of devices, an unknown algorithm/reduction/convention, or ``num_subchunks`` or
            ``root`` out of range (:func:`~dfcore.distribute.schedules.check_arguments`).
        TypeError: different dtypes, a dtype other than float16/32/64, or a non-integer count.
        InvalidArgumentError: ``check_numerics`` found NaN or Inf.
        AbortedError: the rendezvous was aborted (by this collective's error or another's).
    """
    device_path = _holds_device_arrays(values)
    if device_path:
        xp, arrays, dtype_name = all_reduce_arrays.check_device_values(values, in_place)
        dtype, shape = np.dtype(dtype_name), tuple(arrays[0].shape)
        flats = [xp.reshape(a, (-1,)) for a in arrays]
    else:
        arrays = _check_values(values, in_place)
        dtype, shape = arrays[0].dtype, arrays[0].shape
        flats = [a.reshape(-1) for a in arrays]
    devices = canonical_devices(devices, len(arrays))
    num_elements = int(flats[0].shape[0])
    schedules.check_arguments(algorithm, len(arrays), num_elements, num_subchunks, convention, root, reduction)
    if check_numerics:
        if device_path:
            all_reduce_arrays.check_device_numerics(xp, arrays, devices)
        else:
            _check_numerics(arrays, devices)
    schedule = schedules.build_schedule(algorithm, len(arrays), num_elements, num_subchunks, convention, root)
    machine = machine if machine is not None else machine_for_devices(devices)
    rendezvous = rendezvous if rendezvous is not None else Rendezvous()
    first = rendezvous.num_local_transfers()
    start = time.perf_counter()
    if device_path:
        outs, records = _run_device(schedule, xp, flats, devices, rendezvous, reduction, name, trace and trace_values)
        outputs = tuple(xp.reshape(o, shape) for o in outs)
        if in_place:
            for value, output in zip(arrays, outputs):
                with all_reduce_arrays.scope(value):
                    value[...] = output
            outputs = tuple(arrays)
        all_reduce_arrays.synchronize(outputs)
        kept_inputs = [all_reduce_arrays.to_host(f) for f in flats] if trace and trace_values and not in_place \
            else None
    else:
        outs, records = run_schedule(schedule, flats, devices, rendezvous, reduction, name, trace and trace_values,
                                     in_place)
        outputs = tuple(o.reshape(shape) for o in outs) if not in_place else tuple(arrays)
        kept_inputs = flats if trace_values and not in_place else None
    wall = time.perf_counter() - start
    coll_trace = build_trace(schedule, devices, reduction, dtype, records, name, kept_inputs) if trace else None
    itemsize = dtype.itemsize
    return AllReduceResult(
        outputs=outputs, trace=coll_trace, transfers=tuple(rendezvous.local_transfers_since(first)),
        simulated_time_s=collective_cost.simulated_time_s(schedule, devices, machine, itemsize, reduction),
        wall_time_s=wall,
        predicted_time_s=collective_cost.predicted_time_s(algorithm, num_elements, itemsize, devices, machine,
                                                          num_subchunks, reduction))


def _holds_device_arrays(values):
    """True for a list of device arrays (cupy, array_api_strict): the array-API path."""
    return (not isinstance(values, np.ndarray) and hasattr(values, "__len__") and len(values) > 0
            and all_reduce_arrays.is_device_array(values[0]))


def _run_device(schedule, xp, flats, devices, rendezvous, reduction, name, trace):
    """:func:`run_schedule` for device arrays (:mod:`dfcore.distribute.all_reduce_arrays`), aborting the
    rendezvous on an error as it does."""
    keys = message_keys(schedule, tuple(devices), name)
    with _aborting_on_failure(rendezvous, name):
        return all_reduce_arrays.run_device_schedule(schedule, xp, flats, keys, rendezvous, reduction, trace)


def canonical_devices(devices: Sequence[str] | None, count: int) -> tuple[str, ...]:
    """Full device names for ``count`` ranks (default GPUs 0…count−1 of the local task).

    Raises:
        ValueError: wrong count or a device listed twice.
    """
    if devices is None:
        devices = [f"/device:GPU:{i}" for i in range(count)]
    devices = tuple(_full(d) for d in devices)
    if len(devices) != count:
        raise ValueError(f"all_reduce got {count} tensors but {len(devices)} devices; give one device per tensor")
    seen = set()
    for d in devices:
        if d in seen:
            raise ValueError(f"Device {d} is listed twice; an all-reduce needs one tensor per distinct device")
        seen.add(d)
    return devices


@functools.lru_cache(maxsize=1024)
def _full(device):
    spec = DeviceSpec.from_string(_LOCAL).make_merged_spec(DeviceSpec.from_string(device))
    if spec.device_type is None or spec.device_index is None:
        raise ValueError(f"Device '{device}' must name a device type and index, e.g. '/gpu:0'")
    return spec.to_string()


@functools.lru_cache(maxsize=64)
def machine_for_devices(devices: tuple[str, ...]) -> cost_model.MachineProfile:
    """A :class:`~dfcore.runtime.cost_model.MachineProfile` with ``devices`` (a tuple of full names) as in
    ``default_machine`` (GPUs are Tesla K20m, CPUs the nominal host; PCIe within a task, 10 GbE between
    tasks); cached."""
    return cost_model.MachineProfile({d: cost_model.CPU if "/device:CPU:" in d else cost_model.TESLA_K20M
                                      for d in devices})


def _check_values(values, in_place):
    if isinstance(values, np.ndarray) or not hasattr(values, "__len__"):
        raise TypeError("all_reduce takes a list of tensors, one per device")
    if len(values) == 0:
        raise ValueError("all_reduce needs at least one tensor, got an empty list")
    arrays = [v if in_place else np.asarray(v) for v in values]
    first = arrays[0]
    for i, a in enumerate(arrays):
        if not isinstance(a, np.ndarray):
            raise TypeError("in_place all_reduce needs numpy arrays")
        if a.dtype.type not in _DTYPES:
            raise TypeError(f"all_reduce supports float16, float32 and float64; tensor {i} has dtype {a.dtype}")
        if a.dtype != first.dtype:
            raise TypeError(f"All tensors of an all-reduce must have one dtype: tensor 0 is {first.dtype}, "
                            f"tensor {i} is {a.dtype}")
        if a.shape != first.shape:
            raise ValueError(f"All tensors of an all-reduce must have one shape: tensor 0 is {list(first.shape)}, "
                             f"tensor {i} is {list(a.shape)}")
        if in_place and not (a.flags.c_contiguous and a.flags.writeable):
            raise ValueError(f"in_place all_reduce needs writeable C-contiguous arrays; tensor {i} is not")
    return arrays


def _check_numerics(arrays, devices):
    for a, device in zip(arrays, devices):
        if not np.all(np.isfinite(a)):
            kind = "NaN" if np.isnan(a).any() else "Inf"
            raise errors.InvalidArgumentError(None, None, f"all_reduce input on {device} : Tensor had {kind} values")


@functools.lru_cache(maxsize=256)
def message_keys(schedule: schedules.Schedule, devices: tuple[str, ...], name: str) -> tuple[str | None, ...]:
    """The rendezvous key of every message of ``schedule`` (tensor name ``<name>/<alg>/r<round>/c<chunk>``)."""
    return tuple(create_key(devices[m.src], 1, devices[m.dst], f"{name}/{schedule.algorithm}/r{m.round}/c{m.chunks[0]}")
                 if isinstance(m, schedules.Message) else None for m in schedule.steps)


def run_schedule(schedule: schedules.Schedule, flats: Sequence[np.ndarray], devices: Sequence[str],
                 rendezvous: Rendezvous, reduction: str, name: str, trace: bool,
                 in_place: bool = False) -> tuple[list[np.ndarray], list[Any] | None]:
    """Move the values of ``flats`` (1-D, one per rank) by ``schedule``; return ``(outputs, records)``.

    ``records`` holds, per message, ``[value_sent, partial_sum_after]`` (None without ``trace``).
    On any error the rendezvous is aborted with it and the error re-raised.
    """
    outs = flats if in_place else [np.empty(flats[0].size, flats[0].dtype) for _ in flats]
    layer = _HostLayer(flats, outs, message_keys(schedule, tuple(devices), name), rendezvous, reduction, trace)
    with _aborting_on_failure(rendezvous, name):
        schedule_interpreter.run(schedule_interpreter.plan(schedule, reduction == "mean"), layer)
        layer.finish()
    return layer.outputs, layer.records


@contextlib.contextmanager
def _aborting_on_failure(rendezvous: Rendezvous, name: str) -> Iterator[None]:
    """Abort ``rendezvous`` with any error of the block and re-raise it: an ``OpError`` as it is, a numeric or
    type error as ``InternalError`` naming the all-reduce ``name``."""
    try:
        yield
    except errors.OpError as error:
        rendezvous.start_abort(error)
        raise
    except (ValueError, TypeError, ArithmeticError, MemoryError) as error:
        failure = errors.InternalError(None, None, f"all_reduce {name} failed: {error}")
        rendezvous.start_abort(failure)
        raise failure from error


class _HostLayer(schedule_interpreter.MessageLayer):
    """The numpy message layer: every rank's buffers in this process, messages through ``rendezvous``
    (:mod:`~dfcore.distribute.schedule_interpreter`); with ``trace``, ``records`` gets per message
    ``[value sent, partial sum after]``."""

    def __init__(self, flats, outs, keys, rendezvous, reduction, trace):
        self.inputs, self.outputs, self.keys = flats, outs, keys
        self.ufunc = _REDUCE_UFUNC[reduction]
        self.divisor = flats[0].dtype.type(len(flats))
        self.records: list[list[Any]] | None = [] if trace else None
        # rank -> [(start, stop, record)] of partial sums awaiting a snapshot
        self.pending: list[list[Any]] | None = [[] for _ in flats] if trace else None
        box = self.box = []
        self.done = lambda error, value: box.append((error, value))  # a plain function: no bound method per call
        self.recv_async = rendezvous.recv_async
        # a traced message is kept, so the rendezvous copies it; else the receiver reads the sender's chunk at once
        self.send = rendezvous.send if trace else functools.partial(rendezvous.send, copy=False)

    def transfer(self, move, source):
        key = self.keys[move.step]
        self.send(key, source)
        self.recv_async(key, self.done)
        error, message = self.box.pop()
        if error is not None:
            raise error
        if self.pending is not None:
            _resolve_sent(self.pending[move.src], move.lo, move.hi, message)
        return message

    def reduce(self, move, own, message):
        if self.pending is not None:
            _snapshot_before_write(self.pending[move.dst], self.outputs[move.dst], move.lo, move.hi)
        self.ufunc(own, message, out=self.outputs[move.dst][move.lo:move.hi])
        if self.records is not None and self.pending is not None:  # both kept exactly when traced
            record = [message, None]
            self.records.append(record)
            self.pending[move.dst].append((move.lo, move.hi, record))

    def copy(self, move, message):
        if self.pending is not None:
            _snapshot_before_write(self.pending[move.dst], self.outputs[move.dst], move.lo, move.hi)
        self.outputs[move.dst][move.lo:move.hi] = message
        if self.records is not None:
            self.records.append([message, message])

    def divide(self, item, value):
        if self.pending is not None:
            _snapshot_before_write(self.pending[item.rank], self.outputs[item.rank], item.lo, item.hi)
        np.divide(value, self.divisor, out=self.outputs[item.rank][item.lo:item.hi])

    def fill(self, rank, lo, hi):
        if self.outputs[rank] is not self.inputs[rank]:  # out of place
            self.outputs[rank][lo:hi] = self.inputs[rank][lo:hi]

    def finish(self):
        """Snapshot the partial sums still waiting (their buffers change no more)."""
        if self.pending is not None:
            for pending, out in zip(self.pending, self.outputs):
                _snapshot_before_write(pending, out, 0, out.size)


def _resolve_sent(entries, lo, hi, message):
    """Partial sums waiting for a snapshot of exactly ``[lo, hi)`` take the message just sent."""
    for entry in [e for e in entries if e[0] == lo and e[1] == hi]:
        entry[2][1] = message
        entries.remove(entry)


def _snapshot_before_write(entries, buffer, lo, hi):
    """Copy the partial sums overlapping ``[lo, hi)`` before the buffer changes there."""
    for entry in [e for e in entries if e[0] < hi and lo < e[1]]:
        entry[2][1] = buffer[entry[0]:entry[1]].copy()
        entries.remove(entry)


def build_trace(schedule: schedules.Schedule, devices: Sequence[str], reduction: str, dtype: Any,
                records: Sequence[Any] | None, name: str, inputs: Sequence[np.ndarray] | None = None,
                fusion_copies: Sequence[FusionCopy] = ()) -> CollectiveTrace:
    """The :class:`~dfcore.distribute.trace.CollectiveTrace` of a run (``records`` from :func:`run_schedule`,
    ``name`` as given to it; ``inputs`` are kept as given, not copied)."""
    itemsize = np.dtype(dtype).itemsize
    keys = message_keys(schedule, tuple(devices), name)
    rounds: dict[tuple[int, str], list[ChunkTransfer]] = {}  # (round, phase) -> its transfers
    sent = dict.fromkeys(devices, 0)
    links: dict[tuple[str, str], int] = {}
    k = 0
    for key, step in zip(keys, schedule.steps):
        if key is None or not isinstance(step, schedules.Message):  # a key for each message, None for the rest
            continue
        lo, hi = step.element_range
        nbytes = (hi - lo) * itemsize
        value, partial = records[k] if records is not None else (None, None)
        k += 1
        src, dst = devices[step.src], devices[step.dst]
        transfer = ChunkTransfer(step.src, step.dst, src, dst, step.chunks[0], step.chunks, (lo, hi), nbytes,
                                 step.op, key, value, partial)
        rounds.setdefault((step.round, step.phase), []).append(transfer)
        sent[src] += nbytes
        links[(src, dst)] = links.get((src, dst), 0) + nbytes
    return CollectiveTrace(
        algorithm=schedule.algorithm, convention=schedule.convention, reduction=reduction, devices=tuple(devices),
        num_elements=schedule.num_elements, dtype=np.dtype(dtype).name, num_subchunks=schedule.num_subchunks,
        chunk_ranges=schedule.chunk_ranges,
        rounds=tuple(RoundRecord(r, phase, tuple(ts)) for (r, phase), ts in sorted(rounds.items())),
        bytes_sent_per_device=types.MappingProxyType(sent), bytes_per_link=types.MappingProxyType(links),
        fusion_copies=tuple(fusion_copies),
        inputs=None if inputs is None else tuple(inputs))
