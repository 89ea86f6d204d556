"""``SummarySaverHook``, ``StepCounterHook`` and ``ProfilerHook``: the hooks that feed TensorBoard during training.

Source: ``tensorflow/python/training/basic_session_run_hooks.py`` (TF 1.x): the same arguments, triggers
(a :class:`SecondOrStepTimer` over the global step), tags (``global_step/sec``, ``step_<n>``), file names
(``timeline-<n>.json``) and messages. All write through :class:`dfcore.summary.FileWriterCache`, so hooks
writing to one directory share one event file.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

from ..framework.protos import SessionLog, Summary
from ..runtime.config import RunOptions
from ..summary import FileWriterCache
from ..timeline import Timeline
from . import training_util
from .basic_session_run_hooks import SecondOrStepTimer, _global_step_tensor
from .file_io import atomic_write
from .session_run_hook import SessionRunArgs, SessionRunHook

if TYPE_CHECKING:
    from ..runtime.session import Session
    from .monitored_session import Scaffold
    from .session_run_hook import SessionRunContext, SessionRunValues

_LOG = logging.getLogger("dfcore.train")


class SummarySaverHook(SessionRunHook):
    """Runs ``summary_op`` (default: the scaffold's, i.e. ``merge_all``) every ``save_steps`` steps or
    ``save_secs`` seconds and writes it at the global step, with a ``SessionLog.START`` first.

    Raises:
        ValueError: both or neither of ``save_steps``/``save_secs``; both or neither of ``scaffold``/
            ``summary_op``; neither ``output_dir`` nor ``summary_writer``.
        RuntimeError: (at ``begin``) the graph has no global step.
    """

    def __init__(self, save_steps: int | None = None, save_secs: float | None = None, output_dir: str | None = None,
                 summary_writer: Any = None, scaffold: Scaffold | None = None, summary_op: Any = None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        if output_dir is None and summary_writer is None:
            raise ValueError("SummarySaverHook needs an output_dir or a summary_writer.")
        self._summary_op, self._scaffold = summary_op, scaffold
        self._writer, self._output_dir = summary_writer, output_dir
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._next_step: int | None = None

    def begin(self) -> None:
        if self._writer is None and self._output_dir is not None:  # the constructor asks for one of them
            self._writer = FileWriterCache.get(self._output_dir)
        self._global_step = _global_step_tensor("SummarySaverHook")
        self._next_step = None

    def _summaries(self):
        op = self._scaffold.summary_op if self._scaffold is not None else self._summary_op
        if op is None:
            return []
        return list(op) if isinstance(op, (list, tuple)) else [op]

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        self._request = self._next_step is None or self._timer.should_trigger_for_step(self._next_step)
        fetches = {"global_step": self._global_step}
        if self._request and self._summaries():
            fetches["summary"] = self._summaries()
        return SessionRunArgs(fetches)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        global_step = int(run_values.results["global_step"]) + 1  # the fetched value may predate this step's
        if self._next_step is None or self._request:            # increment; read it again before writing
            global_step = int(run_context.session.run(self._global_step))
        if self._next_step is None:
            self._writer.add_session_log(SessionLog(status=SessionLog.START), global_step)
        if self._request:
            self._timer.update_last_triggered_step(global_step)
            for summary in run_values.results.get("summary", []):
                self._writer.add_summary(summary, global_step)
        self._next_step = global_step + 1

    def end(self, session: Session) -> None:
        self._writer.flush()


class StepCounterHook(SessionRunHook):
    """Every ``every_n_steps`` steps (or ``every_n_secs``) writes ``global_step/sec`` as a scalar summary and
    logs it at INFO, as TF's hook does.

    Raises:
        ValueError: both or neither of ``every_n_steps``/``every_n_secs`` (TF's wording).
        RuntimeError: (at ``begin``) the graph has no global step.
    """

    def __init__(self, every_n_steps: int | None = 100, every_n_secs: float | None = None,
                 output_dir: str | None = None, summary_writer: Any = None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._writer, self._output_dir = summary_writer, output_dir
        self._tag = "global_step/sec"

    def begin(self) -> None:
        if self._writer is None and self._output_dir:
            self._writer = FileWriterCache.get(self._output_dir)
        self._global_step = _global_step_tensor("StepCounterHook")
        self._last: tuple[int, float] | None = None

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        step = int(run_values.results)
        if self._last is None:
            self._timer.update_last_triggered_step(step)
            self._last = (step, time.time())
            return
        if self._timer.should_trigger_for_step(step):
            last_step, last_time = self._last
            elapsed = time.time() - last_time
            if elapsed > 0 and step > last_step:
                rate = (step - last_step) / elapsed
                _LOG.info("%s: %g", self._tag, rate)
                if self._writer is not None:
                    self._writer.add_summary(Summary(value=[Summary.Value(tag=self._tag, simple_value=rate)]), step)
            self._timer.update_last_triggered_step(step)
            self._last = (step, time.time())


class ProfilerHook(SessionRunHook):
    """Every ``save_steps`` steps or ``save_secs`` seconds (never on the first call) traces one step with
    ``FULL_TRACE``, writes its Chrome trace (:class:`dfcore.timeline.Timeline`, wall clock) to
    ``<output_dir>/timeline-<global_step>.json`` and adds its ``RunMetadata`` to ``output_dir``'s event file
    under the tag ``step_<global_step>``. Other steps run untraced (no ``RunOptions``).

    Raises:
        ValueError: both or neither of ``save_steps``/``save_secs`` (TF's wording).
        RuntimeError: (at ``begin``) the graph has no global step.
        PermissionDeniedError, ...: (at ``begin`` or on a traced step) ``output_dir`` cannot be written.
    """

    def __init__(self, save_steps: int | None = None, save_secs: float | None = None, output_dir: str = "",
                 show_dataflow: bool = True, show_memory: bool = False):
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._output_dir = output_dir or os.curdir  # TF's default "" writes into the working directory
        self._show_dataflow, self._show_memory = show_dataflow, show_memory

    def begin(self) -> None:
        self._global_step = training_util._get_or_create_global_step_read()  # pre-increment: "stale", as TF
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use ProfilerHook.")
        self._writer = FileWriterCache.get(self._output_dir)
        self._next_step: int | None = None

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        self._request = self._next_step is not None and self._timer.should_trigger_for_step(self._next_step)
        options = RunOptions(trace_level=RunOptions.FULL_TRACE) if self._request else None
        return SessionRunArgs({"global_step": self._global_step}, options=options)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        stale_step = int(run_values.results["global_step"])
        if self._next_step is None:  # the first trace comes save_steps (or save_secs) after the first call
            self._timer.update_last_triggered_step(stale_step)
        global_step = stale_step + 1
        if self._request:
            global_step = int(run_context.session.run(self._global_step))
            self._timer.update_last_triggered_step(global_step)
            self._save(global_step, run_values.run_metadata.step_stats)
            self._writer.add_run_metadata(run_values.run_metadata, f"step_{global_step}")
        self._next_step = global_step + 1

    def _save(self, step, step_stats):
        path = os.path.join(self._output_dir, f"timeline-{step}.json")
        _LOG.info("Saving timeline for %d into '%s'.", step, path)
        trace = Timeline(step_stats).generate_chrome_trace_format(show_dataflow=self._show_dataflow,
                                                                  show_memory=self._show_memory)
        atomic_write(path, lambda f: f.write(trace.encode()), sync=False)
