"""The stock hooks: stop at a step, save checkpoints, log tensors, stop on NaN, run final ops, feed.

Source: ``tensorflow/python/training/basic_session_run_hooks.py`` (TF 1.x): the same names,
arguments, triggers and error messages. Hooks that watch the global step fetch it with each run
and read it again only when they are about to act, as TF's do.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..framework.meta_graph import export_scoped_meta_graph
from ..framework.protos import SessionLog
from ..summary.writer_cache import FileWriterCache
from . import training_util
from .graph_io import write_graph
from .saver import Saver
from .session_run_hook import SessionRunArgs, SessionRunHook

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..runtime.session import Session
    from .coordinator import Coordinator
    from .monitored_session import Scaffold
    from .session_run_hook import SessionRunContext, SessionRunValues

_LOG = logging.getLogger("dfcore.train")


def _global_step_tensor(hook_name):
    step = training_util.get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook_name}.")
    return step


class SecondOrStepTimer:
    """Triggers every ``every_secs`` seconds or every ``every_steps`` steps (exactly one of them).

    Raises:
        ValueError: both or neither given (TF's wording).
    """

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None):
        if (every_secs is None) == (every_steps is None):
            raise ValueError("exactly one of every_steps and every_secs should be provided.")
        self._every_secs, self._every_steps = every_secs, every_steps or 0
        self._last_time: float = 0.0  # of the last trigger, when _last_step is not None
        self._last_step: int | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_time + self._every_secs
        return step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        """Record a trigger at ``step``; returns ``(elapsed_secs, elapsed_steps)`` since the last one
        (``(None, None)`` the first time), as TF's timer."""
        now = time.time()
        elapsed = (None, None) if self._last_step is None else (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed

    def last_triggered_step(self) -> int | None:
        return self._last_step


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches ``last_step`` (or ``num_steps`` more than at the start).

    Raises:
        ValueError: both or neither of ``num_steps`` and ``last_step`` (TF's wording).
        RuntimeError (in ``begin``): the graph has no global step.
    """

    def __init__(self, num_steps: int | None = None, last_step: int | None = None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps: Any = num_steps
        self._last_step: Any = last_step  # set from num_steps in after_create_session

    def begin(self) -> None:
        self._global_step = _global_step_tensor("StopAtStepHook")

    def after_create_session(self, session: Session, coord: Coordinator) -> None:
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step)) + self._num_steps

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if int(run_values.results) + 1 >= self._last_step:
            # the step fetched ran before this call's update: read it again before stopping
            if int(run_context.session.run(self._global_step)) >= self._last_step:
                run_context.request_stop()


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint every ``save_secs`` seconds or ``save_steps`` steps, at the start and at the end.

    As TF's, it also writes the graph to ``checkpoint_dir``: ``graph.pbtxt`` and, in the directory's
    event file (``tf.summary.FileWriterCache``), the GraphDef TensorBoard draws and the MetaGraphDef; each save adds a
    ``SessionLog.CHECKPOINT`` event.

    Args:
        checkpoint_dir: where ``<checkpoint_basename>-<step>`` files go.
        saver or scaffold: what saves (default: the scaffold's saver, else a ``Saver`` of every variable).
    Raises:
        ValueError: both or neither of ``save_secs`` and ``save_steps``; both ``saver`` and ``scaffold``.
    """

    def __init__(self, checkpoint_dir: str, save_secs: float | None = None, save_steps: int | None = None,
                 saver: Saver | None = None, checkpoint_basename: str = "model.ckpt", scaffold: Scaffold | None = None,
                 listeners: Sequence[Any] | None = None):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver, self._scaffold = saver, scaffold
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])

    def begin(self) -> None:
        self._summary_writer = FileWriterCache.get(self._checkpoint_dir)
        self._global_step = _global_step_tensor("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session: Session, coord: Coordinator) -> None:
        step = int(session.run(self._global_step))
        graph = session.graph
        graph_def = graph.as_graph_def(add_shapes=True)
        write_graph(graph_def, self._checkpoint_dir, "graph.pbtxt")
        self._summary_writer.add_graph(graph)
        self._summary_writer.add_meta_graph(export_scoped_meta_graph(
            graph_def=graph_def, graph=graph, saver_def=self._get_saver().saver_def))
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._global_step))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session: Session) -> None:
        step = int(session.run(self._global_step))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _save(self, session, step):
        """Save; True if a listener asks to stop (its ``after_save`` returned True)."""
        _LOG.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step)
        self._summary_writer.add_session_log(
            SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._save_path), step)
        return any(listener.after_save(session, step) for listener in self._listeners)

    def _get_saver(self):
        if self._saver is None:
            self._saver = self._scaffold.saver if self._scaffold is not None else Saver()
        return self._saver


