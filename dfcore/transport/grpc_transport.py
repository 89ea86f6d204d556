"""The gRPC side of the transport seam: a task's WorkerService server and its channels to the other tasks.

Source: TF's ``GrpcServer``, ``GrpcWorkerService`` and ``GrpcRemoteWorker``
(``core/distributed_runtime/rpc/grpc_server_lib.cc``, ``grpc_worker_service.cc``,
``grpc_remote_worker.cc``, ``grpc_channel.cc``): each task listens on the address its
``ClusterSpec`` names and serves ``/tensorflow.grpc.WorkerService/<Method>``; it calls the other
tasks over one channel each. Every runtime kind (:mod:`dfcore.transport.seam`) is one unary RPC whose
messages :mod:`dfcore.transport.grpc_wire` defines (TF's protobufs, no pickle).

A caller names its task in the ``dfcore-task`` metadata; a server refuses (``PERMISSION_DENIED``) a
caller that names no task of its ``ClusterSpec`` or calls from a host other than that task's, and a
malformed request (``INVALID_ARGUMENT``), before anything is applied. Handlers run one at a time
(as MPI's receive thread runs them); a request's reply may come later, from another thread.
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import functools
import ipaddress
import secrets
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import grpc

from .. import errors
from ..framework.device import DeviceSpec
from ..train.cluster_spec import ClusterSpec
from . import grpc_wire, seam
from .grpc_wire import CODECS, WORKER_SERVICE
from .layout import ClusterLayout

#: Threads serving RPCs (a ``RunGraph`` holds one until its partition is done).
SERVER_THREADS = 64
#: Threads making this task's calls, started as needed and kept (a call in flight holds one: a ``RecvTensor`` until
#: its tensor is sent); calls beyond this many wait for one to end.
CALL_THREADS = 512
#: Channel settings: no message size limit; a peer that went away is tried again soon (a restarted ps is found
#: within a second), not after gRPC's default back-off of up to two minutes.
CHANNEL_OPTIONS = (("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1),
                   ("grpc.initial_reconnect_backoff_ms", 100), ("grpc.min_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 1000))
TASK_METADATA = "dfcore-task"
#: Seconds a one-way message may take to be delivered before it is dropped.
POST_TIMEOUT_S = 30.0
#: Seconds between checks of a waiting thread's condition (messages wake it sooner).
POLL_S = 0.002
#: Seconds a served request waits between checks that its caller is still there.
_REPLY_POLL_S = 0.5


def grpc_error(error: grpc.RpcError, what: str) -> errors.OpError:
    """The ``dfcore.errors`` exception of a failed call (the status code's class, TF's codes being gRPC's)."""
    code = error.code() if isinstance(error, grpc.Call) else grpc.StatusCode.UNKNOWN
    details = (error.details() if isinstance(error, grpc.Call) else None) or str(error)
    cls = errors.exception_type_from_error_code(code.value[0]) if code != grpc.StatusCode.OK else errors.UnknownError
    return cls(None, None, f"{what}: {details}")


def status_code(error: BaseException) -> grpc.StatusCode:
    """The gRPC status code of an exception (UNKNOWN for non-TF errors)."""
    if isinstance(error, errors.OpError):
        return next(c for c in grpc.StatusCode if c.value[0] == error.error_code)
    return grpc.StatusCode.UNKNOWN


@functools.lru_cache(maxsize=64)
def _host_ips(host: str) -> frozenset[str]:
    try:
        return frozenset(str(info[4][0]) for info in socket.getaddrinfo(host, None))
    except OSError:
        return frozenset()


def _same_host(ip: str, host: str) -> bool:
    """True when a call from ``ip`` may come from ``host`` (one of its addresses; any loopback address for a
    loopback host, as ``localhost`` is 127.0.0.1 and ::1)."""
    ips = _host_ips(host)
    if ip in ips:
        return True
    try:
        return ipaddress.ip_address(ip).is_loopback and any(ipaddress.ip_address(i).is_loopback for i in ips)
    except ValueError:
        return False


def _peer_ip(peer: str) -> str:
    """The IP of a gRPC peer string (``ipv4:127.0.0.1:5000``, ``ipv6:%5B::1%5D:5000``, URL-encoded)."""
    kind, _, rest = urllib.parse.unquote(peer).partition(":")
    if kind == "ipv6":
        return rest[1:rest.index("]")] if rest.startswith("[") else rest.rsplit(":", 1)[0]
    return rest.rsplit(":", 1)[0]


class GrpcTransport:
    """This task's endpoint: a gRPC server on its address, and channels to the other tasks.

    Args:
        spec: the cluster.
        job_name, task_index: this task.
    Raises:
        UnknownError: the address cannot be listened on (taken, or not this host's) — TF's wording.
    """

    def __init__(self, spec: ClusterSpec, job_name: str, task_index: int) -> None:
        self.layout = ClusterLayout(spec)
        self.rank = self.layout.rank_of(job_name, task_index)
        self.incarnation = secrets.randbits(63) | 1
        self._task = self.layout.task_name(self.rank)
        self._metadata = ((TASK_METADATA, self._task),)
        self._handlers: dict[str, Callable[..., None]] = {}
        self._request_handlers: dict[str, Callable[..., None]] = {}
        self._dispatch = threading.Lock()
        self._serving = threading.local()  # .active: this thread is running a handler
        self._callers: dict[tuple[str, str], int] = {}  # (claimed task, peer IP) -> rank, once accepted
        self._progress = threading.Condition()
        self._channels: dict[int, grpc.Channel] = {}
        self._stubs: dict[tuple[int, str], Any] = {}
        self._senders: dict[int, _Sender] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._pool = concurrent.futures.ThreadPoolExecutor(SERVER_THREADS, "dfcore-grpc")
        self._calls = concurrent.futures.ThreadPoolExecutor(CALL_THREADS, "dfcore-grpc-call")
        self._server = grpc.server(self._pool, options=CHANNEL_OPTIONS[:2])
        methods = {codec.method: grpc.unary_unary_rpc_method_handler(
            functools.partial(self._serve, kind), request_deserializer=codec.request_type.FromString,
            response_serializer=grpc_wire.serialize) for kind, codec in CODECS.items()}
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(WORKER_SERVICE, methods),))
        self.address = self.layout.address(self.rank)
        host, _, port = self.address.rpartition(":")
        try:
            bound = self._server.add_insecure_port(f"{host}:{port}")
        except RuntimeError:
            bound = 0
        if not bound:
            raise errors.UnknownError(None, None, f"Could not start gRPC server: cannot listen on {self.address} "
                                      f"for {self._task} (the port is taken, or the host is not this machine)")

    # -- the seam: handlers --------------------------------------------------------------------------------
    def on_message(self, kind: str, handler: Callable[..., None]) -> None:
        self._handlers[kind] = handler

    def on_request(self, kind: str, handler: Callable[..., None]) -> None:
        self._request_handlers[kind] = handler

    def add_service(self, service: str, methods: dict[str, grpc.RpcMethodHandler]) -> None:
        """Serve another service beside the WorkerService (the master service); before :meth:`start`."""
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, methods),))

    def start(self) -> None:
        self._server.start()
        atexit.register(self.close)

    # -- the seam: sending ---------------------------------------------------------------------------------
    def _stub(self, dst: int, kind: str):
        with self._lock:
            stub = self._stubs.get((dst, kind))
            if stub is None:
                channel = self._channels.get(dst)
                if channel is None:
                    channel = self._channels[dst] = grpc.insecure_channel(self.layout.address(dst),
                                                                          options=CHANNEL_OPTIONS)
                codec = CODECS[kind]
                stub = self._stubs[(dst, kind)] = channel.unary_unary(
                    f"/{WORKER_SERVICE}/{codec.method}", request_serializer=codec.request_type.SerializeToString,
                    response_deserializer=codec.response_type.FromString)
            return stub

    def post(self, dst: int, kind: str, *payload: Any) -> None:
        """Send a one-way message with a blocking call (gRPC's blocking calls take half the time of its futures):
        on this thread when nothing else is being sent to ``dst`` and this thread is not serving a call (a
        handler must never wait on another task), else on ``dst``'s sender thread. Either way messages to one
        task arrive in the order they were posted, as over MPI. A lost one (the peer went away) shows as its
        step's failure."""
        request = CODECS[kind].request(self, *payload)
        with self._lock:
            sender = self._senders.get(dst)
            if sender is None:
                sender = self._senders[dst] = _Sender(self, dst)
        sender.send(kind, request, direct=not getattr(self._serving, "active", False))

    def request(self, dst: int, kind: str, *payload: Any) -> concurrent.futures.Future:
        """A Future of ``dst``'s reply: the call is made blocking on one of this task's calling threads (grpcio runs
        a future's completions on a thread it starts anew whenever the channel has no other call in flight, which
        costs more than the call; a blocking call polls on its own thread), settled there, then waiters woken."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            request = CODECS[kind].request(self, *payload)
            self._calls.submit(self._call, future, dst, kind, request)
        except errors.OpError as error:
            future.set_exception(error)
        except RuntimeError:  # closed: no more calls
            future.set_exception(errors.CancelledError(None, None, f"{self._task} has stopped; no "
                                                       f"{CODECS[kind].method} call to {self.layout.task_name(dst)}"))
        return future

    def _call(self, future: concurrent.futures.Future, dst: int, kind: str, request: Any) -> None:
        codec = CODECS[kind]
        try:
            future.set_result(codec.value(self, self._stub(dst, kind)(request, metadata=self._metadata)))
        except grpc.RpcError as error:
            future.set_exception(grpc_error(error, f"{codec.method} on {self.layout.task_name(dst)} "
                                                   f"({self.layout.address(dst)})"))
        except errors.OpError as error:
            future.set_exception(error)
        self._wake()  # after the Future's callbacks ran: what a waiter waits for may have happened in them

    wait = staticmethod(seam.wait)

    def progress_until(self, done: Callable[[], bool], timeout_s: float | None = None) -> bool:
        """Wait until ``done()``: woken by every message and reply this task gets, and checking every 2 ms (it may
        also come true on a thread of this process); False once ``timeout_s`` (None: no limit) passed."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._progress:
            while not done():
                left = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
                if left <= 0:
                    return False
                self._progress.wait(left)
        return True

    @staticmethod
    def wait_settled(settled: threading.Event, timeout_s: float | None) -> bool:
        """Wait for ``settled`` (set by the handler that delivers): gRPC's threads receive meanwhile."""
        return settled.wait(timeout_s)

    def busy_while(self, probe: Callable[[], bool]) -> None:
        """Nothing to do: gRPC's threads wait for messages without polling."""

    def rank_of_device(self, device: str) -> int:
        spec = DeviceSpec.from_string(device)
        return self.layout.rank_of(spec.job, spec.task or 0)

    def gone(self, rank: int) -> bool:
        """False: a task that went away shows as ``UNAVAILABLE`` on the next call (and may come back)."""
        return False

    @staticmethod
    def wire_tensor(value: Any) -> bytes:
        """The serialized ``RecvTensorResponse`` that answers pulls of ``value`` (:func:`grpc_wire.wire_tensor`)."""
        return grpc_wire.wire_tensor(value)

    @staticmethod
    def unwire_tensor(wire: tuple[Any, float]) -> tuple[Any, float]:
        """``(value, send time)``: the ``recv_tensor`` codec decoded the reply already."""
        return wire

    # -- serving -------------------------------------------------------------------------------------------
    def caller_rank(self, context: grpc.ServicerContext) -> int:
        """The rank of the task calling, from its metadata and address; aborts the call with
        ``PERMISSION_DENIED`` when it is no task of the ClusterSpec or calls from another host."""
        claimed = dict(context.invocation_metadata()).get(TASK_METADATA, "")
        peer_ip = _peer_ip(context.peer())
        known = self._callers.get((claimed, peer_ip))
        if known is not None:
            return known
        rank = self.layout.rank_of_name(claimed) if claimed else None
        if rank is None:
            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          f"{self._task} refused a request from {context.peer()}: it names no task of the "
                          f"ClusterSpec {self.layout.spec.as_dict()} (claimed {claimed!r})")
        assert rank is not None  # context.abort raised otherwise
        if not _same_host(peer_ip, self.layout.address(rank).rpartition(":")[0]):
            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          f"{self._task} refused a request from {context.peer()} claiming to be {claimed}: that "
                          f"task's address is {self.layout.address(rank)}")
        self._callers[(claimed, peer_ip)] = rank
        return rank

    def _serve(self, kind: str, request: Any, context: grpc.ServicerContext) -> Any:
        source = self.caller_rank(context)
        codec = CODECS[kind]
        try:
            payload = codec.payload(self, request, source)
        except errors.OpError as error:
            context.abort(status_code(error), error.message)
        self._serving.active = True
        try:
            if kind in self._handlers:
                with self._dispatch:
                    self._handlers[kind](source, *payload)
                self._wake()
                return codec.response_type()
            reply = _Reply()
            try:
                with self._dispatch:
                    self._request_handlers[kind](source, reply, *payload)
            except Exception as error:  # a handler's own failure goes back to the caller
                reply(error=error)
        finally:
            self._serving.active = False
        self._wake()
        while not reply.done.wait(_REPLY_POLL_S):
            if not context.is_active() or self._stopped.is_set():
                context.abort(grpc.StatusCode.CANCELLED, f"{self._task}: the {codec.method} call was cancelled")
        failure = reply.error
        if failure is not None:
            message = failure.message if isinstance(failure, errors.OpError) else f"{type(failure).__name__}: {failure}"
            context.abort(status_code(failure), message)
        return codec.reply(self, reply.value)

    def _wake(self):
        with self._progress:
            self._progress.notify_all()

    def close(self) -> None:
        """Stop serving (calls in flight end with ``CANCELLED``) and close the channels (idempotent)."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._server.stop(grace=0.2).wait(2)
        self._pool.shutdown(wait=False)  # grpc leaves the executor it was given running
        self._calls.shutdown(wait=False)  # calls in flight end as their channels close, below
        with self._lock:
            for sender in self._senders.values():
                sender.stop()
            for channel in self._channels.values():
                channel.close()
            self._channels.clear()
            self._stubs.clear()

    def wait_closed(self, timeout_s: float | None = None) -> bool:
        return self._stopped.wait(timeout_s)


class _Reply:
    """The reply of one served request, set once by its handler (maybe from another thread)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def __call__(self, value: Any = None, error: BaseException | None = None) -> None:
        self.value, self.error = value, error
        self.done.set()


