"""Tensor fusion: all-reduce many small tensors as a few packed buffers.

Source: Horovod's tensor fusion (``docs/tensor-fusion.rst``: pick ready tensors of one
dtype that fit in ``HOROVOD_FUSION_THRESHOLD`` bytes, copy them into the fusion buffer,
all-reduce it, copy them out; the timeline names the copies
``MEMCPY_IN_FUSION_BUFFER`` / ``MEMCPY_OUT_FUSION_BUFFER``) and TF's
``_ConcatAndSplitPacker``.

Packing rule: tensors are taken in order; a tensor joins the current buffer if it has
the buffer's dtype and the buffer stays within ``fusion_threshold_bytes``, else it starts
a new buffer (a tensor larger than the threshold travels alone, unpacked). A threshold of
0 disables fusion. A buffer of two or more tensors is packed on every device (one
``MEMCPY_IN_FUSION_BUFFER`` per tensor), all-reduced, and unpacked (one
``MEMCPY_OUT_FUSION_BUFFER`` per tensor); the copies are in the buffer's
``trace.fusion_copies`` and, as one copy task per device before and after, in its
simulated time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..runtime import cost_model
from . import collective_cost, schedules
from .all_reduce import all_reduce, canonical_devices, machine_for_devices
from .trace import AllReduceResult, FusionCopy

DEFAULT_FUSION_THRESHOLD_BYTES = 64 * 1024 * 1024  # Horovod's default (64 MB)


@dataclasses.dataclass(frozen=True)
class BatchAllReduceResult:
    """What :func:`batch_all_reduce` returns.

    Attributes:
        outputs: per device, the list of reduced tensors (input order and shapes).
        groups: per buffer, the indices of the tensors it carried.
        results: per buffer, its :class:`~dfcore.distribute.trace.AllReduceResult`.
        simulated_time_s, wall_time_s: sums over the buffers (they run one after another).
    """

    outputs: tuple[tuple[np.ndarray, ...], ...]
    groups: tuple[tuple[int, ...], ...]
    results: tuple[AllReduceResult, ...]
    simulated_time_s: float
    wall_time_s: float


def fusion_groups(tensors: Sequence[np.ndarray], fusion_threshold_bytes: int) -> tuple[tuple[int, ...], ...]:
    """Tensor index groups by the module's packing rule (``tensors``: one device's arrays)."""
    groups: list[tuple[int, ...]] = []
    current: list[int] = []
    current_bytes, current_dtype = 0, None
    for i, t in enumerate(tensors):
        nbytes = t.nbytes
        if current and (t.dtype == current_dtype and current_bytes + nbytes <= fusion_threshold_bytes):
            current.append(i)
            current_bytes += nbytes
            continue
        if current:
            groups.append(tuple(current))
        current, current_bytes, current_dtype = [i], nbytes, t.dtype
    if current:
        groups.append(tuple(current))
    return tuple(groups)


def batch_all_reduce(per_device_tensors: Sequence[Sequence[np.ndarray]], devices: Sequence[str] | None = None,
                     fusion_threshold_bytes: int = DEFAULT_FUSION_THRESHOLD_BYTES,
                     machine: cost_model.MachineProfile | None = None, **kwargs: Any) -> BatchAllReduceResult:
    """All-reduce a list of tensors on every device, fusing small ones.

    Args:
        per_device_tensors: one list per device; tensor j has one shape and dtype on every device.
        devices: as :func:`dfcore.distribute.all_reduce`.
        fusion_threshold_bytes: the fusion buffer's size (0: no fusion).
        machine: the machine profile for simulated time.
        **kwargs: passed to :func:`dfcore.distribute.all_reduce` (algorithm, reduction, trace …);
            ``num_subchunks`` is an upper bound per buffer (:func:`~dfcore.distribute.schedules.capped_subchunks`).

    Returns:
        :class:`BatchAllReduceResult`.

    Raises:
        ValueError: no devices, devices with different numbers of tensors, a negative
            threshold, or what :func:`~dfcore.distribute.all_reduce` raises.
    """
    if not per_device_tensors:
        raise ValueError("batch_all_reduce needs at least one device's tensors, got an empty list")
    if fusion_threshold_bytes < 0:
        raise ValueError(f"fusion_threshold_bytes must be >= 0, got {fusion_threshold_bytes}")
    arrays = [[np.asarray(t) for t in tensors] for tensors in per_device_tensors]
    counts = {len(a) for a in arrays}
    if len(counts) != 1:
        raise ValueError(f"Every device must give the same number of tensors, got {sorted(counts)}")
    devices = canonical_devices(devices, len(arrays))
    machine = machine if machine is not None else machine_for_devices(devices)
    outputs: list[list[Any]] = [[None] * len(arrays[0]) for _ in arrays]
    groups = fusion_groups(arrays[0], fusion_threshold_bytes)
    results = []
    requested = kwargs.pop("num_subchunks", 1)
    for group in groups:
        size = sum(arrays[0][j].size for j in group)
        kwargs["num_subchunks"] = schedules.capped_subchunks(kwargs.get("algorithm", "ring"), len(devices), size,
                                                             requested)
        if len(group) == 1:
            result = all_reduce([a[group[0]] for a in arrays], devices, machine=machine, **kwargs)
            for d, out in enumerate(result.outputs):
                outputs[d][group[0]] = out
        else:
            result = _fused(arrays, group, devices, machine, kwargs, outputs)
        results.append(result)
    return BatchAllReduceResult(tuple(tuple(o) for o in outputs), groups, tuple(results),
                                sum(r.simulated_time_s for r in results), sum(r.wall_time_s for r in results))


def _fused(arrays, group, devices, machine, kwargs, outputs):
    offsets, pos = [], 0
    for j in group:
        size = arrays[0][j].size
        offsets.append((pos, pos + size))
        pos += size
    dtype = arrays[0][group[0]].dtype
    copies = []
    buffers = []
    for d, device in enumerate(devices):
        buffer = np.empty(pos, dtype)
        for j, (lo, hi) in zip(group, offsets):
            buffer[lo:hi] = arrays[d][j].reshape(-1)
            copies.append(FusionCopy("MEMCPY_IN_FUSION_BUFFER", device, j, (lo, hi), (hi - lo) * dtype.itemsize))
        buffers.append(buffer)
    result = all_reduce(buffers, devices, machine=machine, **kwargs)
    for d, device in enumerate(devices):
        for j, (lo, hi) in zip(group, offsets):
            outputs[d][j] = result.outputs[d][lo:hi].reshape(arrays[d][j].shape).copy()
            copies.append(FusionCopy("MEMCPY_OUT_FUSION_BUFFER", device, j, (lo, hi), (hi - lo) * dtype.itemsize))
    schedule = schedules.build_schedule(kwargs.get("algorithm", "ring"), len(devices), pos,
                                        kwargs.get("num_subchunks", 1), kwargs.get("convention", "textbook"),
                                        kwargs.get("root", 0))
    sim = collective_cost.simulated_time_s(schedule, tuple(devices), machine, dtype.itemsize,
                                           kwargs.get("reduction", "sum"), pos * dtype.itemsize)
    trace = dataclasses.replace(result.trace, fusion_copies=tuple(copies)) if result.trace is not None else None
    return dataclasses.replace(result, trace=trace, simulated_time_s=sim)

