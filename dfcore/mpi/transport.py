"""The message layer between the ranks of a dfcore MPI job: one receive thread per process.

Source: TF's worker service (``core/distributed_runtime/rpc/grpc_worker_service.cc``: one
server loop dispatching ``GetStatus``/``RegisterGraph``/``RunGraph``/``RecvTensor``
requests) — here over MPI point-to-point on dfcore's private communicator
(:func:`dfcore.mpi.world.world`), with pickled messages on one tag, so messages between
two ranks arrive in the order they were sent (MPI's non-overtaking rule).

* :meth:`Transport.post` sends a one-way message ``(kind, *payload)``; the receiving
  process runs the handler registered for ``kind`` on its receive thread (handlers must
  not block: long work goes to a thread pool).
* :meth:`Transport.request` sends a request and returns a ``concurrent.futures.Future``
  settled by the peer's reply; every wait on it should have a deadline.
* At process exit every other rank is told ``goodbye`` (so a ps ``Server.join()`` can
  return once the workers are done) and the thread stops.

Errors cross the wire as ``(class name, message)`` and are rebuilt as the same
``dfcore.errors`` class on the other side. This is MPI's side of the seam :mod:`dfcore.transport.seam`.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import itertools
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..framework.device import DeviceSpec
from ..transport import seam as seam_lib
from ..transport.seam import error_from_wire, error_to_wire
from . import world as world_lib

if TYPE_CHECKING:
    from .world import Layout

TAG = 7107  # dfcore's tag on its private communicator
#: Arrays smaller than this travel as raw bytes (no ndarray pickling, which costs more than the message).
RAW_BYTES_LIMIT = 64 * 1024


#: Polling: the receive thread probes for messages, sleeping between empty probes from
#: :data:`MIN_POLL_SLEEP_S` up to :data:`MAX_POLL_SLEEP_S`.
MIN_POLL_SLEEP_S = 2e-6
MAX_POLL_SLEEP_S = 0.001
#: Seconds a closing transport waits for its last messages to leave.
CLOSE_TIMEOUT_S = 5.0
#: Empty probes a waiting thread makes without sleeping (see :meth:`Transport.progress_until`).
SPIN_PROBES = 50


def _backoff_s(idle_probes):
    """Sleep after ``idle_probes`` empty probes in a row: the minimum for the first 200, then growing to
    :data:`MAX_POLL_SLEEP_S`. The count stays 0 while a request is pending or a step is live here (a
    message is expected soon). Why not a blocking receive: Open MPI busy-polls inside it, taking a core
    from the computing threads; why a real sleep rather than ``sleep(0)``: a thread that only yields
    keeps retaking the GIL, and a waiting thread can then wait a whole switch interval (5 ms)."""
    if idle_probes < 200:
        return MIN_POLL_SLEEP_S
    return min(MAX_POLL_SLEEP_S, MIN_POLL_SLEEP_S * (idle_probes - 199))


def _fine_timer_slack():
    """Let this thread's short sleeps be short: Linux rounds sleeps up by the thread's timer slack
    (50 µs by default); 1 µs keeps a 2 µs sleep near 2 µs. Best effort: elsewhere nothing changes."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(29, 1000, 0, 0, 0)  # PR_SET_TIMERSLACK, in ns
    except (OSError, AttributeError):
        pass


