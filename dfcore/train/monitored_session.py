"""``MonitoredTrainingSession``: the training loop of TF 1.x programs, with hooks, checkpoints and recovery.

Source: ``tensorflow/python/training/monitored_session.py`` (TF 1.x). The chief creates its
session by restoring the latest checkpoint of ``checkpoint_dir`` or, if there is none, by running
the :class:`Scaffold`'s init op; other workers wait until the chief has initialized the variables.
Each ``run`` adds the hooks' fetches, feeds and options to the caller's in one ``Session.run``
call. An ``AbortedError`` or ``UnavailableError`` (a task restarted or gone) closes the session and
creates a new one — restoring the latest checkpoint — and runs the call again, as TF's
``_RecoverableSession`` does. ``OutOfRangeError`` ends a ``with`` block quietly (input exhausted).

The chief also writes TensorBoard summaries to ``summary_dir`` (default ``checkpoint_dir``): a
``StepCounterHook`` every ``log_step_count_steps`` and a ``SummarySaverHook`` every ``save_summaries_steps``
(default 100) or ``save_summaries_secs``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import errors, summary
from ..framework import graph as graph_lib
from ..framework.graph import GraphKeys
from ..ops import control_flow_ops, state_ops, variables
from ..ops.array_ops_join import stack
from ..runtime.config import RunMetadata, RunOptions
from ..runtime.session import Session
from . import checkpoint_management
from .basic_session_run_hooks import CheckpointSaverHook
from .coordinator import Coordinator
from .saver import Saver
from .session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues
from .summary_hooks import StepCounterHook, SummarySaverHook

if TYPE_CHECKING:
    from ..framework.operation import Operation
    from ..framework.tensor import Tensor
    from ..runtime.config import ConfigProto
    from .session_run_hook import SessionRunHook

_LOG = logging.getLogger("dfcore.train")
#: Errors after which a monitored session is created again from the latest checkpoint (TF's list).
PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)
#: Seconds between tries to recreate a session whose tasks are unavailable.
RECREATE_PAUSE_S = 0.1
_READY_POLL_S = 0.05
USE_DEFAULT = object()


class Scaffold:
    """The ops a monitored session needs, made by :meth:`finalize` where not given: ``init_op`` (every global
    variable's initializer), ``local_init_op``, ``ready_op`` (one ``IsVariableInitialized`` per global
    variable), ``summary_op`` (``tf.summary.merge_all()``, None without summaries) and ``saver`` (a
    ``Saver`` of every global variable). ``init_fn(scaffold, session)`` runs
    after ``init_op``. ``finalize`` also finalizes the graph, as TF does."""

    saver: Any  # a Saver once finalized

    def __init__(self, init_op: Operation | None = None, init_feed_dict: Mapping[Any, Any] | None = None,
                 init_fn: Callable[[Scaffold, Session], None] | None = None, ready_op: Tensor | None = None,
                 local_init_op: Operation | None = None, summary_op: Tensor | None = None, saver: Saver | None = None):
        self.init_op, self.init_feed_dict, self._init_fn = init_op, init_feed_dict, init_fn
        self.ready_op, self.local_init_op, self.saver = ready_op, local_init_op, saver
        self.summary_op = summary_op

    def finalize(self) -> Scaffold:
        """Make the missing ops — or take those an earlier scaffold of this graph made, from the graph's
        ``INIT_OP``, ``READY_OP``, ``LOCAL_INIT_OP`` and ``SAVERS`` collections — then finalize the graph."""
        graph = graph_lib.get_default_graph()
        self.init_op = self.init_op or _get_or_default(graph, GraphKeys.INIT_OP,
                                                       variables.global_variables_initializer)
        if self.ready_op is None:
            self.ready_op = _get_or_default(graph, GraphKeys.READY_OP, _default_ready_op)
        self.local_init_op = self.local_init_op or _get_or_default(
            graph, GraphKeys.LOCAL_INIT_OP,
            lambda: control_flow_ops.group(variables.local_variables_initializer(), name="local_init_op"))
        if self.summary_op is None:
            self.summary_op = _get_or_default(graph, GraphKeys.SUMMARY_OP, summary.merge_all)
        self.saver = self.saver or _get_or_default(graph, GraphKeys.SAVERS, lambda: Saver(allow_empty=True))
        if not graph.finalized:
            graph.finalize()
        return self

    def init_fn(self, session: Session) -> None:
        if self._init_fn is not None:
            self._init_fn(self, session)

    def is_ready(self, session: Session) -> bool:
        """True once every global variable is initialized."""
        return True if self.ready_op is None else bool(all(session.run(self.ready_op)))


def _default_ready_op():
    """One bool vector, True where a global variable is initialized (None without variables): a single
    tensor, so the ``ready_op`` collection exports to a MetaGraphDef. TF's default is
    ``report_uninitialized_variables()``, the names of the uninitialized ones; dfcore has no string masking."""
    flags = [state_ops.is_variable_initialized(v) for v in variables.global_variables()]
    return stack(flags, name="ready_op") if flags else None


def _get_or_default(graph, key, make):
    """The one item of collection ``key``, or ``make()`` added to it (TF's ``Scaffold.get_or_default``)."""
    found = graph.get_collection(key)
    if len(found) > 1:
        raise RuntimeError(f"More than one item in collection {key}. Please indicate which one to use by passing "
                           "it to the constructor.")
    if found:
        return found[0]
    made = make()
    if made is not None:
        graph.add_to_collection(key, made)
    return made


class ChiefSessionCreator:
    """Creates the chief's session: restore ``checkpoint_filename_with_path`` or the latest checkpoint of
    ``checkpoint_dir`` (the saver then keeps counting that directory's earlier checkpoints against
    ``max_to_keep``, as TF's ``SessionManager``), else run the scaffold's init op; then its local init op."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config: ConfigProto | None = None,
                 checkpoint_dir: str | None = None, checkpoint_filename_with_path: str | None = None):
        self._scaffold, self._master, self._config = scaffold or Scaffold(), master, config
        self._checkpoint_dir, self._checkpoint_path = checkpoint_dir, checkpoint_filename_with_path

    def create_session(self) -> Session:
        scaffold = self._scaffold.finalize()
        session = Session(self._master, graph=graph_lib.get_default_graph(), config=self._config)
        path, earlier = self._checkpoint_path, None
        if path is None and self._checkpoint_dir:
            path = checkpoint_management.latest_checkpoint(self._checkpoint_dir)
            earlier = checkpoint_management.get_checkpoint_state(self._checkpoint_dir) if path else None
        if path is not None:
            scaffold.saver.restore(session, path)
            if earlier is not None:
                scaffold.saver.recover_last_checkpoints(list(earlier.all_model_checkpoint_paths))
            _LOG.info("Restored the model from %s", path)
        else:
            session.run(scaffold.init_op, feed_dict=scaffold.init_feed_dict)
            scaffold.init_fn(session)
        session.run(scaffold.local_init_op)
        if not scaffold.is_ready(session):
            raise RuntimeError("Init operations did not make model ready: some global variables are still "
                               "uninitialized.")
        return session


class WorkerSessionCreator:
    """Creates a non-chief worker's session: waits (at most ``max_wait_secs``) until the chief has
    initialized the variables, then runs the local init op.

    Raises (from ``create_session``):
        DeadlineExceededError: the model was not ready in time.
    """

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config: ConfigProto | None = None,
                 max_wait_secs: float = 30 * 60):
        self._scaffold, self._master, self._config, self._max_wait_secs = scaffold or Scaffold(), master, config, \
            max_wait_secs

    def create_session(self) -> Session:
        scaffold = self._scaffold.finalize()
        session = Session(self._master, graph=graph_lib.get_default_graph(), config=self._config)
        deadline = time.monotonic() + self._max_wait_secs
        while not scaffold.is_ready(session):
            if time.monotonic() >= deadline:
                session.close()
                raise errors.DeadlineExceededError(None, None, f"Session was not ready after waiting "
                                                   f"{self._max_wait_secs} secs.")
            time.sleep(_READY_POLL_S)
        session.run(scaffold.local_init_op)
        return session


class _MonitoredSession:
    """A session that runs hooks around every call and, if ``should_recover``, recreates itself after
    :data:`PREEMPTION_ERRORS`."""

    def __init__(self, session_creator, hooks, should_recover, stop_grace_period_secs=120):
        self._creator, self._hooks = session_creator, list(hooks or [])
        self._should_recover, self._stop_grace_period_secs = should_recover, stop_grace_period_secs
        self._should_stop, self._coord = False, None
        self._sess: Any = None  # a Session once created
        for hook in self._hooks:
            hook.begin()
        self._create_session()

    @property
    def graph(self):
        return self._sess.graph

    def _create_session(self):
        self._sess = self._creator.create_session()
        self._coord = Coordinator()
        for runner in self._sess.graph.get_collection(GraphKeys.QUEUE_RUNNERS):
            runner.create_threads(self._sess, self._coord, daemon=True, start=True)
        for hook in self._hooks:
            hook.after_create_session(self._sess, self._coord)

    def _recreate_session(self):
        """Create the session again, retrying while its tasks are still unavailable (a ps restarting), as TF's
        ``_RecoverableSession`` does; a pause of :data:`RECREATE_PAUSE_S` between tries."""
        while True:
            try:
                return self._create_session()
            except PREEMPTION_ERRORS as error:
                _LOG.info("An error was raised while a session was being created; it will be retried: %s", error)
                time.sleep(RECREATE_PAUSE_S)

    def should_stop(self):
        return self._should_stop or (self._coord is not None and self._coord.should_stop())

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """``Session.run`` with the hooks' fetches, feeds and options added; returns the caller's values.

        Raises:
            RuntimeError: a hook already asked to stop; a tensor fed both by a hook and the caller (TF's wording).
        """
        while True:
            try:
                return self._run_once(fetches, feed_dict, options, run_metadata)
            except PREEMPTION_ERRORS as error:
                if not self._should_recover:
                    raise
                _LOG.info("An error was raised; the session will be recreated from the latest checkpoint: %s", error)
                self._close_session()
                self._recreate_session()

    def _run_once(self, fetches, feed_dict, options, run_metadata):
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._sess)
        options = options if options is not None else RunOptions()
        feeds = dict(feed_dict or {})
        wanted = {"caller": fetches}
        for hook in self._hooks:
            request = hook.before_run(context)
            if request is None:
                continue
            if request.fetches is not None:
                wanted[hook] = request.fetches
            _merge_feeds(feeds, request.feed_dict, feed_dict)
            _merge_options(options, request.options)
        run_metadata = run_metadata if run_metadata is not None else RunMetadata()
        outputs = self._sess.run(wanted, feed_dict=feeds, options=options, run_metadata=run_metadata)
        for hook in self._hooks:
            hook.after_run(context, SessionRunValues(outputs.get(hook), options, run_metadata))
        self._should_stop = self._should_stop or context.stop_requested
        return outputs["caller"]

    def close(self):
        self._close(None)

    def _close(self, exception_type):
        try:
            if exception_type is None and self._sess is not None:
                for hook in self._hooks:
                    hook.end(self._sess)
        finally:
            self._close_session()

    def _close_session(self):
        """Stop the queue runners: a stop request, then their ``cancel_op`` run here (their own threads would
        race the close) closes their queues; closing the session then cancels what they may still wait for
        elsewhere (an accumulator's ``take_grad``), and ``join`` re-raises the first error a runner reported
        (TF joins before closing, ignoring threads still alive after the grace period; dfcore closes first so
        none is left)."""
        coord, sess, self._sess, self._coord = self._coord, self._sess, None, None
        if coord is not None:
            coord.request_stop()
        if sess is not None:
            for runner in sess.graph.get_collection(GraphKeys.QUEUE_RUNNERS):
                try:
                    sess.run(runner.cancel_op)
                except errors.OpError as error:  # a queue already gone (its task down): nothing to close
                    _LOG.debug("Ignored exception: %s", error)
            sess.close()
        if coord is not None:
            coord.join(stop_grace_period_secs=self._stop_grace_period_secs, ignore_live_threads=True)

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None  # the input ran out: a normal end of training
        self._close(exception_type)
        return exception_type is None


def _merge_feeds(feeds, hook_feeds, caller_feeds):
    for tensor, value in (hook_feeds or {}).items():
        if caller_feeds and tensor in caller_feeds:
            raise RuntimeError("Same tensor is fed by a SessionRunHook and user.")
        if tensor in feeds:
            raise RuntimeError("Same tensor is fed by two hooks.")
        feeds[tensor] = value


def _merge_options(options, hook_options):
    """TF's rule: the highest trace level, the smallest nonzero timeout, partition graphs if any asks."""
    if hook_options is None:
        return
    options.trace_level = max(options.trace_level, hook_options.trace_level)
    timeouts = [t for t in (options.timeout_in_ms, hook_options.timeout_in_ms) if t]
    options.timeout_in_ms = min(timeouts) if timeouts else 0
    options.output_partition_graphs = options.output_partition_graphs or hook_options.output_partition_graphs


class MonitoredSession(_MonitoredSession):
    """A monitored session that recovers from preemption (default creator: :class:`ChiefSessionCreator`)."""

    def __init__(self, session_creator: Any = None, hooks: Sequence[SessionRunHook] | None = None,
                 stop_grace_period_secs: float = 120):
        super().__init__(session_creator or ChiefSessionCreator(), hooks, True, stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A chief's monitored session that does not recover; :meth:`raw_session` gives the underlying Session."""

    def __init__(self, hooks: Sequence[SessionRunHook] | None = None, scaffold: Scaffold | None = None,
                 master: str = "", config: ConfigProto | None = None, checkpoint_dir: str | None = None,
                 stop_grace_period_secs: float = 120, checkpoint_filename_with_path: str | None = None):
        creator = ChiefSessionCreator(scaffold, master, config, checkpoint_dir, checkpoint_filename_with_path)
        super().__init__(creator, hooks, False, stop_grace_period_secs)

    def raw_session(self) -> Session:
        return self._sess


def MonitoredTrainingSession(master: str = "", is_chief: bool = True, checkpoint_dir: str | None = None,
                             scaffold: Scaffold | None = None, hooks: Sequence[SessionRunHook] | None = None,
                             chief_only_hooks: Sequence[SessionRunHook] | None = None,
                             save_checkpoint_secs: Any = USE_DEFAULT, save_summaries_steps: Any = USE_DEFAULT,
                             save_summaries_secs: Any = USE_DEFAULT, config: ConfigProto | None = None,
                             stop_grace_period_secs: float = 120, log_step_count_steps: int = 100,
                             max_wait_secs: float = 7200, save_checkpoint_steps: Any = USE_DEFAULT,
                             summary_dir: str | None = None) -> MonitoredSession:
    """A :class:`MonitoredSession` for training, set up as TF 1.x sets it up.

    The chief restores or initializes and, with a ``checkpoint_dir``, saves checkpoints every
    ``save_checkpoint_secs`` (default 600) or ``save_checkpoint_steps`` with a ``CheckpointSaverHook``, and
    writes summaries to ``summary_dir`` (default ``checkpoint_dir``; see the module docstring);
    ``chief_only_hooks`` run on the chief only. Other workers wait for the chief (``max_wait_secs``).
    """
    save_checkpoint_steps, save_checkpoint_secs = _period(save_checkpoint_steps, save_checkpoint_secs, default_secs=600)
    scaffold = scaffold or Scaffold()
    if not is_chief:
        return MonitoredSession(WorkerSessionCreator(scaffold, master, config, max_wait_secs), hooks,
                                stop_grace_period_secs)
    all_hooks = list(chief_only_hooks or []) + list(hooks or [])
    save_summaries_steps, save_summaries_secs = _period(save_summaries_steps, save_summaries_secs, default_steps=100)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                              save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir and (save_checkpoint_secs or save_checkpoint_steps):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_secs=save_checkpoint_secs,
                                             save_steps=save_checkpoint_steps, scaffold=scaffold))
    creator = ChiefSessionCreator(scaffold, master, config, checkpoint_dir)
    return MonitoredSession(creator, all_hooks, stop_grace_period_secs)


def _period(steps, secs, default_steps=None, default_secs=None):
    """``(steps, secs)`` of a service of MonitoredTrainingSession by TF's rule: both left at ``USE_DEFAULT`` give
    the service's default; when one is given, the other is off."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return default_steps, default_secs
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)
