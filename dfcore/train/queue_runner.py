"""``tf.train.QueueRunner``, ``add_queue_runner`` and ``start_queue_runners``: threads that fill queues.

Source: ``tensorflow/python/training/queue_runner_impl.py``. A queue runner holds a queue's
enqueue ops; :meth:`QueueRunner.create_threads` starts one thread per op, each running it in
a loop until its coordinator asks to stop, or the op raises one of
``queue_closed_exception_types`` (default ``OutOfRangeError``: its input ran out) — the
last such thread runs ``close_op`` so consumers drain the queue and then get
``OutOfRangeError``. Any other error is reported to the coordinator, which stops every
thread. With a coordinator, one more thread runs ``cancel_op`` (close the queue, cancelling
pending enqueues) when a stop is requested, so no thread stays blocked on a full queue; it
ends by itself once the runner's threads have all ended. Threads are registered with the
coordinator, so ``coord.join()`` waits for them. A runner travels in a MetaGraphDef's ``queue_runners``
collection as TF's ``QueueRunnerDef`` (:meth:`QueueRunner.to_proto` / :meth:`QueueRunner.from_proto`).
"""

import logging
import threading
import weakref

from .. import errors
from ..framework import graph as graph_lib, input_events, meta_graph
from ..framework.default_session import get_default_session
from ..framework.graph import GraphKeys
from ..framework.protos import QueueRunnerDef

__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]

_LOG = logging.getLogger("dfcore.train")
_CLOSER_POLL_S = 0.05  # how often the closer thread looks whether the enqueue threads all ended


