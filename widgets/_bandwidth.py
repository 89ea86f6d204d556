"""algbw and busbw of one all-reduce, derived by counting the bytes its trace moved (nccl-tests' rule).

Pure functions (no ipywidgets). nccl-tests (``doc/PERFORMANCE.md``): ``algbw = S / t``
with S the bytes of one rank's tensor and t the operation's time, in decimal GB/s
(1 GB = 10⁹ B); ``busbw = algbw · 2(N−1)/N`` for all-reduce. The counting argument: a
ring all-reduce makes every rank send (and receive) 2(N−1)/N · S bytes over its one
outgoing link, so ``busbw`` is the rate each link actually carried — a number to hold
against the link's hardware bandwidth, the same for any N. Other algorithms keep the
formula's factor (it is a normalisation), but their busiest device sends more.
"""

import dataclasses

import numpy as np

from dfcore.distribute import collective_cost, schedules
from dfcore.distribute.all_reduce import machine_for_devices

CLOCKS = ("simulated", "predicted", "wall")
CLOCK_LABELS = {"simulated": "simulated time", "predicted": "α-β prediction", "wall": "wall time"}


@dataclasses.dataclass(frozen=True)
class BusBandwidth:
    """The numbers of the derivation (bytes, seconds, decimal GB/s).

    Attributes:
        size_bytes: S, one rank's tensor; num_devices: N; time_s: t on ``clock``.
        algbw_GBps: S/t/1e9; factor: 2(N−1)/N; busbw_GBps: algbw·factor.
        max_bytes_per_device: most bytes any device sent; max_bytes_per_link: most any link carried;
        total_bytes: bytes over all links; counted_GBps: ``max_bytes_per_device / t / 1e9``.
        link_name, link_GBps: the hardware link between ranks 0 and 1 (None without a machine).
    """

    size_bytes: int
    num_devices: int
    time_s: float
    clock: str
    algbw_GBps: float
    factor: float
    busbw_GBps: float
    max_bytes_per_device: int
    max_bytes_per_link: int
    total_bytes: int
    counted_GBps: float
    link_name: str | None = None
    link_GBps: float | None = None


def schedule_of(trace):
    """The :class:`~dfcore.distribute.schedules.Schedule` that produced ``trace``, or None if none matches.

    ``reduce_to_one``'s root is read from the first message; the rebuilt schedule must send
    the trace's messages (rounds, ranks, chunks) exactly.
    """
    first = trace.rounds[0].transfers[0] if trace.rounds and trace.rounds[0].transfers else None
    root = first.dst if trace.algorithm == "reduce_to_one" and first is not None else 0
    try:
        schedule = schedules.build_schedule(trace.algorithm, len(trace.devices), trace.num_elements,
                                            trace.num_subchunks, trace.convention, root)
    except ValueError:
        return None
    traced = [(r.round, t.src, t.dst, t.chunk_ids) for r in trace.rounds for t in r.transfers]
    planned = [(m.round, m.src, m.dst, m.chunks) for m in schedule.messages]
    return schedule if traced == planned else None


def collective_times(trace, result=None, machine=None):
    """``{clock: seconds}`` known for a collective: from ``result`` (an ``AllReduceResult``) when given,
    else the simulated replay and α-β prediction of the trace's schedule on ``machine`` (default: the
    devices as ``all_reduce`` models them). Empty when the trace's schedule cannot be rebuilt."""
    if result is not None:
        return {"simulated": result.simulated_time_s, "predicted": result.predicted_time_s,
                "wall": result.wall_time_s}
    schedule = schedule_of(trace)
    if schedule is None:
        return {}
    machine = machine if machine is not None else machine_for_devices(trace.devices)
    itemsize = np.dtype(trace.dtype).itemsize
    fusion = trace.num_elements * itemsize if trace.fusion_copies else None
    simulated = collective_cost.simulated_time_s(schedule, trace.devices, machine, itemsize, trace.reduction, fusion)
    predicted = collective_cost.predicted_time_s(trace.algorithm, trace.num_elements, itemsize, trace.devices,
                                                 machine, trace.num_subchunks, trace.reduction)
    return {"simulated": simulated, "predicted": predicted}


