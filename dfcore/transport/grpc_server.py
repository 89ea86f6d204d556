"""``tf.train.Server`` over gRPC: a task listening on its ``ClusterSpec`` address, in its own process.

Source: TF's ``GrpcServer`` (``core/distributed_runtime/rpc/grpc_server_lib.cc``) and
``python/training/server_lib.py``. A ``tf.train.Server`` on a loopback address listens here as well as
joining the process's in-process cluster (whose state its task shares: :func:`start_task`'s ``state``); with
``TF_CONFIG`` naming a cluster or ``DFCORE_SERVERS=grpc`` (the gRPC launcher sets both) it starts its task here
only. Either way: a gRPC server on the host and port the ``ClusterSpec`` names (a ``localhost`` address listens
on loopback only), serving TF's WorkerService and MasterService. ``Session(server.target)`` in that process, and
``Session("grpc://host:port")`` in any process, then run steps across the cluster with the runtime
of :mod:`dfcore.transport` (the master is the task the target names).
"""

from __future__ import annotations

import socket
import threading
from typing import TYPE_CHECKING, Any

import grpc

from .. import errors
from ..distribute.cluster import Server
from ..framework.tf_protos import worker_pb2
from . import grpc_enabled
from .grpc_transport import GrpcTransport, status_code
from .grpc_wire import WORKER_SERVICE, parse_graph_handle
from .master import TaskBinding
from .task import TaskRuntime

if TYPE_CHECKING:
    from ..runtime.config import ConfigProto
    from .grpc_master import RemoteMasterBinding

_RUNTIMES: dict[str, TaskRuntime] = {}  # listening address -> the task this process runs there
_LOCK = threading.Lock()
_CHANGED = threading.Condition(_LOCK)


def start_task(server: Server, tensors: Any = None, state: Any = None) -> TaskRuntime:
    """Listen on ``server``'s address and serve its task; its runtime.

    Args:
        server: the ``tf.train.Server`` (``protocol`` checked by it: ``"grpc"``, or ``"grpc+mpi"`` in an MPI job).
        tensors: for ``"grpc+mpi"``, the MPI job's transport (:mod:`dfcore.mpi.transport`), which then carries
            the tensors between tasks (:class:`~dfcore.transport.grpc_mpi.GrpcMpiTransport`).
        state: the task's variables and resources when it is also a task of this process's in-process cluster
            (its :class:`~dfcore.distribute.cluster_runtime.InProcessCluster`, shared with that cluster's
            sessions); None: a state of its own.
    Raises:
        UnknownError: the address cannot be listened on (TF's ``Could not start gRPC server``).
        InvalidArgumentError: ``tensors`` numbers the tasks unlike the ``ClusterSpec``.
    """
    transport: Any = GrpcTransport(server.cluster_spec, server.server_def.job_name, server.server_def.task_index)
    if tensors is not None:
        from .grpc_mpi import GrpcMpiTransport

        try:
            transport = GrpcMpiTransport(transport, tensors)
        except errors.OpError:
            transport.close()
            raise
    from .grpc_master import MasterService

    MasterService(transport).install()
    runtime = TaskRuntime(transport, server, start=False, state=state)
    _install_worker_session_methods(runtime)
    transport.start()
    with _CHANGED:
        _RUNTIMES[server.address] = runtime
        _CHANGED.notify_all()
    return runtime


def _install_worker_session_methods(runtime: TaskRuntime) -> None:
    """The WorkerService methods the runtime's kinds do not use: ``CreateWorkerSession`` (nothing to set up:
    a task's state is shared by its masters), ``DeleteWorkerSession`` (the caller's graphs are forgotten),
    and ``DeregisterGraph``."""
    transport: Any = runtime.transport  # a GrpcTransport or its MPI wrapper: add_service

    def create(request, context):
        transport.caller_rank(context)
        return worker_pb2.CreateWorkerSessionResponse()

    def delete(request, context):
        runtime.service.forget_master(transport.caller_rank(context))
        return worker_pb2.DeleteWorkerSessionResponse()

    def deregister(request, context):
        transport.caller_rank(context)
        try:
            runtime.service.deregister(parse_graph_handle(transport, request.graph_handle))
        except errors.OpError as error:
            context.abort(status_code(error), error.message)
        return worker_pb2.DeregisterGraphResponse()

    methods: dict[str, tuple[Any, Any, Any]] = {  # method -> (handler, request, response)
        "CreateWorkerSession": (create, worker_pb2.CreateWorkerSessionRequest, worker_pb2.CreateWorkerSessionResponse),
        "DeleteWorkerSession": (delete, worker_pb2.DeleteWorkerSessionRequest, worker_pb2.DeleteWorkerSessionResponse),
        "DeregisterGraph": (deregister, worker_pb2.DeregisterGraphRequest, worker_pb2.DeregisterGraphResponse)}
    transport.add_service(WORKER_SERVICE, {
        name: grpc.unary_unary_rpc_method_handler(handler, request_deserializer=request.FromString,
                                                  response_serializer=response.SerializeToString)
        for name, (handler, request, response) in methods.items()})


def stop_task(server: Server) -> None:
    """Stop listening (calls in flight fail; the task's state is gone, as when its process ends)."""
    with _CHANGED:
        runtime = _RUNTIMES.pop(server.address, None)
        _CHANGED.notify_all()
    if runtime is not None:
        runtime.transport.close()


def join(timeout_s: float | None) -> bool:
    """Block until every gRPC server of this process has stopped (TF's ``join`` never returns); False on
    timeout."""
    with _CHANGED:
        return _CHANGED.wait_for(lambda: not _RUNTIMES, timeout_s)


def free_ports(count: int) -> list[int]:
    """``count`` free loopback ports, all different (held open together while chosen; another process may still
    take one before it is used)."""
    probes = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def local_address() -> str:
    """A free loopback address for ``tf.train.Server.create_local_server()``."""
    return f"localhost:{free_ports(1)[0]}"


def runtime_at(address: str) -> TaskRuntime | None:
    """The task this process serves at ``address``, or None."""
    with _LOCK:
        return _RUNTIMES.get(address)


def resolve(target: str, config: ConfigProto | None) -> TaskBinding | RemoteMasterBinding | None:
    """The binding of a ``grpc://host:port`` target: this process's own task there, else (with gRPC servers
    enabled) the remote master at that address; None otherwise."""
    runtime = runtime_at(target[len("grpc://"):])
    if runtime is not None:
        return TaskBinding(runtime, runtime.task_name(), config)
    if grpc_enabled():
        return remote_master(target, config)
    return None


def remote_master(target: str, config: ConfigProto | None) -> RemoteMasterBinding:
    """A binding that runs every ``Session.run`` on the master listening at ``target`` (TF's ``GrpcSession``).

    Raises:
        UnavailableError: nothing answers there.
    """
    from .grpc_master import RemoteMasterBinding

    return RemoteMasterBinding(target, config)