class LoggingTensorHook(SessionRunHook):
    """Logs ``tensors`` (a list or ``{tag: tensor}``) every ``every_n_iter`` calls or ``every_n_secs`` seconds,
    and at the end with ``at_end``, through the ``dfcore.train`` logger (TF: ``tf.logging.info``).

    Raises:
        ValueError: neither a trigger nor ``at_end``; both triggers.
    """

    def __init__(self, tensors: Any, every_n_iter: int | None = None, every_n_secs: float | None = None,
                 at_end: bool = False, formatter: Callable[[dict[str, Any]], str] | None = None):
        if not at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.")
        self._tensors = tensors if isinstance(tensors, dict) else {getattr(t, "name", t): t for t in tensors}
        self._tag_order = sorted(self._tensors) if isinstance(tensors, dict) else list(self._tensors)
        self._timer: Any = None if at_end and every_n_iter is None and every_n_secs is None else \
            SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        self._at_end, self._formatter, self._iter = at_end, formatter, 0

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        self._should_log = self._timer is not None and self._timer.should_trigger_for_step(self._iter)
        return SessionRunArgs(self._tensors) if self._should_log else None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._should_log:
            elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter)
            self._log(run_values.results, elapsed_secs)
        self._iter += 1

    def end(self, session: Session) -> None:
        if self._at_end:
            self._log(session.run(self._tensors), None)

    def _log(self, values, elapsed_secs):
        """TF's line: ``tag = value`` for each tag (a dict's sorted), then `` (0.123 sec)`` since the last one."""
        if self._formatter:
            _LOG.info(self._formatter(values))
            return
        with np.printoptions(suppress=True):
            text = ", ".join(f"{tag} = {values[tag]}" for tag in self._tag_order)
        if elapsed_secs is None:
            _LOG.info("%s", text)
        else:
            _LOG.info("%s (%.3f sec)", text, elapsed_secs)


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Fails (``NanLossDuringTrainingError``) or stops training when ``loss_tensor`` is NaN."""

    def __init__(self, loss_tensor: Tensor, fail_on_nan_loss: bool = True):
        self._loss_tensor, self._fail_on_nan_loss = loss_tensor, fail_on_nan_loss

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if np.isnan(run_values.results):
            if self._fail_on_nan_loss:
                raise NanLossDuringTrainingError
            _LOG.warning("Model diverged with loss = NaN.")
            run_context.request_stop()


class FinalOpsHook(SessionRunHook):
    """Runs ``final_ops`` when training ends; their values are in ``final_ops_values``."""

    def __init__(self, final_ops: Any, final_ops_feed_dict: Mapping[Any, Any] | None = None):
        self._final_ops, self._feed_dict, self._values = final_ops, final_ops_feed_dict, None

    @property
    def final_ops_values(self) -> Any:
        return self._values

    def end(self, session: Session) -> None:
        if self._final_ops is not None:
            try:
                self._values = session.run(self._final_ops, feed_dict=self._feed_dict)
            except (errors.OutOfRangeError, StopIteration) as error:
                _LOG.warning("An OutOfRangeError or StopIteration exception is raised by the code in FinalOpsHook: %s",
                             error)


class FeedFnHook(SessionRunHook):
    """Feeds ``feed_fn()`` (a ``{tensor: value}`` dict) into every call."""

    def __init__(self, feed_fn: Callable[[], Mapping[Any, Any]]):
        self._feed_fn = feed_fn

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(fetches=None, feed_dict=self._feed_fn())
