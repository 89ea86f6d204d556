"""The state behind the data-flow ops: how blocking ops wait, a conditional accumulator, a mutex.

Source: TF's ``core/kernels/queue_base.cc``, ``conditional_accumulator_base.cc`` and
``mutex_ops.cc``; the queues are in :mod:`dfcore.ops.fifo_queue` and its subclasses' modules.
One object per resource, owned by a session (or, on a cluster, by the task its op is placed on).

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
from ..framework.rendezvous_key import create_key

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
    """Fail ``waiter`` if the step of ``ctx`` is aborted (first error, deadline, interrupt) before it settles,
    and at once if its resource was retired meanwhile (its session closed while the op ran)."""
    retired = getattr(waiter._owner, "retired", None)
    if retired is not None:
        waiter.cancel(retired)
        return
    if ctx.rendezvous is None or ctx.device is None:
        return
    key = create_key(ctx.device, 1, ctx.device, f"_blocking_op_{next(_WAITER_IDS)}")
    ctx.rendezvous.recv_async(key, lambda error, value: error is not None and waiter.cancel(error))


class _Resource:
    def __init__(self, name):
        self.name = name
        self._lock = threading.Lock()
        self._waiters = collections.deque()
        self.retired = None  # the error of every wait, once the owning session closed

    def retire(self, error):
        """Fail every waiter with ``error``, and every later one (its session closed; a cluster's resources,
        which outlive sessions, only get :meth:`cancel_all`)."""
        with self._lock:
            self.retired = error
        self.cancel_all(error)

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
