"""``tf.train.Coordinator``: stops a group of threads together and reports their first exception.

Source: ``tensorflow/python/training/coordinator.py``. A thread checks :meth:`should_stop`
in its loop (or is a :class:`LooperThread`, which does) and calls :meth:`request_stop` with the
exception that ended it; the main
thread's :meth:`join` waits for the threads (all finished, or a stop requested, then at
most ``stop_grace_period_secs``) and re-raises the first exception reported.
``OutOfRangeError`` (the input ran out) is a clean stop, never re-raised, as in TF.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from .. import errors

_LOG = logging.getLogger("dfcore.train")
_JOIN_POLL_S = 0.05  # how often join looks whether the threads ended before a stop request


class Coordinator:
    """A coordinator of threads (TF's ``tf.train.Coordinator``).

    Args:
        clean_stop_exception_types: exception types that request a stop without being
            reported by :meth:`join` (default: ``(tf.errors.OutOfRangeError,)``).
    """

    def __init__(self, clean_stop_exception_types: Sequence[type[BaseException]] | None = None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise: BaseException | None = None
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    def _filter_exception(self, ex):
        """None for a clean-stop exception; otherwise ``ex`` (an exception or an ``exc_info`` tuple)."""
        value = ex[1] if isinstance(ex, tuple) else ex
        return None if isinstance(value, self._clean_stop_exception_types) else ex

    def request_stop(self, ex: BaseException | tuple[Any, Any, Any] | None = None) -> None:
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

    def clear_stop(self) -> None:
        """Forget a stop request and its exception, so the threads may be started again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        """True once a stop was requested."""
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """A context manager that requests a stop with the exception raised in its body (swallowing it)."""
        try:
            yield
        except BaseException:  # reported, as TF: any exception stops the coordinated threads
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """True once a stop was requested (waits at most ``timeout`` seconds; None: forever)."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        """Have :meth:`join` wait for ``thread`` too."""
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads: Iterable[threading.Thread] | None = None, stop_grace_period_secs: float = 120,
             ignore_live_threads: bool = False) -> None:
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
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Re-raise the exception reported with a stop request, if any."""
        with self._lock:
            if self._exc_info_to_raise is not None:
                raise self._exc_info_to_raise

    def loop(self, timer_interval_secs: float, target: Callable[..., Any], args: Sequence[Any] | None = None,
             kwargs: Mapping[str, Any] | None = None) -> LooperThread:
        """Start a :class:`LooperThread` calling ``target(*args, **kwargs)`` every ``timer_interval_secs``."""
        return LooperThread.loop(self, timer_interval_secs, target, args, kwargs)


class LooperThread(threading.Thread):
    """A daemon thread calling :meth:`run_loop` (by default ``target``) every ``timer_interval_secs`` (None:
    back to back) until its coordinator stops; registered with the coordinator, to which it reports the
    exception that ends it (TF's ``tf.train.LooperThread``).

    Raises:
        ValueError: ``coord`` is not a Coordinator, or ``args``/``kwargs`` without ``target`` (TF's wording).
    """

    def __init__(self, coord: Coordinator, timer_interval_secs: float | None, target: Callable[..., Any] | None = None,
                 args: Sequence[Any] | None = None, kwargs: Mapping[str, Any] | None = None):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__(daemon=True)
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._looper_target = target
        self._looper_args, self._looper_kwargs = args or (), kwargs or {}
        if target is None and (args or kwargs):
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        coord.register_thread(self)

    @staticmethod
    def loop(coord: Coordinator, timer_interval_secs: float | None, target: Callable[..., Any],
             args: Sequence[Any] | None = None, kwargs: Mapping[str, Any] | None = None) -> LooperThread:
        """A started LooperThread calling ``target``."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_time = time.monotonic()
                while not self._coord.wait_for_stop(max(0.0, next_time - time.monotonic())):
                    next_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once before the loop (override in subclasses)."""

    def stop_loop(self) -> None:
        """Called once after the loop (override in subclasses)."""

    def run_loop(self) -> None:
        """One iteration: calls ``target`` (override in subclasses)."""
        if self._looper_target is not None:
            self._looper_target(*self._looper_args, **self._looper_kwargs)
