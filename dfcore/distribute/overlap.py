"""Backward/communication overlap: gradients all-reduced in buckets while backward goes on.

Sources: Horovod (Sergeev & Del Balso, "Horovod: fast and easy distributed deep learning
in TensorFlow", arXiv:1802.05799, 2018; ``docs/tensor-fusion.rst``: tensors that are
ready are fused up to ``HOROVOD_FUSION_THRESHOLD`` and all-reduced by a background thread
while the backward pass goes on) and PyTorch DDP (Li et al., "PyTorch Distributed:
Experiences on Accelerating Data Parallel Training", PVLDB 13(12), 2020: gradients in
buckets of ``bucket_cap_mb`` = 25 MB, in reverse parameter order, each all-reduced as
soon as all its gradients are ready).

The model here (all on the simulated clock of :mod:`dfcore.runtime.sim_clock`):

* each device runs an optional forward task, then one backward task per gradient, in
  the order the gradients become ready (last layer first), one after another;
* the gradients are packed into buckets by :func:`dfcore.distribute.fusion.fusion_groups`
  (in that order, up to ``bucket_cap_bytes``; 0: one bucket per gradient);
* one bucket is one all-reduce (:func:`dfcore.distribute.collective_cost.build_sim_tasks`,
  with the fusion-buffer copies for a bucket of two or more gradients). With
  ``overlap=True`` it may start once every device has computed the bucket's last
  gradient (Horovod's coordinator starts a collective when every rank has reported the
  tensor ready); with ``overlap=False`` only once every device has finished the whole
  backward pass. Buckets run one after another, in order (one communication stream,
  as NCCL's kernels on one CUDA stream);
* the all-reduce's additions run on the device's communication stream (resource
  ``"<device> comm"``), not on its compute lane, so they do not queue behind backward
  (NCCL reduces inside its own kernels, beside the compute kernels).

The reduced values do not depend on the timing: :func:`overlapped_all_reduce` returns
those of :func:`dfcore.distribute.fusion.batch_all_reduce` with the same buckets.
dfcore simplifies: the backward times are given (e.g. from the cost model), not
traced from a graph, and a bucket waits for all of its gradients (DDP's rule), never
splitting one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..runtime import cost_model, sim_clock
from . import collective_cost, schedules
from .all_reduce import canonical_devices, machine_for_devices
from .fusion import batch_all_reduce, fusion_groups

DEFAULT_BUCKET_CAP_BYTES = 25 * 1024 * 1024  # PyTorch DDP's bucket_cap_mb=25 (Li et al. 2020)


@dataclasses.dataclass(frozen=True)
class BucketSpan:
    """One bucket's all-reduce on the simulated clock: the gradients it carries (indices
    in ready order), its bytes per device, and when its first task started and its last ended (s)."""

    index: int
    gradients: tuple[int, ...]
    nbytes: int
    ready_s: float
    start_s: float
    end_s: float


@dataclasses.dataclass(frozen=True)
class OverlapResult:
    """What :func:`overlapped_all_reduce` returns.

    Attributes:
        outputs: per device, the reduced gradients (input order and shapes).
        buckets: one :class:`BucketSpan` per bucket, in order.
        backward: per device, ``(gradient index, start_s, end_s)`` of each backward task.
        backward_end_s: when the last device finished its backward pass (s).
        step_time_s: when the last task ended (s): backward and every all-reduce.
        overlap: whether buckets started before the end of backward was allowed.
        sim: the :class:`~dfcore.runtime.sim_clock.SimResult` of every task.
    """

    outputs: tuple[tuple[np.ndarray, ...], ...]
    buckets: tuple[BucketSpan, ...]
    backward: tuple[tuple[tuple[int, float, float], ...], ...]
    backward_end_s: float
    step_time_s: float
    overlap: bool
    sim: sim_clock.SimResult

    @property
    def exposed_communication_s(self) -> float:
        """Communication not hidden behind backward: ``step_time_s − backward_end_s`` (s)."""
        return self.step_time_s - self.backward_end_s


def overlapped_all_reduce(per_device_grads: Sequence[Sequence[Any]], backward_s: Sequence[float],
                          devices: Sequence[str] | None = None, bucket_cap_bytes: int = DEFAULT_BUCKET_CAP_BYTES,
                          overlap: bool = True, forward_s: float = 0.0, algorithm: str = "ring",
                          reduction: str = "mean", machine: cost_model.MachineProfile | None = None) -> OverlapResult:
    """All-reduce gradients in buckets, started during (or after) the backward pass.

    Args:
        per_device_grads: one list per device; gradient j (float arrays) has one shape and
            dtype on every device; listed in the order backward produces them.
        backward_s: seconds each device spends computing gradient j (one float per gradient).
        devices: full device names, one per rank (default: the default machine's GPUs).
        bucket_cap_bytes: the bucket size (bytes; 0: one bucket per gradient).
        overlap: True: a bucket may start as soon as its gradients are ready on every device;
            False: only after the whole backward pass.
        forward_s: seconds of forward pass before the first backward task.
        algorithm, reduction: as :func:`dfcore.distribute.all_reduce`.
        machine: the machine profile (default: one for ``devices``).

    Returns:
        :class:`OverlapResult`.

    Raises:
        ValueError: no devices, different numbers of gradients per device, a
            ``backward_s`` of another length, a negative or non-finite time, a negative
            ``bucket_cap_bytes``, or what :func:`dfcore.distribute.all_reduce` raises.
    """
    if not per_device_grads:
        raise ValueError("overlapped_all_reduce needs at least one device's gradients, got an empty list")
    arrays = [[np.asarray(g) for g in grads] for grads in per_device_grads]
    counts = {len(a) for a in arrays}
    if len(counts) != 1 or not arrays[0]:
        raise ValueError(f"Every device must give the same, nonzero number of gradients, got {sorted(counts)}")
    times = [float(t) for t in (*backward_s, forward_s)]
    if len(backward_s) != len(arrays[0]):
        raise ValueError(f"backward_s has {len(backward_s)} times for {len(arrays[0])} gradients; "
                         "give one per gradient")
    if not all(np.isfinite(t) and t >= 0 for t in times):
        raise ValueError(f"backward_s and forward_s must be finite and >= 0, got {list(backward_s)} and {forward_s}")
    if bucket_cap_bytes < 0:
        raise ValueError(f"bucket_cap_bytes must be >= 0, got {bucket_cap_bytes}")
    devices = canonical_devices(devices, len(arrays))
    machine = machine if machine is not None else machine_for_devices(devices)
    reduced = batch_all_reduce(arrays, devices, fusion_threshold_bytes=bucket_cap_bytes, machine=machine,
                               algorithm=algorithm, reduction=reduction)
    groups = fusion_groups(arrays[0], bucket_cap_bytes)
    tasks = _compute_tasks(devices, backward_s, forward_s)
    last_backward = [f"backward/{d}/{len(backward_s) - 1}" for d in range(len(devices))]
    previous: list[str] = []
    bucket_tasks = []
    for b, group in enumerate(groups):
        ready = [f"backward/{d}/{group[-1] if overlap else len(backward_s) - 1}" for d in range(len(devices))]
        names, sinks = _bucket_tasks(b, group, arrays[0], devices, machine, algorithm, reduction,
                                     ready + previous, tasks)
        bucket_tasks.append((ready, names))
        previous = sinks
    sim = sim_clock.simulate(tasks, machine.capacities())
    spans = tuple(BucketSpan(b, group, sum(arrays[0][j].nbytes for j in group),
                             max(sim.end_s[r] for r in ready), min(sim.start_s[n] for n in names),
                             max(sim.end_s[n] for n in names))
                  for b, (group, (ready, names)) in enumerate(zip(groups, bucket_tasks)))
    backward = tuple(tuple((j, sim.start_s[f"backward/{d}/{j}"], sim.end_s[f"backward/{d}/{j}"])
                           for j in range(len(backward_s))) for d in range(len(devices)))
    return OverlapResult(reduced.outputs, spans, backward, max(sim.end_s[n] for n in last_backward),
                         sim.makespan_s, overlap, sim)


def _compute_tasks(devices, backward_s, forward_s):
    tasks = []
    for d, device in enumerate(devices):
        previous: tuple[str, ...] = ()
        if forward_s > 0:
            tasks.append(sim_clock.SimTask(f"forward/{d}", device, float(forward_s)))
            previous = (f"forward/{d}",)
        for j, seconds in enumerate(backward_s):
            name = f"backward/{d}/{j}"
            tasks.append(sim_clock.SimTask(name, device, float(seconds), previous))
            previous = (name,)
    return tasks


def _bucket_tasks(b, group, grads, devices, machine, algorithm, reduction, after, tasks):
    """Append bucket ``b``'s all-reduce tasks (renamed ``bucket<b>/…``, additions on the comm
    streams, roots waiting for ``after``) to ``tasks``; returns (its task names, its sinks)."""
    size = sum(grads[j].size for j in group)
    itemsize = grads[group[0]].dtype.itemsize
    schedule = schedules.build_schedule(algorithm, len(devices), size)
    fusion_bytes = size * itemsize if len(group) > 1 else None
    raw = collective_cost.build_sim_tasks(schedule, devices, machine, itemsize, reduction, fusion_bytes)
    prefix = f"bucket{b:04d}/"
    comm = {device: f"{device} comm" for device in devices}
    renamed = [sim_clock.SimTask(prefix + t.name, tuple(comm.get(r, r) for r in t.resources), t.duration_s,
                                 [prefix + d for d in t.deps] or list(after), t.priority) for t in raw]
    used = {d for t in raw for d in t.deps}
    tasks.extend(renamed)
    return [t.name for t in renamed], [prefix + t.name for t in raw if t.name not in used]
