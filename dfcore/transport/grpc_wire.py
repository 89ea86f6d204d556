"""What the runtime's messages look like on gRPC: TF's protobuf messages, no pickle.

Source: TF's ``worker.proto`` / ``master.proto`` and ``tensor_util`` (a tensor as a ``TensorProto``
whose ``tensor_content`` holds the array's bytes, row-major, host byte order as TF writes it). Each
runtime kind of :mod:`dfcore.transport.seam` has a :class:`Codec` here, keyed by kind: the
WorkerService method that carries it and how its payload and reply become messages and back. A
peer can only send data (numbers, strings, TF's enums and graphs): nothing it sends is run as code.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from tensorboard.util import tensor_util

from .. import backends, errors
from ..framework import dtypes
from ..framework.attr_value import from_attr_value, to_attr_value
from ..framework.protos import GraphDef, TensorProto, TensorShapeProto
from ..framework.registry import DEAD
from ..framework.tf_protos import device_attributes_pb2, worker_pb2
from ..runtime.device_set import Device
from ..runtime.executor import NodeTiming
from ..runtime.rendezvous import TransferRecord
from .seam import error_from_wire, error_to_wire
from .service import ValueSummary

WORKER_SERVICE = "tensorflow.grpc.WorkerService"
# the attrs carrying the outputs of a partition node the graph optimizer made (partition_to_proto)
_OUTPUT_TYPES, _OUTPUT_SHAPES = "_output_types", "_output_shapes"
MASTER_SERVICE = "tensorflow.grpc.MasterService"


# -- tensors -------------------------------------------------------------------------------------------------
def tensor_to_proto(value: Any) -> TensorProto:
    """``value`` (a numpy array or scalar, numbers, bools or strings) as a ``TensorProto``: numbers in
    ``tensor_content`` (raw bytes), strings in ``string_val``.

    Raises:
        UnimplementedError: a value no TensorProto holds (names its type).
    """
    array = value if isinstance(value, np.ndarray) else np.asarray(value)
    if array.dtype.kind in "OSU":
        flat = array.reshape(-1)
        odd = [v for v in flat if not isinstance(v, (bytes, str))]
        if odd:
            raise errors.UnimplementedError(None, None, f"A {array.dtype} array holding {type(odd[0]).__name__} "
                                            "values cannot travel between tasks over gRPC: only tensors of TF's "
                                            "numeric, bool and string dtypes do")
        items = [v if isinstance(v, bytes) else v.encode("utf-8") for v in flat]
        return TensorProto(dtype=dtypes.string.as_datatype_enum, tensor_shape=_shape(array.shape), string_val=items)
    try:
        dtype = dtypes.as_dtype(array.dtype)
    except TypeError:
        raise errors.UnimplementedError(None, None, f"A value of type {type(value).__name__} ({array.dtype}) "
                                        "cannot travel between tasks over gRPC: only tensors of TF's numeric, "
                                        "bool and string dtypes do") from None
    return TensorProto(dtype=dtype.as_datatype_enum, tensor_shape=_shape(array.shape),
                       tensor_content=np.ascontiguousarray(array).tobytes())


def tensor_from_proto(proto: TensorProto) -> np.ndarray:
    """The writable array a :func:`tensor_to_proto` message holds.

    Raises:
        InvalidArgumentError: a malformed message (unknown dtype, bytes not matching the shape).
    """
    try:
        dtype = dtypes.as_dtype(proto.dtype)
    except (TypeError, ValueError, KeyError) as error:
        raise errors.InvalidArgumentError(None, None, f"Malformed TensorProto: dtype {proto.dtype} ({error})") \
            from None
    shape = tuple(d.size for d in proto.tensor_shape.dim)
    if any(d < 0 for d in shape):
        raise errors.InvalidArgumentError(None, None, f"Malformed TensorProto: shape {shape} has an unknown dim")
    if dtype == dtypes.string:
        values = np.empty(len(proto.string_val), dtype=object)
        values[:] = list(proto.string_val)
        if values.size != math.prod(shape):
            raise errors.InvalidArgumentError(None, None, f"Malformed TensorProto: {values.size} strings for shape "
                                              f"{shape}")
        return values.reshape(shape)
    np_dtype = np.dtype(dtype.as_numpy_dtype)
    size = math.prod(shape)
    if not proto.tensor_content and size:  # a peer that wrote the typed *_val fields (TF does for small tensors)
        try:
            return np.array(tensor_util.make_ndarray(proto), dtype=np_dtype)
        except (TypeError, ValueError) as error:
            raise errors.InvalidArgumentError(None, None, f"Malformed TensorProto: {error}") from None
    if len(proto.tensor_content) != size * np_dtype.itemsize:
        raise errors.InvalidArgumentError(None, None, f"Malformed TensorProto: {len(proto.tensor_content)} bytes of "
                                          f"tensor_content for {size} {dtype.name} values of shape {shape}")
    # one copy: out of the message's immutable bytes into a writable array, as a fetched value must be
    return np.frombuffer(bytearray(proto.tensor_content), dtype=np_dtype).reshape(shape)


def _shape(shape):
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in shape])


# -- devices, partitions, step stats ---------------------------------------------------------------------------
def device_to_proto(device: Device) -> device_attributes_pb2.DeviceAttributes:
    return device_attributes_pb2.DeviceAttributes(
        name=device.name, device_type=device.device_type, incarnation=device.incarnation,
        physical_device_desc=device.physical_device_desc, profile_name=device.profile_name,
        simulated=device.simulated)


def device_from_proto(proto: device_attributes_pb2.DeviceAttributes) -> Device:
    index = int(proto.name.rsplit(":", 1)[-1]) if ":" in proto.name else 0
    return Device(proto.name, proto.device_type, index, proto.profile_name, proto.simulated, proto.incarnation,
                  proto.physical_device_desc, backends.default_backend(proto.device_type))


def partition_to_proto(partition: tuple[str, list]) -> GraphDef:
    """A partition's records (:func:`~dfcore.transport.service.wire_partition`) as the GraphDef TF registers:
    each node with its device; the op it came from in ``experimental_debug_info.original_node_names``, or, for a
    node the graph optimizer made, its outputs in the attrs ``_output_types`` and ``_output_shapes`` (TF's name
    for the shapes a node's outputs have, as a ``GraphDef`` written with ``add_shapes=True`` carry them)."""
    _, records = partition
    graph = GraphDef()
    for name, op, inputs, device, attrs, original in records:
        node = graph.node.add(name=name, op=op, input=list(inputs), device=device)
        if original is not None and not isinstance(original, str):
            attrs = {**attrs, _OUTPUT_TYPES: [dtype for dtype, _ in original],
                     _OUTPUT_SHAPES: [shape for _, shape in original]}
        for key, value in attrs.items():
            node.attr[key].CopyFrom(to_attr_value(value))
        if isinstance(original, str):
            node.experimental_debug_info.original_node_names.append(original)
    return graph


def partition_from_proto(device: str, graph: GraphDef) -> tuple[str, list]:
    records = []
    for node in graph.node:
        names = node.experimental_debug_info.original_node_names
        attrs = {key: _attr(value) for key, value in node.attr.items()}
        original = names[0] if names else None
        if _OUTPUT_TYPES in attrs:
            original = tuple(zip(attrs.pop(_OUTPUT_TYPES), attrs.pop(_OUTPUT_SHAPES, ()), strict=True))
        records.append((node.name, node.op, tuple(node.input), node.device, attrs, original))
    return device, records


def _attr(value):
    decoded = from_attr_value(value)
    return tuple(decoded) if isinstance(decoded, list) else decoded


def _summary_to_proto(summary: ValueSummary | None) -> worker_pb2.ValueSummary:
    if summary is None:
        return worker_pb2.ValueSummary()
    return worker_pb2.ValueSummary(present=True, shape=list(summary.shape), dtype=np.dtype(summary.dtype).str,
                                   nbytes=summary.nbytes)


def _summary_from_proto(proto: worker_pb2.ValueSummary) -> ValueSummary | None:
    return ValueSummary(tuple(proto.shape), np.dtype(proto.dtype), proto.nbytes) if proto.present else None


def trace_to_proto(reply: dict, response: worker_pb2.RunGraphResponse) -> None:
    """Fill ``response`` with a traced partition's timings, value summaries and transfers."""
    response.traced = True
    for t in reply["timings"]:
        frame = t.frame_iter
        response.timings.add(device=t.device, index=t.index, start_s=t.start_s, end_s=t.end_s,
                             thread_id=t.thread_id, outputs=[_summary_to_proto(v) for v in t.outputs or ()],
                             has_frame=frame is not None, frame_id=frame[0] if frame else 0,
                             iteration=frame[1] if frame else 0, dead=t.dead)
    response.values.extend(_summary_to_proto(v) for v in reply["values"])
    response.transfers.extend(worker_pb2.TransferRecord(**dataclasses.asdict(t)) for t in reply["transfers"])


def trace_from_proto(response: worker_pb2.RunGraphResponse) -> dict | None:
    if not response.traced:
        return None
    timings = [NodeTiming(t.device, t.index, t.start_s, t.end_s, t.thread_id,
                          tuple(_summary_from_proto(v) for v in t.outputs),
                          (t.frame_id, t.iteration) if t.has_frame else None, t.dead) for t in response.timings]
    transfers = [TransferRecord(t.key, t.tensor_name, t.src_device, t.dst_device, t.nbytes, t.send_time_s,
                                t.recv_request_time_s, t.match_time_s) for t in response.transfers]
    return {"timings": timings, "values": [_summary_from_proto(v) for v in response.values],
            "transfers": transfers}


# -- one codec per runtime kind ------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Codec:
    """How one runtime kind travels: ``method`` of the WorkerService; ``request(transport, *payload)`` makes
    the request message and ``payload(transport, message, source rank)`` takes it apart (raising
    ``InvalidArgumentError`` when malformed); ``reply``/``value`` do the same for the reply (None for one-way
    messages)."""

    method: str
    request_type: Any  # a protobuf message class
    response_type: Any
    request: Callable[..., Any]
    payload: Callable[[Any, Any, int], tuple]
    reply: Callable[[Any, Any], Any] = lambda transport, value: None
    value: Callable[[Any, Any], Any] = lambda transport, message: None


def _graph_handle(transport, handle):
    return f"{transport.incarnation:x}/{handle[0]}/{handle[1]}"


def parse_graph_handle(transport: Any, text: str) -> tuple[int, int]:
    """The ``(master rank, index)`` of a graph handle this task gave.

    Raises:
        InvalidArgumentError: a malformed handle. AbortedError: one from an earlier incarnation of this task.
    """
    try:
        incarnation, source, index = text.split("/")
        parsed = int(incarnation, 16), (int(source), int(index))
    except ValueError:
        raise errors.InvalidArgumentError(None, None, f"Malformed graph_handle {text!r}") from None
    if parsed[0] != transport.incarnation:
        raise errors.AbortedError(None, None, f"Graph handle {text!r} was registered with an earlier incarnation "
                                  f"of {transport.layout.task_name(transport.rank)} (it restarted); register again")
    return parsed[1]


def _register_request(transport, graph_key, graph_def, partition):
    request = worker_pb2.RegisterGraphRequest(graph_def=partition_to_proto(partition), graph_id=graph_key[0],
                                              graph_version=graph_key[1])
    if graph_def is not None:
        request.session_graph_def.CopyFrom(graph_def)
    return request


def _register_payload(transport, request):
    device = request.graph_def.node[0].device if request.graph_def.node else ""
    graph_def = request.session_graph_def if request.HasField("session_graph_def") else None
    return (request.graph_id, request.graph_version), graph_def, partition_from_proto(device, request.graph_def)


def _run_request(transport, handle, step_handle, step_id, trace, timeout_s):
    # the step is named by its handle's id on every task (the session's own step id stays with the master)
    return worker_pb2.RunGraphRequest(graph_handle=handle, step_id=step_handle[1],
                                      exec_opts=worker_pb2.ExecutorOpts(record_timeline=trace),
                                      has_timeout=timeout_s is not None, timeout_s=timeout_s or 0.0)


def _run_payload(transport, request, source):
    handle = parse_graph_handle(transport, request.graph_handle)
    return (handle, (source, request.step_id), request.step_id, request.exec_opts.record_timeline,
            request.timeout_s if request.has_timeout else None)


def _run_reply(transport, value):
    response = worker_pb2.RunGraphResponse()
    if value is not None:
        trace_to_proto(value, response)
    return response


def wire_tensor(value: Any) -> bytes:
    """A tensor a ``_Send`` posted for another task, as the serialized ``RecvTensorResponse`` that answers its
    pull: encoded once, at send time (a snapshot of the value), and sent as is by every reply."""
    dead = value is DEAD
    return worker_pb2.RecvTensorResponse(tensor=None if dead else tensor_to_proto(value), is_dead=dead,
                                         send_start_micros=time.time_ns() // 1000,
                                         send_time_s=time.perf_counter()).SerializeToString()


def _recv_tensor_value(transport, response):
    value = DEAD if response.is_dead else tensor_from_proto(response.tensor)
    return value, response.send_time_s


def _abort_request(transport, handle, wire):
    name, message = wire
    return worker_pb2.AbortStepRequest(step_id=handle[1], master_task=handle[0], error_class=name,
                                       error_message=message)


CODECS: dict[str, Codec] = {
    "get_status": Codec(
        "GetStatus", worker_pb2.GetStatusRequest, worker_pb2.GetStatusResponse,
        lambda transport: worker_pb2.GetStatusRequest(), lambda transport, request, source: (),
        lambda transport, devices: worker_pb2.GetStatusResponse(device_attributes=[device_to_proto(d)
                                                                                   for d in devices]),
        lambda transport, response: tuple(device_from_proto(d) for d in response.device_attributes)),
    "register_graph": Codec(
        "RegisterGraph", worker_pb2.RegisterGraphRequest, worker_pb2.RegisterGraphResponse,
        _register_request, lambda transport, request, source: _register_payload(transport, request),
        lambda transport, handle: worker_pb2.RegisterGraphResponse(graph_handle=_graph_handle(transport, handle)),
        lambda transport, response: response.graph_handle),
    "run_graph": Codec(
        "RunGraph", worker_pb2.RunGraphRequest, worker_pb2.RunGraphResponse, _run_request, _run_payload,
        _run_reply, lambda transport, response: trace_from_proto(response)),
    "end_step": Codec(
        "CleanupGraph", worker_pb2.CleanupGraphRequest, worker_pb2.CleanupGraphResponse,
        lambda transport, step_handle, commit: worker_pb2.CleanupGraphRequest(step_id=step_handle[1],
                                                                              commit=commit),
        lambda transport, request, source: ((source, request.step_id), request.commit),
        lambda transport, value: worker_pb2.CleanupGraphResponse()),
    "recv_tensor": Codec(
        "RecvTensor", worker_pb2.RecvTensorRequest, worker_pb2.RecvTensorResponse,
        lambda transport, handle, key: worker_pb2.RecvTensorRequest(step_id=handle[1], rendezvous_key=key,
                                                                    master_task=handle[0]),
        lambda transport, request, source: ((request.master_task, request.step_id), request.rendezvous_key),
        lambda transport, wire: wire, _recv_tensor_value),
    "abort_step": Codec(
        "AbortStep", worker_pb2.AbortStepRequest, worker_pb2.AbortStepResponse, _abort_request,
        lambda transport, request, source: ((request.master_task, request.step_id),
                                            (request.error_class, request.error_message))),
}

def serialize(message: Any) -> bytes:
    """A reply as bytes: a message serialized, or bytes a codec serialized ahead (``wire_tensor``) as they are."""
    return message if isinstance(message, bytes) else message.SerializeToString()


__all__ = ["CODECS", "Codec", "MASTER_SERVICE", "WORKER_SERVICE", "error_from_wire", "error_to_wire",
           "serialize", "tensor_from_proto", "tensor_to_proto", "wire_tensor"]
