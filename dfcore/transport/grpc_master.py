"""TF's MasterService over gRPC: a client process without a server of its own runs steps on a cluster.

Source: TF's ``GrpcMasterService`` / ``GrpcSession`` (``core/distributed_runtime/rpc/grpc_master_service.cc``,
``grpc_session.cc``): ``tf.Session("grpc://host:port")`` sends its graph to the master at that
address (``CreateSession``, ``ExtendSession`` when the graph grew) and each ``run`` becomes a
``RunStep`` naming feeds, fetches and targets; the master runs the step across the cluster and
replies with the fetched tensors (and ``RunMetadata``). Here the master side is a dfcore
``Session`` on the task's own runtime (:class:`~dfcore.transport.master.TaskBinding`), so the step is
the same all-or-nothing distributed step a session in a task process runs.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import grpc

from .. import errors
from ..framework import graph as graph_lib
from ..framework.importer import import_nodes
from ..framework.protos import RunOptions
from ..framework.run_metadata import RunMetadata, message_of
from ..framework.tf_protos import master_pb2
from ..runtime.config import ConfigProto
from ..runtime.device_set import DeviceSet
from ..runtime.session import Session
from ..runtime.session_resources import SessionResources
from ..runtime.variable_store import VariableStore
from .grpc_transport import CHANNEL_OPTIONS, grpc_error, status_code
from .grpc_wire import MASTER_SERVICE, device_from_proto, device_to_proto, tensor_from_proto, tensor_to_proto

#: Seconds a client waits for the master's reply to a call other than ``RunStep`` (which the step's own
#: deadline bounds).
MASTER_TIMEOUT_S = 60.0

_METHODS: dict[str, tuple[Any, Any]] = {  # method -> (request, response) message classes
    "CreateSession": (master_pb2.CreateSessionRequest, master_pb2.CreateSessionResponse),
    "ExtendSession": (master_pb2.ExtendSessionRequest, master_pb2.ExtendSessionResponse),
    "RunStep": (master_pb2.RunStepRequest, master_pb2.RunStepResponse),
    "CloseSession": (master_pb2.CloseSessionRequest, master_pb2.CloseSessionResponse),
    "ListDevices": (master_pb2.ListDevicesRequest, master_pb2.ListDevicesResponse),
    "Reset": (master_pb2.ResetRequest, master_pb2.ResetResponse),
}


class _MasterSession:
    """One client session on the master: its imported graph and the dfcore Session running it here."""

    def __init__(self, target: str, graph_def, config: ConfigProto) -> None:
        self._target, self._config = target, config
        self.version = 0
        self.lock = threading.Lock()
        self.session: Session | None = None
        self.replace(graph_def)

    def replace(self, graph_def) -> None:
        """Run ``graph_def`` from now on (a new version of the client's graph)."""
        graph = graph_lib.Graph()
        import_nodes(graph_def, "", graph)
        if self.session is not None:
            self.session.close()
        self.graph, self.session = graph, Session(self._target, graph=graph, config=self._config)
        self.version += 1


class MasterService:
    """Serves ``/tensorflow.grpc.MasterService/*`` for the task of ``transport``.

    Raises (as the call's status): ``NotFoundError`` for an unknown session handle or tensor/op name (TF's
    wording), ``InvalidArgumentError`` for a malformed graph or feed, and whatever the step raises.
    """

    def __init__(self, transport) -> None:
        self._transport = transport
        self._target = "grpc://" + transport.address
        self._sessions: dict[str, _MasterSession] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def install(self) -> None:
        """Add the service to the task's gRPC server (before it starts)."""
        methods = {name: grpc.unary_unary_rpc_method_handler(
            self._serving(getattr(self, f"_{name}")), request_deserializer=request.FromString,
            response_serializer=response.SerializeToString) for name, (request, response) in _METHODS.items()}
        self._transport.add_service(MASTER_SERVICE, methods)

    @staticmethod
    def _serving(method):
        def serve(request, context):
            try:
                return method(request)
            except Exception as error:  # every failure goes back as the call's status
                message = error.message if isinstance(error, errors.OpError) else f"{type(error).__name__}: {error}"
                context.abort(status_code(error), message)
        return serve

    def _session(self, handle: str) -> _MasterSession:
        with self._lock:
            found = self._sessions.get(handle)
        if found is None:
            raise errors.AbortedError(None, None, f"Session {handle} is not found (closed, or the master at "
                                      f"{self._target} restarted).")
        return found

    def _CreateSession(self, request):
        handle = f"{self._transport.incarnation:x}/{next(self._ids)}"
        session = _MasterSession(self._target, request.graph_def, request.config)
        with self._lock:
            self._sessions[handle] = session
        return master_pb2.CreateSessionResponse(session_handle=handle, graph_version=session.version)

    def _ExtendSession(self, request):
        """The client sends its whole graph again; the master imports it afresh (the variables live in the tasks'
        state, not in the graph, so they are kept)."""
        found = self._session(request.session_handle)
        with found.lock:
            found.replace(request.graph_def)
            return master_pb2.ExtendSessionResponse(new_graph_version=found.version)

    def _RunStep(self, request):
        found = self._session(request.session_handle)
        graph = found.graph
        try:
            feeds = {graph.get_tensor_by_name(f.name): tensor_from_proto(f.tensor) for f in request.feed}
            fetches = [graph.get_tensor_by_name(name) for name in request.fetch]
            targets = [graph.get_operation_by_name(name) for name in request.target]
        except (KeyError, ValueError) as error:
            raise errors.NotFoundError(None, None, str(error).strip("'\"")) from None
        metadata = RunMetadata()
        values = found.session.run([fetches, targets], feeds, options=request.options, run_metadata=metadata)[0]
        response = master_pb2.RunStepResponse(metadata=message_of(metadata))
        for name, value in zip(request.fetch, values, strict=True):
            response.tensor.add(name=name, tensor=tensor_to_proto(value))
        return response

    def _CloseSession(self, request):
        with self._lock:
            found = self._sessions.pop(request.session_handle, None)
        if found is not None:
            found.session.close()
        return master_pb2.CloseSessionResponse()

    def _ListDevices(self, request):
        runtime_devices = self._transport_devices()
        own = self._transport.layout.task_name(self._transport.rank)
        response = master_pb2.ListDevicesResponse()
        for device in runtime_devices:
            (response.local_device if device.name.startswith(own + "/") else response.remote_device).append(
                device_to_proto(device))
        return response

    def _transport_devices(self):
        from .grpc_server import runtime_at

        runtime = runtime_at(self._transport.address)
        if runtime is None:
            raise errors.UnavailableError(None, None, f"The server at {self._target} has stopped")
        return runtime.cluster_devices(MASTER_TIMEOUT_S)

    def _Reset(self, request):
        """Close every session this master holds (TF's Reset also clears resource containers: not done here)."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for found in sessions:
            found.session.close()
        return master_pb2.ResetResponse()


class RemoteMasterBinding:
    """The binding of ``Session("grpc://host:port")`` in a process that serves no task there: every ``run``
    is a ``RunStep`` on the master at that address (see ``register_target_resolver``).

    Raises:
        UnavailableError: no server answers at the address (TF's status).
    """

    def __init__(self, target: str, config: ConfigProto | None) -> None:
        self.target = target
        self._config = config if config is not None else ConfigProto()
        self._channel = grpc.insecure_channel(target[len("grpc://"):], options=CHANNEL_OPTIONS)
        self._stubs = {name: self._channel.unary_unary(f"/{MASTER_SERVICE}/{name}",
                                                       request_serializer=request.SerializeToString,
                                                       response_deserializer=response.FromString)
                       for name, (request, response) in _METHODS.items()}
        listed = self._call("ListDevices", master_pb2.ListDevicesRequest())
        devices = [device_from_proto(d) for d in (*listed.local_device, *listed.remote_device)]
        local = [d.name for d in listed.local_device]
        client = next((name for name in local if name.endswith("/device:CPU:0")), local[0] if local else None)
        self.device_set = DeviceSet(sorted(devices, key=lambda d: d.name), client_device=client)
        self.variable_store = VariableStore()  # the cluster's variables live on its tasks, not here
        self.resources = SessionResources()
        self._handle: str | None = None
        self._graph_key: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def _call(self, method: str, request: Any, timeout_s: float | None = MASTER_TIMEOUT_S) -> Any:
        try:
            return self._stubs[method](request, timeout=timeout_s)
        except grpc.RpcError as error:
            raise grpc_error(error, f"{method} on the master at {self.target}") from None

    def check_step(self, plan) -> None:
        """Nothing to check here: the master checks its tasks."""

    def run(self, graph, fetches, targets, feed_tensors, feed_values, options: RunOptions,
            run_metadata: RunMetadata | None) -> list[Any]:
        """One ``RunStep`` on the master: the fetched values, in ``fetches``' order (``run_metadata`` filled
        with the master's when given)."""
        handle = self._ensure_session(graph)
        request = master_pb2.RunStepRequest(session_handle=handle, fetch=[t.name for t in fetches],
                                            target=[op.name for op in targets], options=options)
        for tensor, value in zip(feed_tensors, feed_values, strict=True):
            request.feed.add(name=tensor.name, tensor=tensor_to_proto(value))
        response = self._call("RunStep", request, timeout_s=None)
        if run_metadata is not None:
            run_metadata.CopyFrom(response.metadata)
        by_name = {t.name: tensor_from_proto(t.tensor) for t in response.tensor}
        return [by_name[t.name] for t in fetches]

    def _ensure_session(self, graph) -> str:
        """Create the master's session with the graph, or extend it with the nodes added since."""
        with self._lock:
            key = (id(graph), graph.version)
            if self._handle is not None and self._graph_key == key:
                return self._handle
            graph_def = graph.as_graph_def()
            if self._handle is None or self._graph_key is None or self._graph_key[0] != id(graph):
                created = self._call("CreateSession", master_pb2.CreateSessionRequest(
                    graph_def=graph_def, config=self._config, target=self.target))
                self._handle = created.session_handle
            else:
                self._call("ExtendSession", master_pb2.ExtendSessionRequest(
                    session_handle=self._handle, graph_def=graph_def))
            self._graph_key = key
            return self._handle

    def close(self) -> None:
        """Close the master's session and the channel."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            try:
                self._call("CloseSession", master_pb2.CloseSessionRequest(session_handle=handle), timeout_s=5.0)
            except errors.OpError:
                pass  # the master is gone: nothing left to close there
        self._channel.close()
