"""Time of a collective: the simulated clock's replay and the α-β(-γ) prediction.

Source: the simulated clock (docs/architecture.md#the-simulated-clock) and Thakur, Rabenseifner & Gropp,
"Optimization of Collective Communication Operations in MPICH", IJHPCA 19(1), 2005 (the α-β-γ model).

**Replay** (:func:`simulate_schedule`): every message of a
:class:`~dfcore.distribute.schedules.Schedule` is a transfer task holding both ends of
its link, as :meth:`~dfcore.runtime.cost_model.MachineProfile.transfer_resources` says
(``latency + bytes/bandwidth``; the sender's outbound and the receiver's inbound port,
one message at a time each); every reduction is an op on the receiving device (an elementwise op reading
two and writing one chunk, roofline time of :mod:`dfcore.runtime.cost_model`); a
message waits for the last write of the chunks it sends, a reduction for its message
and the receiver's last write. So the replay pipelines whatever the data dependencies
allow, and ties break by schedule order (deterministic).

**Prediction** (:func:`predicted_time_s`), with T(b) = α + b·β the time of a b-byte
message, γ(b) the time to reduce b bytes on a device, K the bytes per rank,
"serial" when two senders' messages into one device share a port (its NIC in, its bus
in) — then c messages into one device take c·T, else T — and "fan-out" when one
device's messages to two others share a port (its NIC out, its bus out) — then c
messages out of one device take c·T, else T:

* ring: ``2(N−1)·α + 2(N−1)/N·K·β + (N−1)·γ(K/N)`` (S = ``num_subchunks`` > 1 adds
  S−1 more α per step);
* reduce_to_one: ``max((N−1)·T(K) + γ(K), T(K) + (N−1)·γ(K))`` when serial, else
  ``T(K) + (N−1)·γ(K)``, plus the broadcast ``(N−1)·T(K)`` on fan-out, else ``T(K)``
  (the root's port carries (N−1)·K each way: Thakur, Rabenseifner & Gropp's linear
  scheme);
* tree: per reduce round with at most c children per parent ``max(c·T + γ, T + c·γ)``
  (serial) or ``T + c·γ``, plus per broadcast round ``c·T`` (fan-out) or ``T``;
* recursive halving-doubling (p = 2^⌊log2 N⌋): fold ``T(K) + γ(K)`` if N > p, then
  ``Σ_k T(K/2^(k+1)) + γ(K/2^(k+1))`` halving and ``Σ_k T(K/2^(k+1))`` doubling over
  k < log2 p, then unfold ``T(K)``;
* mean adds the division of the owned part once.

The replay equals the prediction for a ring with S = 1 and for reduce-to-one; it is
at most the prediction for the round-synchronous tree and halving-doubling formulas.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence

from ..runtime import cost_model, sim_clock
from . import schedules


def _reduce_s(nbytes, itemsize, device):
    return cost_model.op_time_s(cost_model.OpCost(nbytes // itemsize, 3 * nbytes), device)


def _scale_s(nbytes, itemsize, device):
    return cost_model.op_time_s(cost_model.OpCost(nbytes // itemsize, 2 * nbytes), device)


def _copy_s(nbytes, device):
    return cost_model.op_time_s(cost_model.OpCost(0, 2 * nbytes), device)


def build_sim_tasks(schedule: schedules.Schedule, devices: Sequence[str], machine: cost_model.MachineProfile,
                    itemsize: int, reduction: str = "sum", fusion_bytes: int | None = None) -> list[sim_clock.SimTask]:
    """The :class:`~dfcore.runtime.sim_clock.SimTask` list of one collective (see the module doc).

    Args:
        schedule: a :class:`~dfcore.distribute.schedules.Schedule`.
        devices: full device names, one per rank.
        machine: a :class:`~dfcore.runtime.cost_model.MachineProfile` holding them.
        itemsize: bytes per element.
        reduction: ``"mean"`` adds the division tasks.
        fusion_bytes: per-rank bytes packed into (and out of) a fusion buffer, or None: adds
            ``MEMCPY_IN_FUSION_BUFFER``/``MEMCPY_OUT_FUSION_BUFFER`` tasks on each device.
    Raises:
        KeyError: a device the machine does not have.
    """
    profiles = [machine.device(d) for d in devices]
    tasks, last = [], {}
    if fusion_bytes is not None:
        for rank, device in enumerate(devices):
            name = f"MEMCPY_IN_FUSION_BUFFER {rank}"
            tasks.append(sim_clock.SimTask(name, device, _copy_s(fusion_bytes, profiles[rank]), (), -1))
            for chunk in range(len(schedule.chunk_ranges)):
                last[(rank, chunk)] = name
    for k, step in enumerate(schedule.steps):
        nbytes = (step.element_range[1] - step.element_range[0]) * itemsize
        if isinstance(step, schedules.Finalize):
            if reduction != "mean":
                continue
            name = f"finalize{k:06d}"
            deps = {last[(step.rank, c)] for c in step.chunks if (step.rank, c) in last}
            tasks.append(sim_clock.SimTask(name, devices[step.rank], _scale_s(nbytes, itemsize, profiles[step.rank]),
                                           sorted(deps), k))
            last.update({(step.rank, c): name for c in step.chunks})
            continue
        src, dst = devices[step.src], devices[step.dst]
        name = f"message{k:06d}"
        deps = {last[(step.src, c)] for c in step.chunks if (step.src, c) in last}
        tasks.append(sim_clock.SimTask(name, machine.transfer_resources(src, dst),
                                       cost_model.transfer_time_s(nbytes, machine.link(src, dst)), sorted(deps), k))
        if step.op == "reduce":
            add = f"reduce{k:06d}"
            deps = {name} | {last[(step.dst, c)] for c in step.chunks if (step.dst, c) in last}
            tasks.append(sim_clock.SimTask(add, dst, _reduce_s(nbytes, itemsize, profiles[step.dst]), sorted(deps), k))
            name = add
        last.update({(step.dst, c): name for c in step.chunks})
    if fusion_bytes is not None:
        for rank, device in enumerate(devices):
            deps = {last[(rank, c)] for c in range(len(schedule.chunk_ranges))}
            tasks.append(sim_clock.SimTask(f"MEMCPY_OUT_FUSION_BUFFER {rank}", device,
                                           _copy_s(fusion_bytes, profiles[rank]), sorted(deps), len(schedule.steps)))
    return tasks


def simulate_schedule(schedule: schedules.Schedule, devices: Sequence[str], machine: cost_model.MachineProfile,
                      itemsize: int, reduction: str = "sum", fusion_bytes: int | None = None) -> sim_clock.SimResult:
    """:class:`~dfcore.runtime.sim_clock.SimResult` of :func:`build_sim_tasks` (same arguments)."""
    return sim_clock.simulate(build_sim_tasks(schedule, devices, machine, itemsize, reduction, fusion_bytes),
                              machine.capacities())


@functools.lru_cache(maxsize=256)
def simulated_time_s(schedule: schedules.Schedule, devices: Sequence[str], machine: cost_model.MachineProfile,
                     itemsize: int, reduction: str = "sum", fusion_bytes: int | None = None) -> float:
    """Makespan (s) of :func:`simulate_schedule`; cached (schedules and machines are immutable)."""
    return simulate_schedule(schedule, devices, machine, itemsize, reduction, fusion_bytes).makespan_s


@functools.lru_cache(maxsize=256)
def predicted_time_s(algorithm: str, num_elements: int, itemsize: int, devices: Sequence[str],
                     machine: cost_model.MachineProfile, num_subchunks: int = 1, reduction: str = "sum") -> float:
    """α-β(-γ) time of an all-reduce (formulas in the module doc); links and devices are
    those between ``devices[0]`` and ``devices[1]`` (homogeneous machines).

    Raises:
        TypeError, ValueError: as :func:`~dfcore.distribute.schedules.check_arguments` (unknown
            algorithm or reduction, no device, ``num_subchunks`` out of range).
    """
    schedules.check_arguments(algorithm, len(devices), num_elements, num_subchunks, reduction=reduction)
    n = len(devices)
    device = machine.device(devices[0])
    if n == 1:
        return _scale_s(num_elements * itemsize, itemsize, device) if reduction == "mean" else 0.0
    link = machine.link(devices[0], devices[1])
    ports = machine.transfer_resources
    serial = n > 2 and bool(set(ports(devices[1], devices[0])) & set(ports(devices[2], devices[0])))
    fan_out = n > 2 and bool(set(ports(devices[0], devices[1])) & set(ports(devices[0], devices[2])))
    k = num_elements * itemsize

    def t(b):
        return cost_model.transfer_time_s(b, link)

    def g(b):
        return _reduce_s(b, itemsize, device)

    def gather(count, b):
        return max(count * t(b) + g(b), t(b) + count * g(b)) if serial else t(b) + count * g(b)

    def scatter(count, b):
        return count * t(b) if fan_out else t(b)

    if algorithm == "ring":
        piece = k / n
        total = 2 * (n - 1) * (num_subchunks * link.latency_s + piece / link.bandwidth_Bps) + (n - 1) * g(piece)
        owned = piece
    elif algorithm == "reduce_to_one":
        total, owned = gather(n - 1, k) + scatter(n - 1, k), k
    elif algorithm == "tree":
        total, owned = 0.0, k
        for depth in range(schedules.tree_depth(n - 1), 0, -1):
            parents = [(r - 1) // 2 for r in range(n) if schedules.tree_depth(r) == depth]
            children = max(parents.count(p) for p in set(parents))
            total += gather(children, k) + scatter(children, k)
    else:
        p = 1 << (n.bit_length() - 1)
        total = 2 * t(k) + g(k) if n > p else 0.0
        size: float = k
        for _ in range(p.bit_length() - 1):
            size /= 2
            total += 2 * t(size) + g(size)
        owned = k / p
    if reduction == "mean":
        total += _scale_s(int(owned), itemsize, device)
    return total


@dataclasses.dataclass(frozen=True)
class PsRingPoint:
    """One point of :func:`ps_vs_ring_curve`: simulated and formula times (s) for ``num_workers``."""

    num_workers: int
    ps_simulated_s: float
    ps_formula_s: float
    ring_simulated_s: float
    ring_formula_s: float


def cluster_machine(num_workers: int, link: cost_model.LinkProfile = cost_model.ETHERNET_10G,
                    worker: cost_model.DeviceProfile = cost_model.TESLA_K20M,
                    ps: cost_model.DeviceProfile = cost_model.CPU,
                    ) -> tuple[cost_model.MachineProfile, tuple[str, ...], str]:
    """A cluster: one GPU per ``/job:worker`` task and one ``/job:ps`` CPU task, ``link`` between tasks.

    Returns:
        ``(machine, worker_devices, ps_device)``.
    """
    workers = [f"/job:worker/replica:0/task:{i}/device:GPU:0" for i in range(num_workers)]
    ps_device = "/job:ps/replica:0/task:0/device:CPU:0"
    devices = {d: worker for d in workers}
    devices[ps_device] = ps
    return cost_model.MachineProfile(devices, inter_task_link=link), tuple(workers), ps_device


def ps_vs_ring_curve(num_params: float = 300e6, link: cost_model.LinkProfile = cost_model.ETHERNET_10G,
                     workers: Iterable[int] = range(2, 33), itemsize: int = 4,
                     ps_subchunks: int = 10) -> list[PsRingPoint]:
    """Synchronisation time per step, parameter server vs ring, on a simulated cluster.

    PS: the workers' gradients go to one ``/job:ps`` task, which sums them and sends the
    sum back (``reduce_to_one`` rooted at the PS, whose own contribution is zero), the
    tensor split into ``ps_subchunks`` parts (variables) so the pull of one overlaps the
    push of the next; every push queues on the PS's network interface, so the time grows
    linearly with the workers. Ring: a ring all-reduce over the worker GPUs. Seeds'
    example: 300 M float32 parameters (1.2 GB), 1 GB/s: ≈12 s for 10 workers, ≈2.2 s ring.

    Returns:
        A list of :class:`PsRingPoint`, one per entry of ``workers``; the formulas are
        :func:`~dfcore.runtime.cost_model.ps_sync_time_s` and
        :func:`~dfcore.runtime.cost_model.ring_allreduce_time_s`.
    """
    num_elements = int(num_params)
    nbytes = num_elements * itemsize
    points = []
    for n in workers:
        machine, worker_devices, ps_device = cluster_machine(n, link)
        ring = schedules.build_schedule("ring", n, num_elements)
        ps = schedules.build_schedule("reduce_to_one", n + 1, num_elements, ps_subchunks, root=n, root_input=False)
        points.append(PsRingPoint(
            num_workers=n,
            ps_simulated_s=simulate_schedule(ps, worker_devices + (ps_device,), machine, itemsize).makespan_s,
            ps_formula_s=cost_model.ps_sync_time_s(nbytes, n, link),
            ring_simulated_s=simulate_schedule(ring, worker_devices, machine, itemsize).makespan_s,
            ring_formula_s=cost_model.ring_allreduce_time_s(nbytes, n, link)))
    return points
