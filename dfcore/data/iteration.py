"""One pass of an iterator over a dataset: captured values, seeds, threads, private sessions.

An :class:`IterationContext` is made each time an iterator is initialized (TF's
``MakeIterator``) and closed when it is re-initialized or its session closes: closing
stops every thread the pass started (prefetch producers, map pools, the fetching thread) and
joins them for a bounded time (:mod:`dfcore.data.workers`: a thread stuck in user code is abandoned), and
closes the private sessions that run traced functions. Nested datasets (``interleave``)
iterate in a child context that shares this state but adds its own captured values.

An element whose computation failed flows down the pipeline as an :class:`ElementError` in its
place (TF returns a per-element ``Status``): ``get_next`` raises it, and the next ``get_next`` goes
on with the following element. Loops that could pull without end for one request (a shuffle
buffer's fill, a prefetch producer) wait for :meth:`IterationContext.await_demand`: once the step
that asked for an element is aborted (deadline, error) and no other request waits, they pause, so
no buffer grows after its consumer is gone.
Source: dfcore; TF keeps the same state in ``IteratorContext`` (``core/framework/dataset.h``).
"""

import collections
import collections.abc
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import errors
from . import workers


class ElementError:
    """An element that failed (a map function's op error): passed on in the element's place, raised by
    ``get_next``; ``error`` is the OpError."""

    __slots__ = ("error",)

    def __init__(self, error: errors.OpError):
        self.error = error


class _Shared:
    def __init__(self):
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.demand = threading.Condition(self.lock)
        self.wanted = True
        self.threads: list[threading.Thread] = []
        self.closers: list[Callable[[], None]] = []
        self.sessions: dict = {}
        self.seeds: dict = {}
        self.counters: dict = {}
        self.caches: dict = {}


class IterationContext:
    """State of one initialized iterator; ``values`` maps captured Tensors to their values."""

    def __init__(self, values: collections.abc.MutableMapping, shared: _Shared | None = None):
        self._values = values
        self._shared = shared or _Shared()

    def child(self, values: dict) -> "IterationContext":
        """A context seeing ``values`` too (for a dataset built per element), sharing threads and sessions."""
        return IterationContext(collections.ChainMap(values, self._values), self._shared)

    def value(self, component: Any) -> np.ndarray:
        """A captured Tensor's value in this pass, or the (numpy) component itself."""
        try:
            return self._values[component]
        except (KeyError, TypeError):
            return component

    def scalar(self, component: Any) -> int:
        """A scalar argument (a Python int or a captured Tensor) as an int."""
        return int(self.value(component))

    @property
    def stopped(self) -> bool:
        return self._shared.stop.is_set()

    def check_stopped(self) -> None:
        """Raises CancelledError once the context is closed (an iterator re-initialized, a session closed)."""
        if self.stopped:
            raise errors.CancelledError(None, None, "Iterator was cancelled (re-initialized or session closed).")

    def add_closer(self, closer: Callable[[], None]) -> None:
        """Run ``closer()`` when the context closes (after the stop flag is set); it must not block."""
        with self._shared.lock:
            self._shared.closers.append(closer)

    def add_threads(self, threads: list[threading.Thread], wake: Callable[[], None]) -> None:
        """Threads of this pass: at close, ``wake()`` (non-blocking) asks them to end, and they are joined for
        :data:`~dfcore.data.workers.CLOSE_TIMEOUT_S` at most, then abandoned (daemons) with a warning."""
        with self._shared.lock:
            self._shared.closers.append(wake)
            self._shared.threads.extend(threads)

    def set_wanted(self, wanted: bool) -> None:
        """Whether a consumer waits for this pass's next element (the iterator sets it per request)."""
        with self._shared.lock:
            self._shared.wanted = wanted
            if wanted:
                self._shared.demand.notify_all()

    def await_demand(self) -> None:
        """Return while a consumer wants elements; else wait until one does. Raises CancelledError once the
        context is closed."""
        shared = self._shared
        if not shared.wanted or shared.stop.is_set():
            with shared.lock:
                while not shared.wanted and not shared.stop.is_set():
                    shared.demand.wait()
            self.check_stopped()

    def seed(self, key: Any, seeds: tuple) -> int:
        """A seed for ``key`` stable over this pass: from ``seeds`` (graph seed, op seed) or fresh entropy."""
        with self._shared.lock:
            if key not in self._shared.seeds:
                entropy = None if seeds == (None, None) else list(seeds)
                self._shared.seeds[key] = int(np.random.SeedSequence(entropy).generate_state(1)[0])
            return self._shared.seeds[key]

    def count(self, key: Any) -> int:
        """0, 1, 2, ... on successive calls with ``key`` in this pass (a shuffle's epochs)."""
        with self._shared.lock:
            value = self._shared.counters.get(key, 0)
            self._shared.counters[key] = value + 1
            return value

    @property
    def caches(self) -> dict:
        """Complete passes over cached datasets, by dataset (``cache()``)."""
        return self._shared.caches

    def session(self, traced: Any, factory: Callable[[], Any]) -> Any:
        """The private session of one traced function in this pass (made on first use)."""
        with self._shared.lock:
            session = self._shared.sessions.get(traced)
            if session is None:
                session = self._shared.sessions[traced] = factory()
            return session

    def close(self) -> None:
        """Stop this pass's threads (joined for :data:`~dfcore.data.workers.CLOSE_TIMEOUT_S` in all, the rest
        abandoned with one warning), close its private sessions."""
        shared = self._shared
        with shared.lock:
            shared.stop.set()
            shared.demand.notify_all()
            closers, shared.closers = shared.closers, []
            threads, shared.threads = shared.threads, []
            sessions, shared.sessions = list(shared.sessions.values()), {}
        for closer in closers:
            closer()
        workers.join_all(threads)
        for session in sessions:
            session.close()
