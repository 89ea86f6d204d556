"""A few training steps fed by an input pipeline, as lanes: the record both clocks produce.

Source: dfcore. The lanes follow the step-stats conventions of TF's GPU tracer, which adds
pseudo-devices after a device's name (``/device:GPU:0/stream:all``, ``/device:GPU:0/memcpy``):
each input-pipeline thread is a ``DeviceStepStats`` named
``<host device>/input:<stage>/thread:<i>`` (``stage``: ``Map``, ``ParallelMap``, ``Prefetch``,
``QueueRunner``, ``client``), whose nodes are that thread's calls (``Iterator::<stage>#<k>``). TF's own
threads are named ``tf_data_prefetch`` and ``tf_data_parallel_map`` (``core/kernels/data/prefetch_dataset_op.cc``,
``parallel_map_dataset_op.cc``) and its profiler shows them as host threads; TF 1.x's
``RunMetadata.step_stats`` has no tf.data lanes at all.
The training side is the host device's ``IteratorGetNext`` (its span is the wait for data; ``FeedDict``
for a feed_dict loop's batch preparation), the
host→accelerator copy as a ``_Send``/``_Recv`` pair, and one ``TrainStep`` node per step on the
accelerator. Times are integer microseconds from the start of the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..runtime.step_stats import DeviceStepStats, NodeExecStats, StepStats, TimelineLabel

#: The op type of the training side's node: one whole ``Session.run`` step on the accelerator.
TRAIN_STEP = "TrainStep"
#: The op types of the training side waiting for its batch (the stall): a tf.data pipeline's
#: ``IteratorGetNext``, a queue's dequeue (queue runners), and a feed_dict loop's client preparing the feed.
WAIT_OP_TYPES = ("IteratorGetNext", "QueueDequeueManyV2", "QueueDequeueUpToV2", "QueueDequeueV2", "FeedDict")


def lane_device(host: str, stage: str, thread: int) -> str:
    """The ``DeviceStepStats.device`` of input thread ``thread`` of ``stage``: ``<host>/input:<stage>/thread:<i>``."""
    return f"{host}/input:{stage}/thread:{thread}"


def split_lane_device(device: str) -> tuple[str, str, int] | None:
    """``(host, stage, thread)`` of a name built by :func:`lane_device`, or None for an ordinary device."""
    host, sep, rest = device.partition("/input:")
    if not sep:
        return None
    stage, _, thread = rest.partition("/thread:")
    return host, stage, int(thread)


@dataclasses.dataclass(frozen=True)
class PipelineRun:
    """Steps of training fed by an input pipeline, on one clock.

    Attributes:
        name: what was run (``"tf.data, 2 map threads, prefetch 1"``).
        clock: ``"simulated"`` or ``"wall"``.
        step_stats: the lanes (see the module doc); in a simulated run ``all_start_micros`` equals
            ``sim_start_micros`` (the run's own time), in a wall run the ``sim_*`` fields are None.
        step_starts_us, step_ends_us: when each step asked for its batch (``IteratorGetNext`` or the
            client's batch preparation began) and when its training step ended.
        waits_us: per step, how long training waited for its batch (the stall).
        occupancy: buffer name (``Prefetch``, a queue's name) → ``(time µs, elements)`` after each change
            (empty without a buffer).
        busy_us: time the accelerator spent in training steps.
    """

    name: str
    clock: str
    step_stats: StepStats
    step_starts_us: tuple[int, ...]
    step_ends_us: tuple[int, ...]
    waits_us: tuple[int, ...]
    occupancy: Mapping[str, tuple[tuple[int, int], ...]]
    busy_us: int

    @property
    def makespan_us(self) -> int:
        """From the first request to the end of the last step (µs)."""
        return self.step_ends_us[-1] - self.step_starts_us[0] if self.step_ends_us else 0

    @property
    def starved_fraction(self) -> float:
        """Share of the run the training side spent waiting for input: ``sum(waits) / makespan``."""
        return sum(self.waits_us) / self.makespan_us if self.makespan_us else 0.0

    @property
    def idle_fraction(self) -> float:
        """Share of the run the accelerator was not training: ``1 - busy / makespan``."""
        return 1.0 - self.busy_us / self.makespan_us if self.makespan_us else 0.0

    @property
    def period_us(self) -> float:
        """Steady-state time per step: the mean gap between step ends over the second half of the run."""
        ends = self.step_ends_us
        first = len(ends) // 2
        if len(ends) - first < 2:
            return float(ends[-1] - self.step_starts_us[0]) if ends else 0.0
        return (ends[-1] - ends[first]) / (len(ends) - 1 - first)

    def images_per_s(self, batch_size: int) -> float:
        """Steady-state throughput: ``batch_size / period``."""
        return batch_size / (self.period_us * 1e-6) if self.period_us else 0.0

    def __repr__(self) -> str:
        return (f"<PipelineRun {self.name!r}: {len(self.step_ends_us)} steps, {self.clock} clock, "
                f"period {self.period_us / 1000:.2f} ms, starved {100 * self.starved_fraction:.0f} %>")


class LaneRecorder:
    """Builds the ``StepStats`` of a run: ``add(device, name, op_type, start_us, end_us)`` per call."""

    def __init__(self, simulated: bool):
        self._simulated = simulated
        self._lanes: dict[str, list[NodeExecStats]] = {}

    def add(self, device: str, name: str, op_type: str, start_us: int, end_us: int, output_bytes: tuple = (),
            detail: TimelineLabel | None = None, thread_id: int = 0) -> None:
        start_us, end_us = int(start_us), int(max(end_us, start_us))
        detail = detail or TimelineLabel(name, op_type)
        self._lanes.setdefault(device, []).append(NodeExecStats(
            node_name=name, op_type=op_type, all_start_micros=start_us, op_start_rel_micros=0,
            op_end_rel_micros=end_us - start_us, all_end_rel_micros=end_us - start_us, thread_id=thread_id,
            output_bytes=output_bytes, timeline_label=detail.text(), detail=detail,
            sim_start_micros=start_us if self._simulated else None,
            sim_end_micros=end_us if self._simulated else None))

    def add_copy(self, host: str, accelerator: str, step: int, send_us: int, start_us: int, end_us: int,
                 nbytes: int) -> None:
        """The batch of ``step`` copied host → accelerator: a ``_Send`` on the host, a ``_Recv`` spanning the copy."""
        tensor = f"edge_batch_{step}"
        self.add(host, f"batch_{step}/_send", "_Send", send_us, send_us,
                 detail=TimelineLabel(f"batch_{step}/_send", "_Send", tensor_name=tensor, peer_device=accelerator))
        self.add(accelerator, f"batch_{step}/_recv", "_Recv", start_us, end_us, (nbytes,),
                 detail=TimelineLabel(f"batch_{step}/_recv", "_Recv", tensor_name=tensor, peer_device=host))

    def step_stats(self) -> StepStats:
        """Devices sorted by name, each device's nodes by (start, name)."""
        return StepStats([DeviceStepStats(d, sorted(n, key=lambda ns: (ns.all_start_micros, ns.node_name)))
                          for d, n in sorted(self._lanes.items())])


def occupancy_series(changes: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """``(time, +1/-1)`` changes → ``(time, level)`` after each instant (removals first at a tie)."""
    level, out = 0, []  # type: int, list[tuple[int, int]]
    for time_us, delta in sorted(changes):
        level += delta
        if out and out[-1][0] == time_us:
            out[-1] = (time_us, level)
        else:
            out.append((time_us, level))
    return tuple(out)
