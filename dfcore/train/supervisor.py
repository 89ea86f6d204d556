"""``tf.train.Supervisor``: TF 1.x's older training wrapper, as a thin layer over the monitored-session parts.

Source: ``tensorflow/python/training/supervisor.py``. ``managed_session`` creates the session as
``MonitoredTrainingSession`` does (the chief restores the latest checkpoint of ``logdir`` or runs the init
op; other workers wait for the chief), starts the graph's queue runners and, on the chief, the standard
services: a thread saving a checkpoint every ``save_model_secs`` and one writing ``summary_op`` every
``save_summaries_secs`` to ``logdir``. Leaving the block stops the services, saves a last checkpoint on
the chief and closes the session; an ``OutOfRangeError`` ends the block quietly, as in TF.

dfcore differs: no ``SVStepCounterThread`` (``global_step/sec``), and ``local_init_op``/``ready_op`` are the
Scaffold's (TF's defaults).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import errors
from ..framework import graph as graph_lib
from ..framework.protos import SessionLog
from ..summary import FileWriterCache
from . import training_util
from .coordinator import Coordinator
from .monitored_session import USE_DEFAULT, ChiefSessionCreator, Scaffold, WorkerSessionCreator

if TYPE_CHECKING:
    from ..framework.graph import Graph
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike
    from ..ops.variables import Variable
    from ..runtime.config import ConfigProto
    from ..runtime.session import Session
    from .queue_runner import QueueRunner
    from .saver import Saver


class Supervisor:
    """Creates, runs and stops a training session with checkpoint and summary services.

    Args:
        graph: the graph (default: the default graph). is_chief: whether this task initializes and saves.
        logdir: checkpoints (``model.ckpt``) and event files go here; None disables both services.
        init_op, ready_op, local_init_op, summary_op, saver: as for :class:`Scaffold` (``USE_DEFAULT``: its
            defaults; None: no summaries / no saving for ``summary_op`` / ``saver``).
        global_step: the step written with checkpoints and summaries (default: the graph's global step).
        save_summaries_secs, save_model_secs: service periods in seconds (0 or None: off).
        init_feed_dict, init_fn: as for :class:`Scaffold`.
    """

    USE_DEFAULT = USE_DEFAULT

    def __init__(self, graph: Graph | None = None, ready_op: Any = USE_DEFAULT, is_chief: bool = True,
                 init_op: Any = USE_DEFAULT, init_feed_dict: Mapping[Any, Any] | None = None,
                 local_init_op: Any = USE_DEFAULT, logdir: str | None = None, summary_op: Any = USE_DEFAULT,
                 saver: Any = USE_DEFAULT, global_step: Any = USE_DEFAULT, save_summaries_secs: float = 120,
                 save_model_secs: float = 600, recovery_wait_secs: float = 30, stop_grace_secs: float = 120,
                 checkpoint_basename: str = "model.ckpt", init_fn: Callable[[Session], None] | None = None):
        self._graph = graph or graph_lib.get_default_graph()
        with self._graph.as_default():
            self._scaffold = Scaffold(
                init_op=_given(init_op), init_feed_dict=init_feed_dict, ready_op=_given(ready_op),
                local_init_op=_given(local_init_op), summary_op=_given(summary_op), saver=_given(saver),
                init_fn=(lambda scaffold, session: init_fn(session)) if init_fn else None)
            self._global_step = training_util.get_global_step() if global_step is USE_DEFAULT else global_step
        self._no_summaries, self._no_saver = summary_op is None, saver is None
        self._is_chief, self._logdir, self._checkpoint_basename = is_chief, logdir, checkpoint_basename
        self._save_summaries_secs, self._save_model_secs = save_summaries_secs, save_model_secs
        self._recovery_wait_secs, self._stop_grace_secs = recovery_wait_secs, stop_grace_secs
        self._coord = Coordinator()
        self._threads: list[threading.Thread] = []
        self._sess: Any = None  # a Session once prepared

    # -- what TF exposes ------------------------------------------------------
    @property
    def is_chief(self) -> bool:
        return self._is_chief

    @property
    def coord(self) -> Coordinator:
        return self._coord

    @property
    def global_step(self) -> Variable | Tensor | None:
        return self._global_step

    @property
    def save_path(self) -> str | None:
        return os.path.join(self._logdir, self._checkpoint_basename) if self._logdir else None

    @property
    def saver(self) -> Saver | None:
        return None if self._no_saver else self._scaffold.saver

    @property
    def summary_writer(self) -> Any:
        return FileWriterCache.get(self._logdir) if self._logdir and self._is_chief else None

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def request_stop(self, ex: BaseException | tuple[Any, Any, Any] | None = None) -> None:
        self._coord.request_stop(ex)

    def summary_computed(self, sess: Session, summary: Any, global_step: TensorLike | None = None) -> None:
        """Write a summary the caller computed (raises RuntimeError without a summary writer, as TF)."""
        if self.summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = int(sess.run(self._global_step))
        self.summary_writer.add_summary(summary, global_step)

    # -- sessions ---------------------------------------------------------------
    def prepare_or_wait_for_session(self, master: str = "", config: ConfigProto | None = None,
                                    wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                                    start_standard_services: bool = True) -> Session:
        """The chief's restored-or-initialized session, or a worker's once the chief is done; with
        ``start_standard_services`` also the queue runners and (chief) the checkpoint and summary threads."""
        del wait_for_checkpoint
        with self._graph.as_default():
            creator = ChiefSessionCreator(self._scaffold, master, config, self._logdir) if self._is_chief else \
                WorkerSessionCreator(self._scaffold, master, config, max_wait_secs)
            self._sess = creator.create_session()
        if start_standard_services:
            self.start_queue_runners(self._sess)
            if self._is_chief and self._logdir:
                self.summary_writer.add_session_log(SessionLog(status=SessionLog.START), self._step())
                self._loop(self._save_model_secs, self._save_checkpoint, "save_model")
                self._loop(self._save_summaries_secs, self._write_summaries, "save_summaries")
        return self._sess

    @contextlib.contextmanager
    def managed_session(self, master: str = "", config: ConfigProto | None = None, start_standard_services: bool = True,
                        close_summary_writer: bool = True) -> Iterator[Session]:
        """A context manager yielding the session; see the module docstring for what it starts and stops."""
        sess = self.prepare_or_wait_for_session(master, config, start_standard_services=start_standard_services)
        try:
            yield sess
        except errors.OutOfRangeError:
            pass
        except BaseException as error:
            self.request_stop(error if isinstance(error, Exception) else None)
            raise
        finally:
            self.stop(close_summary_writer=close_summary_writer)

    def start_queue_runners(self, sess: Session,
                            queue_runners: Sequence[QueueRunner] | None = None) -> list[threading.Thread]:
        """Start the graph's QueueRunners (or ``queue_runners``) under this supervisor's coordinator."""
        runners = queue_runners if queue_runners is not None else self._graph.get_collection("queue_runners")
        threads = [t for runner in runners for t in runner.create_threads(sess, self._coord, daemon=True, start=True)]
        self._threads.extend(threads)
        return threads

    def stop(self, threads: Sequence[threading.Thread] | None = None, close_summary_writer: bool = True) -> None:
        """Stop the services and queue runners, save a last checkpoint (chief) and close the session."""
        self._coord.request_stop()
        try:
            self._coord.join(self._threads + list(threads or ()), stop_grace_period_secs=self._stop_grace_secs)
        finally:
            if self._sess is not None:
                if self._is_chief and self._logdir:
                    self._save_checkpoint()
                    if close_summary_writer:
                        self.summary_writer.flush()
                self._sess.close()
                self._sess = None

    # -- services ----------------------------------------------------------------
    def _loop(self, period_s, action, name):
        if not period_s:
            return
        def run():
            while not self._coord.wait_for_stop(period_s):
                try:
                    action()
                except Exception as error:  # a failing service stops training, as TF's LooperThread does
                    self._coord.request_stop(error)
        thread = threading.Thread(target=run, name=f"Supervisor-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def _step(self):
        return int(self._sess.run(self._global_step)) if self._global_step is not None else None

    def _save_checkpoint(self):
        if self.saver is not None and self.save_path is not None:  # a logdir was given
            self.saver.save(self._sess, self.save_path, global_step=self._step())

    def _write_summaries(self):
        op = self._scaffold.summary_op
        if op is not None and not self._no_summaries:
            self.summary_writer.add_summary(self._sess.run(op), self._step())


def _given(value):
    """A Supervisor argument as the Scaffold takes it: ``USE_DEFAULT`` and None both mean "make the default";
    the Supervisor remembers None for summary_op and saver itself."""
    return None if value is USE_DEFAULT else value
