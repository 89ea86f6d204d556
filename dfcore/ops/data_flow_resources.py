"""The state behind the data-flow ops: a FIFO queue, a conditional accumulator, a mutex.

Source: TF's ``core/kernels/fifo_queue.cc``, ``queue_base.cc``,
``conditional_accumulator_base.cc`` and ``mutex_ops.cc``. One object per resource,
owned by a session (or, on a cluster, by the task its op is placed on).

Blocking never holds a thread: a blocking op registers a *waiter* (a ``done(error,
value)`` callback) and returns; the waiter is completed by the op that makes progress
possible (an enqueue, a gradient, a release), by ``close``, by :meth:`cancel_all`
(a task going down, a session closing) or by the step's abort — a failing op, the
step's deadline (``RunOptions.timeout_in_ms``) or a Ctrl-C in ``Session.run`` aborts the
step's rendezvous, which withdraws the waiter and fails it with that error
(:func:`watch_abort`). Callbacks run outside the resource's lock.
"""

import collections
import itertools
import threading

import numpy as np

from .. import errors
from ..framework import input_events
from ..runtime.rendezvous import create_key

_WAITER_IDS = itertools.count(1)


class Waiter:
    """A pending blocking request: settled exactly once, by progress or by cancellation."""

    __slots__ = ("done", "request", "_lock", "_settled", "_owner")

    def __init__(self, done, request, owner):
        self.done = done
        self.request = request
        self._lock = threading.Lock()
        self._settled = False
        self._owner = owner

    def settle(self, error, value=None):
        """Complete the request; False if it was already settled."""
        with self._lock:
            if self._settled:
                return False
            self._settled = True
        self.done(error, value)
        return True

    def cancel(self, error):
        """Withdraw the request from its resource and fail it with ``error``."""
        self._owner._withdraw(self)
        self.settle(error)


def watch_abort(ctx, waiter):
    """Fail ``waiter`` if the step of ``ctx`` is aborted (first error, deadline, interrupt) before it settles."""
    if ctx.rendezvous is None or ctx.device is None:
        return
    key = create_key(ctx.device, 1, ctx.device, f"_blocking_op_{next(_WAITER_IDS)}")
    ctx.rendezvous.recv_async(key, lambda error, value: error is not None and waiter.cancel(error))


class _Resource:
    def __init__(self, name):
        self.name = name
        self._lock = threading.Lock()
        self._waiters = collections.deque()

    def _withdraw(self, waiter):
        with self._lock:
            try:
                self._waiters.remove(waiter)
            except ValueError:
                pass

    def cancel_all(self, error):
        """Fail every waiter with ``error`` (a task going down, a session closing)."""
        with self._lock:
            waiters, self._waiters = list(self._waiters), collections.deque()
        for waiter in waiters:
            waiter.settle(error)

    def _wait(self, done, request):
        """Queue a waiter (lock held by the caller); the caller arms :func:`watch_abort` after unlocking."""
        waiter = Waiter(done, request, self)
        self._waiters.append(waiter)
        return waiter


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

    def __init__(self, name, capacity, shapes, dtypes):
        super().__init__(name)
        self.capacity = capacity
        self.shapes = shapes
        self.dtypes = dtypes
        self._items = collections.deque()
        self._reserved = 0
        self._streams = collections.deque()  # waiters of stream(): request ("stream", elements left)
        self.closed = False

    def size(self):
        with self._lock:
            return len(self._items)

    def _room(self, n):
        return self.capacity < 0 or len(self._items) + self._reserved + n <= self.capacity

    def reserve(self, ctx, n, done):
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

    def stream(self, ctx, elements, done):
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

    def cancel_all(self, error):
        with self._lock:
            streams, self._streams = list(self._streams), collections.deque()
        for waiter in streams:
            waiter.settle(error)
        super().cancel_all(error)

    def publish(self, elements):
        """Make reserved ``elements`` (tuples of arrays) visible, serving waiting dequeues."""
        with self._lock:
            self._reserved -= len(elements)
            self._items.extend(elements)
            ready = self._serve()
        _complete(ready)

    def release(self, n):
        """Give back room reserved by a step that failed."""
        with self._lock:
            self._reserved -= n
            ready = self._serve()
        _complete(ready)

    def dequeue(self, ctx, n, many, done, up_to=False):
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

    def unget(self, value, many):
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

    def close(self, cancel_pending_enqueues):
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
        ready = []
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