def bus_bandwidth(trace, time_s, clock="simulated", machine=None):
    """The :class:`BusBandwidth` of ``trace`` run in ``time_s`` seconds (> 0) on ``clock``.

    ``machine`` (default: as ``all_reduce`` models the devices) names the link between ranks
    0 and 1 for the comparison with hardware; N = 1 has no link.

    Raises:
        ValueError: ``time_s`` is not positive.
    """
    if not time_s > 0:
        raise ValueError(f"the all-reduce time must be positive to derive a bandwidth, got {time_s!r}")
    n = len(trace.devices)
    size = trace.num_elements * np.dtype(trace.dtype).itemsize
    factor = 2 * (n - 1) / n
    algbw = size / time_s / 1e9
    per_device = max(trace.bytes_sent_per_device.values(), default=0)
    link_name = link_gbps = None
    if n > 1:
        machine = machine if machine is not None else machine_for_devices(trace.devices)
        link = machine.link(trace.devices[0], trace.devices[1])
        link_name, link_gbps = link.name, link.bandwidth_Bps / 1e9
    return BusBandwidth(size, n, time_s, clock, algbw, factor, algbw * factor, per_device,
                        max(trace.bytes_per_link.values(), default=0), sum(trace.bytes_per_link.values()),
                        per_device / time_s / 1e9, link_name, link_gbps)


def gbps(value):
    """A bandwidth in decimal GB/s with four significant digits: ``12.35 GB/s``, ``0.0004267 GB/s``."""
    return f"{value:.4g} GB/s"


def seconds(value):
    """A time with four significant digits: ``75 µs``, ``1.234 ms``, ``2.2 s``."""
    if value < 1e-3:
        return f"{value * 1e6:.4g} µs"
    return f"{value * 1e3:.4g} ms" if value < 1 else f"{value:.4g} s"


def derivation_rows(bw, algorithm):
    """``[(quantity, value, how)]``: the derivation, step by step, with the trace's numbers."""
    n, s = bw.num_devices, bw.size_bytes
    ring = 2 * (n - 1) * s / n
    ring_text = f"{ring:,.0f} B" if ring == int(ring) else f"{ring:,.2f} B"
    rows = [
        ("S: bytes of one rank's tensor", f"{s:,} B", "nccl-tests' size column"),
        (f"t: time of the all-reduce ({CLOCK_LABELS[bw.clock]})", seconds(bw.time_s), ""),
        ("algbw = S / t", gbps(bw.algbw_GBps), f"{s:,} B / {seconds(bw.time_s)}, 1 GB = 10⁹ B"),
        ("bytes the busiest device sent (counted in the trace)", f"{bw.max_bytes_per_device:,} B",
         f"= {bw.max_bytes_per_device / s:.4g} × S" if s else "nothing to send"),
        ("what a ring must send per device: 2(N−1)/N × S", ring_text,
         f"2·{n - 1}/{n} × {s:,} B; all {n} devices together: 2(N−1)·S = {2 * (n - 1) * s:,} B"),
        ("bytes the busiest link carried (counted)", f"{bw.max_bytes_per_link:,} B",
         f"all links together: {bw.total_bytes:,} B"),
        ("busbw = algbw × 2(N−1)/N", gbps(bw.busbw_GBps), f"{gbps(bw.algbw_GBps)} × {bw.factor:.4g}"),
        ("counted: busiest device's bytes / t", gbps(bw.counted_GBps), _counted_note(bw, algorithm)),
    ]
    if bw.link_GBps is not None:
        share = 100 * bw.busbw_GBps / bw.link_GBps
        rows.append((f"link bandwidth ({bw.link_name})", gbps(bw.link_GBps),
                     f"busbw is {share:.3g} % of it" + ("; latency dominates small messages" if share < 50 else "")))
    return rows


def _counted_note(bw, algorithm):
    if bw.num_devices == 1:
        return "one device sends nothing"
    ratio = bw.counted_GBps / bw.busbw_GBps if bw.busbw_GBps else 0.0
    if abs(ratio - 1) < 1e-9:
        return "equals busbw: each device sent exactly 2(N−1)/N × S"
    if algorithm == "ring":
        return f"{ratio:.4g} × busbw: chunks of unequal length (see the chunking rule)"
    return f"{ratio:.4g} × busbw: {algorithm} sends more through its busiest device than a ring"