class QueueRunner:
    """Runs a queue's enqueue ops in threads (TF's ``tf.train.QueueRunner``).

    Args:
        queue: the queue the ops enqueue into.
        enqueue_ops: the ops each thread runs repeatedly (one thread per op).
        close_op: run when the last thread ended because the input ran out (default ``queue.close()``).
        cancel_op: run when the coordinator stops (default ``queue.close(cancel_pending_enqueues=True)``).
        queue_closed_exception_types: errors that end a thread quietly (default ``(OutOfRangeError,)``).
        queue_runner_def: a ``QueueRunnerDef`` naming the ops of the default graph to use instead (with
            ``import_scope`` prepended).
    Raises:
        ValueError: no queue or no enqueue ops, or both them and ``queue_runner_def`` (TF's wording).
    """

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        if queue_runner_def is not None:
            if queue or enqueue_ops:
                raise ValueError("queue_runner_def and queue are mutually exclusive.")
            self._init_from_proto(queue_runner_def, import_scope)
        else:
            if not queue or not enqueue_ops:
                raise ValueError("Must provide queue and enqueue_ops.")
            self._queue = queue
            self._enqueue_ops = list(enqueue_ops)
            self._close_op = close_op if close_op is not None else queue.close()
            self._cancel_op = cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
            self._queue_closed_exception_types = tuple(queue_closed_exception_types or (errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._runs_per_session = weakref.WeakKeyDictionary()
        self._exceptions_raised = []

    def _init_from_proto(self, queue_runner_def, import_scope):
        graph = graph_lib.get_default_graph()

        def element(name):
            return graph.as_graph_element(meta_graph.prepend_name_scope(name, import_scope))

        self._queue = element(queue_runner_def.queue_name)
        self._enqueue_ops = [element(name) for name in queue_runner_def.enqueue_op_name]
        self._close_op = element(queue_runner_def.close_op_name)
        self._cancel_op = element(queue_runner_def.cancel_op_name)
        self._queue_closed_exception_types = tuple(
            errors.exception_type_from_error_code(code) for code in queue_runner_def.queue_closed_exception_types
        ) or (errors.OutOfRangeError,)

    def to_proto(self, export_scope=None):
        """This runner as TF's ``QueueRunnerDef`` (names without ``export_scope``); None if its queue is outside it."""
        if export_scope is not None and not self.name.startswith(export_scope):
            return None
        return QueueRunnerDef(
            queue_name=meta_graph.strip_name_scope(self.name, export_scope),
            enqueue_op_name=[meta_graph.strip_name_scope(op.name, export_scope) for op in self._enqueue_ops],
            close_op_name=meta_graph.strip_name_scope(self._close_op.name, export_scope),
            cancel_op_name=meta_graph.strip_name_scope(self._cancel_op.name, export_scope),
            queue_closed_exception_types=[errors.error_code_from_exception_type(cls)
                                          for cls in self._queue_closed_exception_types])

    @staticmethod
    def from_proto(queue_runner_def, import_scope=None):
        """The QueueRunner a ``QueueRunnerDef`` describes, on the default graph's ops."""
        return QueueRunner(queue_runner_def=queue_runner_def, import_scope=import_scope)

    @property
    def queue(self):
        return self._queue

    @property
    def enqueue_ops(self):
        return list(self._enqueue_ops)

    @property
    def close_op(self):
        return self._close_op

    @property
    def cancel_op(self):
        return self._cancel_op

    @property
    def queue_closed_exception_types(self):
        return self._queue_closed_exception_types

    @property
    def exceptions_raised(self):
        """Exceptions raised by threads started without a coordinator (with one, it keeps them)."""
        return list(self._exceptions_raised)

    @property
    def name(self):
        return self._queue.name

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        """The runner's threads for ``sess`` (none if they are still running there): one per enqueue op,
        plus, with ``coord``, the thread that cancels the queue when a stop is requested."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon,
                                    name=f"QueueRunnerThread-{self.name}-{op.name}") for op in self._enqueue_ops]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, coord), daemon=daemon,
                                            name=f"QueueRunnerThread-{self.name}-close_on_stop"))
        for thread in threads:
            if coord is not None:
                coord.register_thread(thread)
            if start:
                thread.start()
        return threads

    def _run(self, sess, op, coord):
        decremented = False
        try:
            while not (coord is not None and coord.should_stop()):
                try:
                    input_events.timed("QueueRunner", lambda: sess.run(op))  # a lane in record_pipeline
                except self._queue_closed_exception_types:
                    decremented = True
                    if self._end_run(sess):
                        _run_ignoring_errors(sess, self._close_op)
                    return
        except Exception as error:  # reported to the coordinator, which stops every thread (TF)
            if coord is None:
                _LOG.error("Exception in QueueRunner: %s", error)
                with self._lock:
                    self._exceptions_raised.append(error)
                raise
            coord.request_stop(error)
        finally:
            if not decremented:
                self._end_run(sess)

    def _end_run(self, sess):
        """Count one thread of ``sess`` as ended; True if it was the last."""
        with self._lock:
            self._runs_per_session[sess] -= 1
            return self._runs_per_session[sess] == 0

    def _close_on_stop(self, sess, coord):
        while not coord.wait_for_stop(_CLOSER_POLL_S):
            with self._lock:
                if self._runs_per_session.get(sess, 0) <= 0:
                    return
        _run_ignoring_errors(sess, self._cancel_op)


def _run_ignoring_errors(sess, op):
    try:
        sess.run(op)
    except Exception as error:  # the queue may be gone with its session: nothing left to close (TF ignores it)
        _LOG.debug("Ignored exception: %s", error)


def add_queue_runner(qr, collection=GraphKeys.QUEUE_RUNNERS):
    """Add ``qr`` to the default graph's ``collection`` (``tf.GraphKeys.QUEUE_RUNNERS``)."""
    graph_lib.get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True, collection=GraphKeys.QUEUE_RUNNERS):
    """Start the threads of every queue runner in ``sess``'s graph collection; returns them.

    Raises:
        ValueError: no session given and none is the default (TF's wording).
        TypeError: ``sess`` is not a Session (a monitored session starts its runners itself; then ``[]``).
    """
    if sess is None:
        sess = get_default_session()
        if sess is None:
            raise ValueError("Cannot start queue runners: No default session is registered. Use `with "
                             "sess.as_default()` or pass an explicit session to tf.start_queue_runners(sess=sess)")
    if not hasattr(sess, "graph") or not hasattr(sess, "run"):
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {sess.__class__}")
    if sess.__class__.__name__ in ("MonitoredSession", "SingularMonitoredSession"):
        return []
    threads = []
    for runner in sess.graph.get_collection(collection):
        threads.extend(runner.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


meta_graph.register_proto_function(GraphKeys.QUEUE_RUNNERS, QueueRunnerDef, QueueRunner.to_proto,
                                   QueueRunner.from_proto)


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from ..compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.train.queue_runner", name)
