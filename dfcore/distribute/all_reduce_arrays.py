"""The runtime all-reduce on device arrays (cupy on real GPUs, any array-API library): same schedules, same
rendezvous keys, same trace as the numpy path of :mod:`dfcore.distribute.all_reduce`.

Source: the array API standard (data-apis.org) through ``array-api-compat``; the schedules and the message
order of :mod:`dfcore.distribute.schedules`. Each rank's tensor stays on its device: its output buffer is
allocated there (``xp.empty(..., device=...)``), chunks are slices, the reduction is the array library's
``add``/``maximum`` written into the receiver's buffer. A message is posted to the rendezvous as the sender's
chunk itself and copied exactly once, onto the receiver's device (a device-to-device or peer copy for cupy,
``to_device`` otherwise) — that copy is the transfer. With trace values the trace keeps host copies of each
message and partial sum (the trace is a host record, as on numpy); the timing of a run on a GPU includes a
final synchronisation of the devices, so ``wall_time_s`` is the GPUs' time, not the time Python took to
queue the kernels.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from typing import Any

import array_api_compat
import numpy as np

from .. import backends, errors
from ..runtime.rendezvous import Rendezvous
from . import schedule_interpreter, schedules

_FLOATS = ("float16", "float32", "float64")


def is_device_array(value: Any) -> bool:
    """True for an array of an array-API library other than numpy (cupy, array_api_strict)."""
    # array_api_compat knows cupy's arrays by class: they need not define __array_namespace__
    return not isinstance(value, np.ndarray | np.generic) and array_api_compat.is_array_api_obj(value)


def dtype_name(xp: Any, dtype: Any) -> str:
    """``"float32"`` for a float dtype of namespace ``xp``.

    Raises:
        TypeError: a dtype other than float16/32/64.
    """
    for name in _FLOATS:
        if hasattr(xp, name) and dtype == getattr(xp, name):
            return name
    raise TypeError(f"all_reduce supports float16, float32 and float64; got {dtype}")


def check_device_values(values: Sequence[Any], in_place: bool) -> tuple[Any, list[Any], str]:
    """``(xp, arrays, dtype name)`` of the per-rank device arrays.

    Raises:
        TypeError: arrays of two libraries, different dtypes, or a non-float dtype.
        ValueError: different shapes.
    """
    try:
        xp = array_api_compat.array_namespace(*values)
    except TypeError as error:
        raise TypeError(f"All tensors of an all-reduce must be arrays of one library: {error}") from None
    first = values[0]
    name = dtype_name(xp, first.dtype)
    for i, a in enumerate(values):
        if a.dtype != first.dtype:
            raise TypeError(f"All tensors of an all-reduce must have one dtype: tensor 0 is {first.dtype}, "
                            f"tensor {i} is {a.dtype}")
        if tuple(a.shape) != tuple(first.shape):
            raise ValueError(f"All tensors of an all-reduce must have one shape: tensor 0 is {list(first.shape)}, "
                             f"tensor {i} is {list(a.shape)}")
    return xp, list(values), name


def check_device_numerics(xp: Any, arrays: Sequence[Any], devices: Sequence[str]) -> None:
    """Raise ``InvalidArgumentError`` naming the device whose input holds NaN or Inf."""
    for a, device in zip(arrays, devices):
        with scope(a):
            finite = bool(xp.all(xp.isfinite(a)))
            kind = "NaN" if not finite and bool(xp.any(xp.isnan(a))) else "Inf"
        if not finite:
            raise errors.InvalidArgumentError(None, None, f"all_reduce input on {device} : Tensor had {kind} values")


def scope(value: Any) -> contextlib.AbstractContextManager[Any]:
    """The device of ``value`` as the current device (cupy: kernels and allocations run on the *current*
    GPU, and ``array_api_compat.cupy`` ignores ``device=``); nothing to enter elsewhere."""
    return value.device if array_api_compat.is_cupy_array(value) else contextlib.nullcontext()


def to_host(value: Any) -> np.ndarray:
    """A host (numpy) copy of a device array (through the library's default device, its host, where
    numpy cannot read the array's own device)."""
    if array_api_compat.is_cupy_array(value):
        return value.get()
    host = array_api_compat.array_namespace(value).__array_namespace_info__().default_device()
    return np.array(array_api_compat.to_device(value, host), copy=True)


def move(value: Any, like: Any) -> Any:
    """``value`` on the device holding ``like``: itself when it is there already, else one copy (cupy: a
    device-to-device/peer copy, :meth:`~dfcore.backends.cupy_backend.CupyBackend.copy_to_device`)."""
    if array_api_compat.is_cupy_array(value):
        if value.device.id == like.device.id:
            return value
        cupy_backend: Any = backends.get("cupy")  # copy_to_device is the cupy backend's own extra
        return cupy_backend.copy_to_device(value, like.device.id)
    device = array_api_compat.device(like)
    return value if array_api_compat.device(value) == device else array_api_compat.to_device(value, device)


def synchronize(arrays: Sequence[Any]) -> None:
    """Wait for the kernels queued on the GPUs holding ``arrays`` (nothing to wait for elsewhere)."""
    ids = {a.device.id for a in arrays if array_api_compat.is_cupy_array(a)}
    if ids:
        cupy_backend: Any = backends.get("cupy")  # synchronize is the cupy backend's own extra
        cupy_backend.synchronize(ids)


def run_device_schedule(schedule: schedules.Schedule, xp: Any, flats: Sequence[Any], keys: Sequence[str | None],
                        rendezvous: Rendezvous, reduction: str, trace: bool) -> tuple[list[Any], list[Any] | None]:
    """Move the values of ``flats`` (1-D device arrays, one per rank) by ``schedule``
    (:mod:`~dfcore.distribute.schedule_interpreter`); ``keys``: the rendezvous key of each step (None for a
    ``Finalize``). Returns ``(outputs, records)``, ``records`` holding per message ``[value sent, partial sum
    after]`` as host arrays (None without ``trace``)."""
    layer = _DeviceLayer(xp, flats, keys, rendezvous, reduction, trace)
    schedule_interpreter.run(schedule_interpreter.plan(schedule, reduction == "mean"), layer)
    return layer.outputs, layer.records


class _DeviceLayer(schedule_interpreter.MessageLayer):
    """The device-array message layer: each rank's output on its input's device; a message is posted as the
    sender's chunk itself and copied once, onto the receiver's device."""

    def __init__(self, xp, flats, keys, rendezvous, reduction, trace):
        self.inputs, self.keys, self.rendezvous = flats, keys, rendezvous
        self.itemsize = np.dtype(dtype_name(xp, flats[0].dtype)).itemsize
        self.outputs = []
        for f in flats:
            with scope(f):
                self.outputs.append(xp.empty((f.shape[0],), dtype=f.dtype, device=array_api_compat.device(f)))
        self.combine = xp.maximum if reduction == "max" else xp.add
        self.num_ranks = float(len(flats))
        self.box: list[Any] = []
        self.done = functools.partial(_settle, self.box)
        self.records: list[Any] | None = [] if trace else None

    def transfer(self, step, source):
        key = self.keys[step.step]
        self.rendezvous.send(key, source, nbytes=(step.hi - step.lo) * self.itemsize, copy=False)
        self.rendezvous.recv_async(key, self.done)
        error, message = self.box.pop()
        if error is not None:
            raise error
        return move(message, self.outputs[step.dst])  # the transfer: one copy, onto the receiver's device

    def reduce(self, move, own, message):
        target = self.outputs[move.dst]
        with scope(target):
            target[move.lo:move.hi] = self.combine(own, message)
        self._record(move, message)

    def copy(self, move, message):
        target = self.outputs[move.dst]
        with scope(target):
            target[move.lo:move.hi] = message
        self._record(move, message)

    def _record(self, move, message):
        if self.records is not None:
            self.records.append([to_host(message), to_host(self.outputs[move.dst][move.lo:move.hi])])

    def divide(self, item, value):
        target = self.outputs[item.rank]
        with scope(target):
            target[item.lo:item.hi] = value / self.num_ranks

    def fill(self, rank, lo, hi):
        with scope(self.outputs[rank]):
            self.outputs[rank][lo:hi] = self.inputs[rank][lo:hi]


def _settle(box, error, value):
    box.append((error, value))
