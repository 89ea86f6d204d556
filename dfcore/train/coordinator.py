"""``tf.train.Coordinator``: stops a group of threads together and reports their first exception.

Source: ``tensorflow/python/training/coordinator.py``. A thread checks :meth:`should_stop`
in its loop and calls :meth:`request_stop` with the exception that ended it; the main
thread's :meth:`join` waits for the threads (all finished, or a stop requested, then at
most ``stop_grace_period_secs``) and re-raises the first exception reported.
``OutOfRangeError`` (the input ran out) is a clean stop, never re-raised, as in TF.
"""

import contextlib
import logging
import sys
import threading
import time

from .. import errors

_LOG = logging.getLogger("dfcore.train")
_JOIN_POLL_S = 0.05  # how often join looks whether the threads ended before a stop request


class Coordinator:
    """A coordinator of threads (TF's ``tf.train.Coordinator``).

    Args:
        clean_stop_exception_types: exception types that request a stop without being
            reported by :meth:`join` (default: ``(tf.errors.OutOfRangeError,)``).
    """

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads = set()

    def _filter_exception(self, ex):
        """None for a clean-stop exception; otherwise ``ex`` (an exception or an ``exc_info`` tuple)."""
        value = ex[1] if isinstance(ex, tuple) else ex
        return None if isinstance(value, self._clean_stop_exception_types) else ex

    def request_stop(self, ex=None):
        """Ask every thread to stop; ``ex`` (an exception or ``sys.exc_info()``) is kept if it is the first one.

        Raises:
            ``ex`` itself, when the coordinator was already joined (it could not be reported any more).
        """
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined and ex is not None:
                raise ex[1] if isinstance(ex, tuple) else ex
            if not self._stop_event.is_set():
                if ex is not None and self._exc_info_to_raise is None:
                    value = ex[1] if isinstance(ex, tuple) else ex
                    _LOG.info("Error reported to Coordinator: %s, %s", type(value), value)
                    self._exc_info_to_raise = value
                self._stop_event.set()

    def clear_stop(self):
        """Forget a stop request and its exception, so the threads may be started again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self):
        """True once a stop was requested."""
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """A context manager that requests a stop with the exception raised in its body (swallowing it)."""
        try:
            yield
        except BaseException:  # reported, as TF: any exception stops the coordinated threads
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None):
        """True once a stop was requested (waits at most ``timeout`` seconds; None: forever)."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread):
        """Have :meth:`join` wait for ``thread`` too."""
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Wait until ``threads`` and the registered threads end or a stop is requested, then give
        the threads ``stop_grace_period_secs`` to end.

        Raises:
            the first exception passed to :meth:`request_stop` (not a clean-stop one);
            RuntimeError: threads still alive after the grace period, unless ``ignore_live_threads``
                (TF's wording: ``Coordinator stopped with threads still running: <names>``).
        """
        with self._lock:
            threads = list(self._registered_threads.union(threads or ()))
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(_JOIN_POLL_S):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise is not None:
                raise self._exc_info_to_raise
            if stragglers:
                if not ignore_live_threads:
                    raise RuntimeError(f"Coordinator stopped with threads still running: {' '.join(stragglers)}")
                _LOG.info("Coordinator stopped with threads still running: %s", " ".join(stragglers))

    @property
    def joined(self):
        return self._joined

    def raise_requested_exception(self):
        """Re-raise the exception reported with a stop request, if any."""
        with self._lock:
            if self._exc_info_to_raise is not None:
                raise self._exc_info_to_raise