class AccumulatorResource(_Resource):
    """TF's ``ConditionalAccumulator``: sums gradients, drops stale ones, hands out their average.

    ``apply(grad, local_step)`` drops the gradient (counted in ``num_dropped``) when
    ``local_step < global_step``; ``take(n)`` waits for ``n`` gradients, returns their
    mean (``reduction_type="MEAN"``) or sum, resets, and increments ``global_step``.
    Gradients are summed in arrival order into the accumulator's own buffer.
    """

    def __init__(self, name, dtype, shape, reduction_type):
        super().__init__(name)
        self.dtype = dtype
        self.shape = shape
        self.reduction_type = reduction_type
        self.global_step = 0
        self.num_dropped = 0
        self._sum = None
        self._count = 0

    def num_accumulated(self):
        with self._lock:
            return self._count

    def set_global_step(self, step):
        with self._lock:
            self.global_step = int(step)

    def apply(self, grad, local_step):
        """Add ``grad`` unless stale.

        Raises:
            InvalidArgumentError: ``grad``'s shape does not match the accumulator's (TF's wording).
        """
        grad = np.asarray(grad, dtype=self.dtype)
        with self._lock:
            expected = self.shape if self._sum is None else self._sum.shape
            if expected is not None and not _compatible(expected, grad.shape):
                raise errors.InvalidArgumentError(
                    None, None, f"Shape mismatch: expected {_shape_str(expected)}, got {_shape_str(grad.shape)}")
            if int(local_step) < self.global_step:
                self.num_dropped += 1
                return False
            if self._sum is None:
                self._sum = grad.copy()
            else:
                np.add(self._sum, grad, out=self._sum)
            self._count += 1
            ready = self._serve()
        _complete(ready)
        return True

    def take(self, ctx, n, done):
        """``done(None, average)`` once ``n`` gradients are in (``n >= 1``)."""
        with self._lock:
            if not self._waiters and self._count >= n:
                value, waiter = self._take(), None
            else:
                waiter, value = self._wait(done, ("take", n)), None
        if waiter is None:
            done(None, value)
        else:
            watch_abort(ctx, waiter)

    def _take(self):
        total = self._sum  # the accumulator's own buffer: averaged in place and handed out
        if self.reduction_type == "MEAN":
            np.divide(total, self.dtype.type(self._count), out=total)
        self._sum, self._count = None, 0
        self.global_step += 1
        return total

    def _serve(self):
        if self._waiters and self._count >= self._waiters[0].request[1]:
            waiter = self._waiters.popleft()
            return [(waiter, None, self._take())]
        return []


class MutexResource(_Resource):
    """TF's ``MutexV2``: one holder at a time, waiters served first come, first served."""

    def __init__(self, name):
        super().__init__(name)
        self.held = False

    def acquire(self, ctx, done, make_lock):
        with self._lock:
            if not self.held and not self._waiters:
                self.held = True
                waiter = None
            else:
                waiter = self._wait(done, ("lock", make_lock))
        if waiter is None:
            done(None, make_lock())
        else:
            watch_abort(ctx, waiter)

    def release(self):
        with self._lock:
            if self._waiters:
                waiter = self._waiters.popleft()
                ready = [(waiter, None, waiter.request[1]())]
            else:
                self.held, ready = False, []
        _complete(ready)


class MutexLockHandle:
    """The value a ``MutexLock`` outputs; :meth:`release` (``ConsumeMutexLock`` or the step's end) frees it once."""

    __slots__ = ("mutex", "_released", "_lock")

    def __init__(self, mutex):
        self.mutex = mutex
        self._released = False
        self._lock = threading.Lock()

    def release(self):
        with self._lock:
            if self._released:
                return
            self._released = True
        self.mutex.release()

    def __repr__(self):
        return f"<MutexLock {self.mutex.name}{' released' if self._released else ''}>"


def _complete(ready):
    for waiter, error, value in ready:
        if not waiter.settle(error, value):
            _undo(waiter, value)


def _undo(waiter, value):
    """A waiter cancelled while being served: return what it was given (dequeued items, a lock)."""
    kind = waiter.request[0]
    if kind == "lock":
        value.release()
    elif kind == "enqueue":
        waiter._owner.release(waiter.request[1])
    elif kind == "dequeue":
        waiter._owner.unget(value, waiter.request[2])


def _compatible(expected, actual):
    return len(expected) == len(actual) and all(e is None or e == a for e, a in zip(expected, actual))


def _shape_str(shape):
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"
