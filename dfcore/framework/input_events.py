"""Where input-pipeline threads report what they do, for whoever records them (process-wide hooks).

Source: dfcore; TF's counterpart is the profiler's ``TraceMe`` that each tf.data iterator and queue
emits (``core/profiler/lib/traceme.h``). Map calls and prefetch fills (``dfcore.data``), queue-runner
enqueue steps (``dfcore.train.queue_runner``) and queue sizes (``dfcore.ops.fifo_queue``)
call these functions; they do nothing unless a recorder is installed
(:func:`dfcore.data.pipeline_trace.record_pipeline` installs one). Times are ``time.perf_counter()``
seconds. This module imports nothing of dfcore, so every layer may report.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol


class Recorder(Protocol):
    """What an installed recorder receives."""

    def call(self, stage: str, start: float, end: float) -> None:
        """A call of ``stage`` on the current thread from ``start`` to ``end``."""

    def level(self, buffer: str, level: int, at: float) -> None:
        """``buffer`` (a prefetch buffer, a queue) holds ``level`` elements from time ``at``."""


_LOCK = threading.Lock()
_ACTIVE: Recorder | None = None


def install(recorder: Recorder) -> None:
    """Make ``recorder`` receive every report until :func:`uninstall`.

    Raises:
        RuntimeError: another recorder is installed (one recording at a time per process).
    """
    global _ACTIVE
    if not _LOCK.acquire(blocking=False):
        raise RuntimeError("record_pipeline is already recording in this process; one recording at a time.")
    _ACTIVE = recorder


def uninstall() -> None:
    """Stop reporting to the installed recorder (reports already under way may still arrive)."""
    global _ACTIVE
    _ACTIVE = None
    _LOCK.release()


def timed(stage: str, fn: Callable[[], Any]) -> Any:
    """``fn()``, reported as a call of ``stage`` on this thread when a recorder is installed."""
    recorder = _ACTIVE
    if recorder is None:
        return fn()
    start = time.perf_counter()
    try:
        return fn()
    finally:
        recorder.call(stage, start, time.perf_counter())


def call_done(stage: str, start: float) -> None:
    """A call of ``stage`` on this thread from ``start`` until now, when a recorder is installed."""
    recorder = _ACTIVE
    if recorder is not None:
        recorder.call(stage, start, time.perf_counter())


def buffer_level(buffer: str, level: int) -> None:
    """``buffer`` now holds ``level`` elements, when a recorder is installed."""
    recorder = _ACTIVE
    if recorder is not None:
        recorder.level(buffer, level, time.perf_counter())
