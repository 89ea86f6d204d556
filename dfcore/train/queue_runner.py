"""``tf.train.QueueRunner`` and ``tf.train.Coordinator``: threads that keep running ops.

Source: ``tensorflow/python/training/queue_runner_impl.py`` and ``coordinator.py``.
A queue runner's threads each run one of its ``enqueue_ops`` in a loop until the
coordinator asks them to stop, or an op raises ``OutOfRangeError``/``CancelledError``
(the queue closed: the runner ends quietly), or another error (reported to the
coordinator, which then stops every thread). An error after a stop request (a blocked
op cancelled by closing a queue or stopping a server) ends the thread quietly. With
``poll_timeout_s`` each run gets that deadline and is retried, so a stop request is
seen in time even while an op blocks — only for ops a timeout cannot leave half done.
"""

import threading

from .. import errors
from ..runtime.config import RunOptions


class Coordinator:
    """Stops a group of threads together and reports the first exception one of them raised."""

    def __init__(self):
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._exception = None

    def request_stop(self, ex=None):
        """Ask every thread to stop; keep ``ex`` if it is the first exception reported."""
        with self._lock:
            if ex is not None and self._exception is None:
                self._exception = ex
            self._stop.set()

    def should_stop(self):
        return self._stop.is_set()

    def wait_for_stop(self, timeout=None):
        """True once a stop was requested (waits at most ``timeout`` seconds)."""
        return self._stop.wait(timeout)

    def join(self, threads=None, stop_grace_period_secs=120):
        """Wait for ``threads`` after a stop request, then re-raise the first reported exception.

        Raises:
            RuntimeError: threads still running ``stop_grace_period_secs`` after the request.
        """
        threads = list(threads or ())
        self._stop.wait()
        for thread in threads:
            thread.join(stop_grace_period_secs)
        stragglers = [t.name for t in threads if t.is_alive()]
        if stragglers:
            raise RuntimeError(f"Coordinator stopped with threads still running: {' '.join(stragglers)}")
        if self._exception is not None:
            raise self._exception


class QueueRunner:
    """Holds ops to run in a loop (TF: the enqueue ops of a queue) and starts their threads.

    Args:
        queue: the queue (kept for reference; closed by TF on errors, not here).
        enqueue_ops: the ops each thread runs repeatedly.
        poll_timeout_s: the deadline of each run, so a stop request is noticed (dfcore).
    """

    def __init__(self, queue=None, enqueue_ops=None, poll_timeout_s=None):
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops or ())
        self._poll_timeout_s = poll_timeout_s
        self.exceptions_raised = []

    @property
    def queue(self):
        return self._queue

    @property
    def enqueue_ops(self):
        return list(self._enqueue_ops)

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        """One thread per enqueue op, running it until stopped; started if ``start``."""
        coord = coord or Coordinator()
        threads = [threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon,
                                    name=f"QueueRunnerThread-{op.name}") for op in self._enqueue_ops]
        if start:
            for thread in threads:
                thread.start()
        return threads

    def _run(self, sess, op, coord):
        options = RunOptions(timeout_in_ms=int(self._poll_timeout_s * 1000)) if self._poll_timeout_s else None
        while not coord.should_stop():
            try:
                sess.run(op, options=options)
            except errors.DeadlineExceededError as error:
                if options is None:
                    self._report(coord, error)
                    return
            except (errors.OutOfRangeError, errors.CancelledError):
                return
            except Exception as error:  # reported to the coordinator, which stops every thread
                self._report(coord, error)
                return

    def _report(self, coord, error):
        if not coord.should_stop():
            self.exceptions_raised.append(error)
            coord.request_stop(error)


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from ..compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.train.queue_runner", name)
