"""Input pipelines on the wall clock: what the map and prefetch threads did while a loop of steps ran.

Source: dfcore; TF records the same events with its profiler's ``TraceMe`` in each tf.data
iterator (``core/kernels/data/``, ``Iterator::<name>`` events on the ``tf_data_*`` threads).
:func:`record_pipeline` runs ``Session.run`` steps with ``FULL_TRACE`` while a recorder is installed
(:mod:`dfcore.framework.input_events`): each ``map`` call (on its pool thread), each prefetch fill (from
asking its input for an element to putting it in the buffer), each queue-runner enqueue step (on its
thread) and the level of every prefetch buffer and queue are recorded; the training side is each step's
``IteratorGetNext`` or queue dequeue (from the step's stats) and the rest of the step. A ``feed_fn`` stands for a
``feed_dict`` loop's batch preparation (a ``FeedDict`` node on the host). The recorder is process-wide: the
threads of every pipeline iterated meanwhile are recorded, and only one recording runs at a time.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..framework import input_events
from ..runtime.config import RunMetadata, RunOptions, step_records
from .pipeline_run import TRAIN_STEP, WAIT_OP_TYPES, LaneRecorder, PipelineRun, lane_device


class _Recorder:
    """Receives :mod:`dfcore.framework.input_events` reports: calls become lanes, levels occupancy series."""

    def __init__(self, host: str):
        self.host = host
        self.t0 = time.perf_counter()
        self.lock = threading.Lock()
        self.lanes = LaneRecorder(simulated=False)
        self.threads: dict[str, dict[int, int]] = {}
        self.counts: dict[str, int] = {}
        self.levels: dict[str, list[tuple[int, int]]] = {}

    def us(self, t: float) -> int:
        return int(round((t - self.t0) * 1e6))

    def call(self, stage: str, start: float, end: float) -> None:
        with self.lock:
            threads = self.threads.setdefault(stage, {})
            index = threads.setdefault(threading.get_ident(), len(threads))
            k = self.counts[stage] = self.counts.get(stage, -1) + 1
            self.lanes.add(lane_device(self.host, stage, index), f"Iterator::{stage}#{k}", stage, self.us(start),
                           self.us(end), thread_id=index)

    def level(self, buffer: str, level: int, at: float) -> None:
        with self.lock:
            series = self.levels.setdefault(buffer, [])
            t_us = self.us(at)
            if series and series[-1][0] >= t_us:
                series[-1] = (series[-1][0], level)  # the same instant (or a late report): the last level wins
            elif not series or series[-1][1] != level:
                series.append((t_us, level))

    def occupancy(self) -> dict[str, tuple[tuple[int, int], ...]]:
        with self.lock:
            return {name: tuple(series) for name, series in sorted(self.levels.items())}


@contextlib.contextmanager
def _recording(host: str) -> Iterator[_Recorder]:
    recorder = _Recorder(host)
    input_events.install(recorder)
    try:
        yield recorder
    finally:
        input_events.uninstall()


def record_pipeline(sess: Any, fetches: Any, steps: int, feed_fn: Callable[[], dict] | None = None,
                    name: str = "", host: str = "/job:localhost/replica:0/task:0/device:CPU:0",
                    accelerator: str = "/job:localhost/replica:0/task:0/device:GPU:0") -> PipelineRun:
    """Run ``sess.run(fetches, feed_fn())`` ``steps`` times and return what happened on the wall clock.

    Args:
        sess, fetches: what each step runs (``sess.run(fetches, ...)``); steps: how many steps (>= 1);
            name: the run's title.
        feed_fn: makes each step's ``feed_dict`` (timed as the host's ``FeedDict``: the feed_dict loop's stall);
            None for a pipeline read by ``IteratorGetNext`` inside the step.
        host, accelerator: the devices to name the lanes after.

    Returns:
        A :class:`~dfcore.data.pipeline_run.PipelineRun` with ``clock="wall"``; ``waits_us`` per step is the
        client's batch preparation plus the step's ``IteratorGetNext`` (or queue dequeue) time.

    Raises:
        ValueError: ``steps < 1``. RuntimeError: another recording is active. Errors of ``sess.run`` propagate.
    """
    if steps < 1:
        raise ValueError(f"record_pipeline needs steps >= 1, got {steps}")
    options = RunOptions(trace_level=RunOptions.FULL_TRACE)
    starts, ends, waits = [], [], []
    busy = 0
    with _recording(host) as recorder:
        for j in range(steps):
            t_start = time.perf_counter()
            feed = None
            if feed_fn is not None:
                feed = feed_fn()
                recorder.lanes.add(host, f"FeedDict#{j}", "FeedDict", recorder.us(t_start),
                                   recorder.us(time.perf_counter()))
            t_run = time.perf_counter()
            metadata = RunMetadata()
            sess.run(fetches, feed_dict=feed, options=options, run_metadata=metadata)
            t_end = time.perf_counter()
            wait_us = recorder.us(t_run) - recorder.us(t_start)
            train_from = recorder.us(t_run)
            found = _input_wait(metadata)
            if found is not None:
                op_type, span = found
                start_us, end_us = (recorder.us(t_run) + int(s) for s in span)
                recorder.lanes.add(host, f"{op_type}#{j}", op_type, start_us, end_us)
                wait_us += end_us - start_us
                train_from = end_us
            recorder.lanes.add(accelerator, f"train_step#{j}", TRAIN_STEP, train_from, recorder.us(t_end))
            busy += recorder.us(t_end) - train_from
            starts.append(recorder.us(t_start))
            ends.append(recorder.us(t_end))
            waits.append(wait_us)
        return PipelineRun(name or ("feed_dict" if feed_fn else "tf.data"), "wall", recorder.lanes.step_stats(),
                           tuple(starts), tuple(ends), tuple(waits), recorder.occupancy(), busy)


def _input_wait(metadata: RunMetadata) -> tuple[str, tuple[int, int]] | None:
    """The op type and span (µs from the step's first node) of the step's first input op (``IteratorGetNext``
    or a queue's dequeue), or None if the step had none."""
    nodes = [ns for dev in step_records(metadata).step_stats.dev_stats for ns in dev.node_stats]
    found = sorted((ns for ns in nodes if ns.op_type in WAIT_OP_TYPES), key=lambda ns: ns.all_start_micros)
    if not found:
        return None
    first = min(ns.all_start_micros for ns in nodes)
    ns = found[0]
    return ns.op_type, (ns.all_start_micros - first, ns.all_end_micros - first)