class Transport:
    """The process's endpoint: post/request to other ranks, dispatch what arrives to handlers."""

    def __init__(self, comm: Any, layout: Layout):
        self.comm = comm
        self.layout = layout
        self.rank = comm.Get_rank()
        self._handlers = {"_reply": self._on_reply, "_stop": None}
        self._request_handlers: dict[str, Callable[..., None]] = {}
        self._waiting: dict[int, tuple[int, concurrent.futures.Future]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._goodbyes: set[int] = set()
        self._busy_probes: list[Callable[[], bool]] = []
        self._progress = threading.Lock()
        self._pollers = 0
        self._sends: list[Any] = []
        self._sends_lock = threading.Lock()
        self._device_ranks: dict[str, int] = {}
        self._thread_state = threading.local()
        self._stop_seen = False
        self._status: Any = None  # an MPI.Status once started
        self._goodbye_event = threading.Condition(self._lock)
        self._thread = threading.Thread(target=self._serve, name=f"dfcore-mpi-rank{self.rank}", daemon=True)
        self._stopped = False
        self.on_message("_request", self._on_request)
        self.on_message("goodbye", self._on_goodbye)

    def start(self) -> None:
        """Start receiving (once every handler is registered, so no early message finds none)."""
        from mpi4py import MPI

        self._status = MPI.Status()
        if not self._thread.is_alive():
            self._thread.start()

    # -- handlers --------------------------------------------------------------
    def on_message(self, kind: str, handler: Callable[..., None]) -> None:
        """Run ``handler(source_rank, *payload)`` for every ``kind`` message (on the receive thread)."""
        self._handlers[kind] = handler

    def on_request(self, kind: str, handler: Callable[..., None]) -> None:
        """Serve ``kind`` requests with ``handler(source_rank, reply, *payload)``; it (or a thread it hands
        the work to) calls ``reply(value)`` or ``reply(error=exception)`` exactly once."""
        self._request_handlers[kind] = handler

    # -- sending ---------------------------------------------------------------
    def post(self, dst: int, kind: str, *payload: Any) -> None:
        """Send ``(kind, *payload)`` to rank ``dst`` (pickled); never waits for the receiver.

        A blocking ``send`` of a message above MPI's eager limit (4 KiB for Open MPI's shared
        memory) would wait until the receiver matches it; here the send is posted (``isend``) and
        kept until it completes (:meth:`_reap_sends`, on every poll). Messages to one rank still
        arrive in the order they were posted (MPI's non-overtaking rule).
        """
        request = self.comm.isend((kind, payload), dest=dst, tag=TAG)
        with self._sends_lock:
            self._sends.append(request)

    def _reap_sends(self):
        """Drop the posted sends that have completed (testing them also moves them along)."""
        with self._sends_lock:
            self._sends = [request for request in self._sends if not request.test()[0]]
            return bool(self._sends)

    def request(self, dst: int, kind: str, *payload: Any) -> concurrent.futures.Future:
        """Send a ``kind`` request to rank ``dst``; a Future of the reply's value (or its error)."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        request_id = next(self._ids)
        with self._lock:
            if dst in self._goodbyes:
                future.set_exception(self._gone_error(dst))
                return future
            self._waiting[request_id] = (dst, future)
        self.post(dst, "_request", request_id, kind, payload)
        return future

    def wait(self, future: concurrent.futures.Future, timeout_s: float, what: str) -> Any:
        """As :func:`dfcore.transport.seam.wait`, receiving on this thread meanwhile (:meth:`progress_until`):
        the reply is taken as soon as it arrives, not when the receive thread next wakes from its sleep."""
        if threading.current_thread() is self._thread:  # a handler: the receive thread is this one
            return seam_lib.wait(future, timeout_s, what)
        if not self.progress_until(future.done, timeout_s):
            raise seam_lib.no_reply_error(what, timeout_s)
        return future.result()

    @staticmethod
    def wire_tensor(value: Any) -> tuple[Any, float]:
        """A snapshot of a tensor waiting for its pull, with its send time: small numeric arrays as
        ``("raw", dtype, shape, bytes)`` (cheaper to pickle than an ndarray), other arrays copied."""
        if isinstance(value, np.ndarray) and value.dtype.kind in "biufc" and value.nbytes < RAW_BYTES_LIMIT:
            return ("raw", value.dtype.str, value.shape, value.tobytes()), time.perf_counter()
        return (value.copy() if isinstance(value, np.ndarray) else value), time.perf_counter()

    @staticmethod
    def unwire_tensor(wire: tuple[Any, float]) -> tuple[Any, float]:
        """``(value, send time)`` of what :meth:`wire_tensor` made: a fresh, writable array (as a fetched value
        must be)."""
        value, sent_s = wire
        if isinstance(value, tuple) and len(value) == 4 and value[0] == "raw":
            _, dtype, shape, data = value
            return np.frombuffer(bytearray(data), dtype=dtype).reshape(shape), sent_s
        return value, sent_s

    # -- receiving -------------------------------------------------------------
    def _serve(self):
        _fine_timer_slack()
        idle = 0
        while not self._stop_seen:
            if self._pollers:  # a waiting thread is receiving (progress_until): stay out of its way
                time.sleep(MAX_POLL_SLEEP_S)
                continue
            with self._progress:
                got = self._poll_once()
            idle = 0 if got or self._busy() else idle + 1
            if not got:
                time.sleep(_backoff_s(idle))

    def progress_until(self, done: Callable[[], bool], timeout_s: float | None = None) -> bool:
        """Receive and dispatch messages on the calling thread until ``done()`` is true; False on timeout.

        A thread that would only wait for a message polls MPI itself: it spins for
        :data:`SPIN_PROBES` empty probes (a reply is usually that close), then sleeps between
        probes as the receive thread does. Only one thread polls at a time.
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        if not getattr(self._thread_state, "fine_slack", False):
            _fine_timer_slack()
            self._thread_state.fine_slack = True
        idle = 0
        with self._lock:
            self._pollers += 1
        try:
            while not done():
                if deadline is not None and time.monotonic() > deadline:
                    return False
                got = False
                if self._progress.acquire(blocking=False):
                    try:
                        got = self._poll_once()
                    finally:
                        self._progress.release()
                if got:
                    idle = 0
                else:
                    idle += 1
                    if idle > SPIN_PROBES:
                        time.sleep(_backoff_s(idle - SPIN_PROBES))
            return True
        finally:
            with self._lock:
                self._pollers -= 1

    def wait_settled(self, settled: threading.Event, timeout_s: float | None) -> bool:
        """Wait for ``settled`` (an Event set by a handler) while receiving messages; False on timeout."""
        return self.progress_until(settled.is_set, timeout_s)

    def _poll_once(self):
        """Dispatch one waiting message, if any (caller holds the progress lock); True if one was handled."""
        from mpi4py import MPI

        status = self._status
        if self._sends:
            self._reap_sends()
        if not self.comm.Iprobe(MPI.ANY_SOURCE, TAG, status):
            return False
        source = status.Get_source()
        kind, payload = self.comm.recv(source=source, tag=TAG)
        if kind == "_stop":
            self._stop_seen = True
            return True
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(source, *payload)
        return True

    def busy_while(self, probe: Callable[[], bool]) -> None:
        """Poll without sleeping while ``probe()`` is true (e.g. while a step is running here)."""
        self._busy_probes.append(probe)

    def _busy(self):
        return bool(self._waiting) or bool(self._sends) or any(probe() for probe in self._busy_probes)

    def _on_request(self, source, request_id, kind, payload):
        def reply(value=None, error=None):
            self.post(source, "_reply", request_id, value, error_to_wire(error) if error is not None else None)

        handler = self._request_handlers.get(kind)
        if handler is None:
            reply(error=errors.UnimplementedError(None, None, f"rank {self.rank} serves no {kind!r} requests"))
            return
        try:
            handler(source, reply, *payload)
        except Exception as error:  # a handler's own failure goes back to the caller
            reply(error=error)

    def _on_reply(self, source, request_id, value, error):
        with self._lock:
            _, future = self._waiting.pop(request_id, (None, None))
        if future is None:
            return
        if error is not None:
            future.set_exception(error_from_wire(error))
        else:
            future.set_result(value)

    def _on_goodbye(self, source):
        with self._lock:
            self._goodbyes.add(source)
            unanswered = [self._waiting.pop(i)[1] for i, (dst, _) in list(self._waiting.items()) if dst == source]
            self._goodbye_event.notify_all()
        gone = self._gone_error(source)
        for future in unanswered:
            future.set_exception(gone)

    def _gone_error(self, rank):
        return errors.UnavailableError(None, None, f"Task {self.layout.task_name(rank)} (rank {rank}) has exited")

    def rank_of_device(self, device: str) -> int:
        """The rank of the task owning ``device`` (``/job:ps/replica:0/task:0/device:CPU:0``), cached."""
        found = self._device_ranks.get(device)
        if found is None:
            spec = DeviceSpec.from_string(device)
            found = self._device_ranks[device] = self.layout.rank_of(spec.job, spec.task or 0)
        return found

    def gone(self, rank: int) -> bool:
        """True once ``rank`` has said goodbye (its process is exiting)."""
        with self._lock:
            return rank in self._goodbyes

    def wait_for_goodbyes(self, ranks: Iterable[int], timeout_s: float | None = None) -> bool:
        """Block until every rank in ``ranks`` has said goodbye; False on timeout."""
        ranks = set(ranks)
        with self._lock:
            return self._goodbye_event.wait_for(lambda: ranks <= self._goodbyes, timeout_s)

    # -- shutdown --------------------------------------------------------------
    def close(self) -> None:
        """Say goodbye to every other rank and stop the receive thread (idempotent; runs at exit)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        for dst in range(self.layout.size):
            if dst != self.rank:
                self.post(dst, "goodbye")
        if self._thread.is_alive():
            self.post(self.rank, "_stop")
            self._thread.join(timeout=10)
        deadline = time.monotonic() + CLOSE_TIMEOUT_S
        while self._reap_sends() and time.monotonic() < deadline:  # every message must leave before MPI ends
            time.sleep(MIN_POLL_SLEEP_S)


_TRANSPORT = None
_TRANSPORT_LOCK = threading.Lock()


def get() -> Transport:
    """The process's :class:`Transport`, made on first use (closed at exit); call ``start()`` after
    registering handlers."""
    global _TRANSPORT
    with _TRANSPORT_LOCK:
        if _TRANSPORT is None:
            comm, layout = world_lib.world()
            _TRANSPORT = Transport(comm, layout)
            atexit.register(_TRANSPORT.close)
        return _TRANSPORT


def current() -> Transport | None:
    """The process's :class:`Transport` if one was made (a ``tf.train.Server`` started), else None."""
    return _TRANSPORT
