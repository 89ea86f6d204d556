"""The queue resource behind ``FIFOQueueV2`` and the shared queue ops (enqueue, dequeue, size, close).

Source: TF's ``core/kernels/fifo_queue.cc`` and ``queue_base.cc``. How blocking requests wait
(never holding a thread) is :mod:`dfcore.ops.data_flow_resources`; ``RandomShuffleQueue`` and
``PaddingFIFOQueue`` subclass this queue in their own modules.
"""

import collections
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import errors
from ..framework import input_events
from .data_flow_resources import Waiter, _complete, _Resource, watch_abort


def shape_string(shape: Sequence[int | None]) -> str:
    """A (partial) shape in TF's ``DebugString`` form: ``[?,3]``."""
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


class FIFOQueueResource(_Resource):
    """A bounded FIFO of tuples of arrays (TF ``FIFOQueue``); ``shapes`` per component
    (a tuple, or None when not given), ``dtypes`` numpy dtypes.

    Enqueues are *transactional* (dfcore): an enqueue reserves room when its op runs
    (blocking while the queue is full) and the elements become visible when the
    enqueuing step commits; an aborted step releases the room. An ``enqueue_many`` of
    more elements than the capacity cannot be: its elements stream in as room frees
    (:meth:`stream`), visible at once as in TF. Dequeues take elements
    at once. ``capacity < 0`` means unbounded. Subclasses change which element a
    dequeue takes (:meth:`_pop`) and how many may be taken (:meth:`_available`).
    """

    kind = "FIFOQueue"  # TF's class name, in its error messages

    def __init__(self, name: str, capacity: int, shapes: Sequence[Any], dtypes: Sequence[np.dtype]):
        super().__init__(name)
        self.capacity = capacity
        self.shapes = shapes
        self.dtypes = dtypes
        self._items: Any = collections.deque()  # a list in RandomShuffleQueueResource
        self._reserved = 0
        # waiters of stream(): request ("stream", elements left)
        self._streams: collections.deque[Any] = collections.deque()
        self.closed = False

    def size(self) -> int:
        with self._lock:
            return len(self._items)

    def check_component(self, index: int, value: Any) -> None:
        """Raise TF's InvalidArgumentError unless ``value`` has component ``index``'s shape (if one was given)."""
        expected = self.shapes[index]
        if expected is not None and tuple(value.shape) != expected:
            raise errors.InvalidArgumentError(
                None, None, f"Shape mismatch in tuple component {index}. Expected {shape_string(expected)}, got "
                f"{shape_string(value.shape)}")

    def _room(self, n):
        return self.capacity < 0 or len(self._items) + self._reserved + n <= self.capacity

    def reserve(self, ctx: Any, n: int, done: Callable[..., None]) -> None:
        """Reserve room for ``n`` elements; ``done(error, None)`` when reserved.

        Raises (through ``done``): CancelledError if the queue is closed (TF's wording).
        """
        with self._lock:
            if self.closed:
                error = errors.CancelledError(None, None, f"{self.kind} '{self.name}' is closed.")
            elif self._room(n) and not self._has_waiting("enqueue"):
                self._reserved += n
                error = False
            else:
                waiter = self._wait(done, ("enqueue", n))
                error = None
        if error is None:
            watch_abort(ctx, waiter)
        elif error is False:
            done(None, None)
        else:
            done(error, None)

    def stream(self, ctx: Any, elements: Sequence[tuple[Any, ...]], done: Callable[..., None]) -> None:
        """Put ``elements`` in as room frees (visible at once); ``done(error, None)`` once all are in.

        Raises (through ``done``): CancelledError if the queue is (or gets) closed with
        ``cancel_pending_enqueues`` (TF's wording); the elements already in stay.
        """
        with self._lock:
            if self.closed:
                error = errors.CancelledError(None, None, f"{self.kind} '{self.name}' is closed.")
            else:
                waiter = Waiter(done, ("stream", collections.deque(elements)), self)
                self._streams.append(waiter)
                ready, error = self._serve(), None
        if error is not None:
            done(error, None)
            return
        watch_abort(ctx, waiter)
        _complete(ready)

    def _withdraw(self, waiter):
        with self._lock:
            if waiter in self._streams:
                self._streams.remove(waiter)
        super()._withdraw(waiter)

    def cancel_all(self, error: errors.OpError) -> None:
        with self._lock:
            streams, self._streams = list(self._streams), collections.deque()
        for waiter in streams:
            waiter.settle(error)
        super().cancel_all(error)

    def publish(self, elements: Sequence[tuple[Any, ...]]) -> None:
        """Make reserved ``elements`` (tuples of arrays) visible, serving waiting dequeues."""
        with self._lock:
            self._reserved -= len(elements)
            self._items.extend(elements)
            ready = self._serve()
        _complete(ready)

    def release(self, n: int) -> None:
        """Give back room reserved by a step that failed."""
        with self._lock:
            self._reserved -= n
            ready = self._serve()
        _complete(ready)

    def dequeue(self, ctx: Any, n: int, many: bool, done: Callable[..., None], up_to: bool = False) -> None:
        """Take ``n`` elements: ``done(None, tuple of components)``; one element's components when
        not ``many``, else each component stacked along a new axis 0. ``up_to``: once the queue is
        closed, take what is left if fewer than ``n`` (TF's ``DequeueUpTo``).

        Raises (through ``done``): OutOfRangeError when closed with too few elements (TF's wording).
        """
        request = ("dequeue", n, many, up_to)
        waiter = None
        with self._lock:
            count = None if self._has_waiting("dequeue") else self._count(request)
            if count is not None:
                outcome = (None, self._take(count, many))
                ready = self._serve()  # room was freed: waiting enqueues may proceed
            elif self.closed:
                outcome, ready = (self._out_of_range(n), None), []
            else:
                waiter = self._wait(done, request)
        if waiter is not None:
            watch_abort(ctx, waiter)
            return
        done(*outcome)
        _complete(ready)

    def _available(self):
        """How many elements a dequeue may take now."""
        return len(self._items)

    def _count(self, request):
        """How many elements the dequeue ``request`` takes now, or None while it must wait."""
        n, up_to = request[1], request[3]
        if self._available() >= n:
            return n
        if up_to and self.closed and self._items:
            return len(self._items)
        return None

    def unget(self, value: Any, many: bool) -> None:
        """Put back what a dequeue took but could not deliver (its step was aborted)."""
        items = list(zip(*value)) if many else [value]
        with self._lock:
            self._put_back(items)
            ready = self._serve()
        _complete(ready)

    def _put_back(self, items):
        self._items.extendleft(reversed(items))

    def _has_waiting(self, kind):
        return any(w.request[0] == kind for w in self._waiters)

    def close(self, cancel_pending_enqueues: bool) -> None:
        """Close: later enqueues fail; dequeues are served from what is left, those that cannot be
        fail with OutOfRangeError; with ``cancel_pending_enqueues``, blocked enqueues fail too."""
        with self._lock:
            self.closed = True
            ready = self._serve()
            failed = []
            for waiter in list(self._waiters):
                kind = waiter.request[0]
                if kind == "dequeue" or cancel_pending_enqueues:
                    self._waiters.remove(waiter)
                    failed.append((waiter, self._out_of_range(waiter.request[1]) if kind == "dequeue" else
                                   errors.CancelledError(None, None, "Enqueue operation was cancelled")))
            if cancel_pending_enqueues:
                failed += [(w, errors.CancelledError(None, None, "Enqueue operation was cancelled"))
                           for w in self._streams]
                self._streams.clear()
        _complete(ready)
        for waiter, error in failed:
            waiter.settle(error)

    def _out_of_range(self, n):
        return errors.OutOfRangeError(
            None, None, f"{self.kind} '{self.name}' is closed and has insufficient elements "
            f"(requested {n}, current size {len(self._items)})")

    def _pop(self):
        return self._items.popleft()

    def _take(self, n, many):
        taken = [self._pop() for _ in range(n)]
        if not many:
            return taken[0]
        if not taken:
            return tuple(np.empty((0,) + shape, dtype) for shape, dtype in zip(self.shapes, self.dtypes))
        return tuple(np.stack([item[c] for item in taken]) for c in range(len(self.dtypes)))

    def _serve(self):
        """Complete the waiters that can proceed now (lock held); returns (waiter, error, value)."""
        ready: list[Any] = []
        while self._feed_streams(ready) | self._serve_waiters(ready):
            pass
        input_events.buffer_level(self.name, len(self._items))  # for a recording of the input pipeline
        return ready

    def _feed_streams(self, ready):
        """Move streamed elements in while there is room; True if any moved."""
        moved = False
        while self._streams and self._room(1):
            waiter = self._streams[0]
            left = waiter.request[1]
            while left and self._room(1):
                self._items.append(left.popleft())
                moved = True
            if not left:
                self._streams.popleft()
                ready.append((waiter, None, None))
        return moved

    def _serve_waiters(self, ready):
        """Complete the waiters at the head that can proceed now; True if any did."""
        served = len(ready)
        while self._waiters:
            waiter = self._waiters[0]
            kind, n = waiter.request[0], waiter.request[1]
            if kind == "dequeue":
                count = self._count(waiter.request)
                if count is None:
                    break
                self._waiters.popleft()
                ready.append((waiter, None, self._take(count, waiter.request[2])))
            elif kind == "enqueue" and self._room(n):
                self._waiters.popleft()
                self._reserved += n
                ready.append((waiter, None, None))
            else:
                break
        return len(ready) > served