class _Sender:
    """One task's posted messages, sent in order, each with a blocking call: by the posting thread when the way is
    free (``direct``), else queued for this sender's thread."""

    def __init__(self, transport: GrpcTransport, dst: int) -> None:
        self._transport, self._dst = transport, dst
        self._queue: collections.deque = collections.deque()
        self._ready = threading.Condition()
        self._busy = False  # a call to dst is in flight
        self._stopped = False
        threading.Thread(target=self._run, name=f"dfcore-grpc-send-{dst}", daemon=True).start()

    def send(self, kind: str, request: Any, direct: bool) -> None:
        with self._ready:
            if not direct or self._busy or self._queue:
                self._queue.append((kind, request))
                self._ready.notify_all()
                return
            self._busy = True
        self._call(kind, request)

    def stop(self) -> None:
        with self._ready:
            self._stopped = True
            self._ready.notify_all()

    def _call(self, kind, request):
        transport = self._transport
        try:
            transport._stub(self._dst, kind)(request, metadata=transport._metadata, timeout=POST_TIMEOUT_S)
        except grpc.RpcError:
            pass  # the peer went away or refused it: the step that needed it fails there or here
        finally:
            with self._ready:
                self._busy = False
                self._ready.notify_all()

    def _run(self) -> None:
        while True:
            with self._ready:
                self._ready.wait_for(lambda: (self._queue and not self._busy) or self._stopped)
                if self._stopped:
                    return
                kind, request = self._queue.popleft()
                self._busy = True
            self._call(kind, request)
