"""``SummarySaverHook`` and ``StepCounterHook``: the hooks that feed TensorBoard during training.

Source: ``tensorflow/python/training/basic_session_run_hooks.py`` (TF 1.x): the same arguments, triggers
(a :class:`SecondOrStepTimer` over the global step), tags (``global_step/sec``) and messages. Both write
through :class:`dfcore.summary.FileWriterCache`, so hooks writing to one directory share one event file.
"""

import logging
import time

from ..framework.protos import SessionLog, Summary
from ..summary import FileWriterCache
from .basic_session_run_hooks import SecondOrStepTimer, _global_step_tensor
from .session_run_hook import SessionRunArgs, SessionRunHook

_LOG = logging.getLogger("dfcore.train")


class SummarySaverHook(SessionRunHook):
    """Runs ``summary_op`` (default: the scaffold's, i.e. ``merge_all``) every ``save_steps`` steps or
    ``save_secs`` seconds and writes it at the global step, with a ``SessionLog.START`` first.

    Raises:
        ValueError: both or neither of ``save_steps``/``save_secs``; both or neither of ``scaffold``/
            ``summary_op``; neither ``output_dir`` nor ``summary_writer``.
        RuntimeError: (at ``begin``) the graph has no global step.
    """

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None, scaffold=None,
                 summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        if output_dir is None and summary_writer is None:
            raise ValueError("SummarySaverHook needs an output_dir or a summary_writer.")
        self._summary_op, self._scaffold = summary_op, scaffold
        self._writer, self._output_dir = summary_writer, output_dir
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._next_step = None

    def begin(self):
        if self._writer is None:
            self._writer = FileWriterCache.get(self._output_dir)
        self._global_step = _global_step_tensor("SummarySaverHook")
        self._next_step = None

    def _summaries(self):
        op = self._scaffold.summary_op if self._scaffold is not None else self._summary_op
        if op is None:
            return []
        return list(op) if isinstance(op, (list, tuple)) else [op]

    def before_run(self, run_context):
        self._request = self._next_step is None or self._timer.should_trigger_for_step(self._next_step)
        fetches = {"global_step": self._global_step}
        if self._request and self._summaries():
            fetches["summary"] = self._summaries()
        return SessionRunArgs(fetches)

    def after_run(self, run_context, run_values):
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

    def end(self, session):
        self._writer.flush()


class StepCounterHook(SessionRunHook):
    """Every ``every_n_steps`` steps (or ``every_n_secs``) writes ``global_step/sec`` as a scalar summary and
    logs it at INFO, as TF's hook does.

    Raises:
        ValueError: both or neither of ``every_n_steps``/``every_n_secs`` (TF's wording).
        RuntimeError: (at ``begin``) the graph has no global step.
    """

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None, summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._writer, self._output_dir = summary_writer, output_dir
        self._tag = "global_step/sec"

    def begin(self):
        if self._writer is None and self._output_dir:
            self._writer = FileWriterCache.get(self._output_dir)
        self._global_step = _global_step_tensor("StepCounterHook")
        self._last = None

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
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
