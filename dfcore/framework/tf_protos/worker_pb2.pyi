from tensorboard.compat.proto import config_pb2 as _config_pb2
from tensorboard.compat.proto import graph_pb2 as _graph_pb2
from tensorboard.compat.proto import step_stats_pb2 as _step_stats_pb2
from tensorboard.compat.proto import tensor_pb2 as _tensor_pb2
from dfcore.framework.tf_protos import device_attributes_pb2 as _device_attributes_pb2
from dfcore.framework.tf_protos import tensorflow_server_pb2 as _tensorflow_server_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NamedTensorProto(_message.Message):
    __slots__ = ("name", "tensor")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    name: str
    tensor: _tensor_pb2.TensorProto
    def __init__(self, name: _Optional[str] = ..., tensor: _Optional[_Union[_tensor_pb2.TensorProto, _Mapping]] = ...) -> None: ...

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ("device_attributes",)
    DEVICE_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    device_attributes: _containers.RepeatedCompositeFieldContainer[_device_attributes_pb2.DeviceAttributes]
    def __init__(self, device_attributes: _Optional[_Iterable[_Union[_device_attributes_pb2.DeviceAttributes, _Mapping]]] = ...) -> None: ...

class CreateWorkerSessionRequest(_message.Message):
    __slots__ = ("session_handle", "server_def", "isolate_session_state", "cluster_device_attributes")
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    SERVER_DEF_FIELD_NUMBER: _ClassVar[int]
    ISOLATE_SESSION_STATE_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_DEVICE_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    server_def: _tensorflow_server_pb2.ServerDef
    isolate_session_state: bool
    cluster_device_attributes: _containers.RepeatedCompositeFieldContainer[_device_attributes_pb2.DeviceAttributes]
    def __init__(self, session_handle: _Optional[str] = ..., server_def: _Optional[_Union[_tensorflow_server_pb2.ServerDef, _Mapping]] = ..., isolate_session_state: _Optional[bool] = ..., cluster_device_attributes: _Optional[_Iterable[_Union[_device_attributes_pb2.DeviceAttributes, _Mapping]]] = ...) -> None: ...

class CreateWorkerSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeleteWorkerSessionRequest(_message.Message):
    __slots__ = ("session_handle",)
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    def __init__(self, session_handle: _Optional[str] = ...) -> None: ...

class DeleteWorkerSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RegisterGraphRequest(_message.Message):
    __slots__ = ("session_handle", "create_worker_session_called", "graph_def", "graph_options", "collective_graph_key", "config_proto", "session_graph_def", "graph_id", "graph_version")
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    CREATE_WORKER_SESSION_CALLED_FIELD_NUMBER: _ClassVar[int]
    GRAPH_DEF_FIELD_NUMBER: _ClassVar[int]
    GRAPH_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    COLLECTIVE_GRAPH_KEY_FIELD_NUMBER: _ClassVar[int]
    CONFIG_PROTO_FIELD_NUMBER: _ClassVar[int]
    SESSION_GRAPH_DEF_FIELD_NUMBER: _ClassVar[int]
    GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    GRAPH_VERSION_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    create_worker_session_called: bool
    graph_def: _graph_pb2.GraphDef
    graph_options: _config_pb2.GraphOptions
    collective_graph_key: int
    config_proto: _config_pb2.ConfigProto
    session_graph_def: _graph_pb2.GraphDef
    graph_id: int
    graph_version: int
    def __init__(self, session_handle: _Optional[str] = ..., create_worker_session_called: _Optional[bool] = ..., graph_def: _Optional[_Union[_graph_pb2.GraphDef, _Mapping]] = ..., graph_options: _Optional[_Union[_config_pb2.GraphOptions, _Mapping]] = ..., collective_graph_key: _Optional[int] = ..., config_proto: _Optional[_Union[_config_pb2.ConfigProto, _Mapping]] = ..., session_graph_def: _Optional[_Union[_graph_pb2.GraphDef, _Mapping]] = ..., graph_id: _Optional[int] = ..., graph_version: _Optional[int] = ...) -> None: ...

class RegisterGraphResponse(_message.Message):
    __slots__ = ("graph_handle",)
    GRAPH_HANDLE_FIELD_NUMBER: _ClassVar[int]
    graph_handle: str
    def __init__(self, graph_handle: _Optional[str] = ...) -> None: ...

class DeregisterGraphRequest(_message.Message):
    __slots__ = ("session_handle", "create_worker_session_called", "graph_handle")
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    CREATE_WORKER_SESSION_CALLED_FIELD_NUMBER: _ClassVar[int]
    GRAPH_HANDLE_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    create_worker_session_called: bool
    graph_handle: str
    def __init__(self, session_handle: _Optional[str] = ..., create_worker_session_called: _Optional[bool] = ..., graph_handle: _Optional[str] = ...) -> None: ...

class DeregisterGraphResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ExecutorOpts(_message.Message):
    __slots__ = ("record_costs", "record_timeline", "record_partition_graphs", "report_tensor_allocations_upon_oom")
    RECORD_COSTS_FIELD_NUMBER: _ClassVar[int]
    RECORD_TIMELINE_FIELD_NUMBER: _ClassVar[int]
    RECORD_PARTITION_GRAPHS_FIELD_NUMBER: _ClassVar[int]
    REPORT_TENSOR_ALLOCATIONS_UPON_OOM_FIELD_NUMBER: _ClassVar[int]
    record_costs: bool
    record_timeline: bool
    record_partition_graphs: bool
    report_tensor_allocations_upon_oom: bool
    def __init__(self, record_costs: _Optional[bool] = ..., record_timeline: _Optional[bool] = ..., record_partition_graphs: _Optional[bool] = ..., report_tensor_allocations_upon_oom: _Optional[bool] = ...) -> None: ...

class RunGraphRequest(_message.Message):
    __slots__ = ("session_handle", "create_worker_session_called", "graph_handle", "step_id", "exec_opts", "send", "recv_key", "is_partial", "is_last_partial_run", "store_errors_in_response_body", "request_id", "has_timeout", "timeout_s")
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    CREATE_WORKER_SESSION_CALLED_FIELD_NUMBER: _ClassVar[int]
    GRAPH_HANDLE_FIELD_NUMBER: _ClassVar[int]
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    EXEC_OPTS_FIELD_NUMBER: _ClassVar[int]
    SEND_FIELD_NUMBER: _ClassVar[int]
    RECV_KEY_FIELD_NUMBER: _ClassVar[int]
    IS_PARTIAL_FIELD_NUMBER: _ClassVar[int]
    IS_LAST_PARTIAL_RUN_FIELD_NUMBER: _ClassVar[int]
    STORE_ERRORS_IN_RESPONSE_BODY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    create_worker_session_called: bool
    graph_handle: str
    step_id: int
    exec_opts: ExecutorOpts
    send: _containers.RepeatedCompositeFieldContainer[NamedTensorProto]
    recv_key: _containers.RepeatedScalarFieldContainer[str]
    is_partial: bool
    is_last_partial_run: bool
    store_errors_in_response_body: bool
    request_id: int
    has_timeout: bool
    timeout_s: float
    def __init__(self, session_handle: _Optional[str] = ..., create_worker_session_called: _Optional[bool] = ..., graph_handle: _Optional[str] = ..., step_id: _Optional[int] = ..., exec_opts: _Optional[_Union[ExecutorOpts, _Mapping]] = ..., send: _Optional[_Iterable[_Union[NamedTensorProto, _Mapping]]] = ..., recv_key: _Optional[_Iterable[str]] = ..., is_partial: _Optional[bool] = ..., is_last_partial_run: _Optional[bool] = ..., store_errors_in_response_body: _Optional[bool] = ..., request_id: _Optional[int] = ..., has_timeout: _Optional[bool] = ..., timeout_s: _Optional[float] = ...) -> None: ...

class NodeTiming(_message.Message):
    __slots__ = ("device", "index", "start_s", "end_s", "thread_id", "outputs", "has_frame", "frame_id", "iteration", "dead")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    START_S_FIELD_NUMBER: _ClassVar[int]
    END_S_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    HAS_FRAME_FIELD_NUMBER: _ClassVar[int]
    FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    ITERATION_FIELD_NUMBER: _ClassVar[int]
    DEAD_FIELD_NUMBER: _ClassVar[int]
    device: str
    index: int
    start_s: float
    end_s: float
    thread_id: int
    outputs: _containers.RepeatedCompositeFieldContainer[ValueSummary]
    has_frame: bool
    frame_id: int
    iteration: int
    dead: bool
    def __init__(self, device: _Optional[str] = ..., index: _Optional[int] = ..., start_s: _Optional[float] = ..., end_s: _Optional[float] = ..., thread_id: _Optional[int] = ..., outputs: _Optional[_Iterable[_Union[ValueSummary, _Mapping]]] = ..., has_frame: _Optional[bool] = ..., frame_id: _Optional[int] = ..., iteration: _Optional[int] = ..., dead: _Optional[bool] = ...) -> None: ...

class ValueSummary(_message.Message):
    __slots__ = ("present", "shape", "dtype", "nbytes")
    PRESENT_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    NBYTES_FIELD_NUMBER: _ClassVar[int]
    present: bool
    shape: _containers.RepeatedScalarFieldContainer[int]
    dtype: str
    nbytes: int
    def __init__(self, present: _Optional[bool] = ..., shape: _Optional[_Iterable[int]] = ..., dtype: _Optional[str] = ..., nbytes: _Optional[int] = ...) -> None: ...

class TransferRecord(_message.Message):
    __slots__ = ("key", "tensor_name", "src_device", "dst_device", "nbytes", "send_time_s", "recv_request_time_s", "match_time_s")
    KEY_FIELD_NUMBER: _ClassVar[int]
    TENSOR_NAME_FIELD_NUMBER: _ClassVar[int]
    SRC_DEVICE_FIELD_NUMBER: _ClassVar[int]
    DST_DEVICE_FIELD_NUMBER: _ClassVar[int]
    NBYTES_FIELD_NUMBER: _ClassVar[int]
    SEND_TIME_S_FIELD_NUMBER: _ClassVar[int]
    RECV_REQUEST_TIME_S_FIELD_NUMBER: _ClassVar[int]
    MATCH_TIME_S_FIELD_NUMBER: _ClassVar[int]
    key: str
    tensor_name: str
    src_device: str
    dst_device: str
    nbytes: int
    send_time_s: float
    recv_request_time_s: float
    match_time_s: float
    def __init__(self, key: _Optional[str] = ..., tensor_name: _Optional[str] = ..., src_device: _Optional[str] = ..., dst_device: _Optional[str] = ..., nbytes: _Optional[int] = ..., send_time_s: _Optional[float] = ..., recv_request_time_s: _Optional[float] = ..., match_time_s: _Optional[float] = ...) -> None: ...

class RunGraphResponse(_message.Message):
    __slots__ = ("recv", "step_stats", "traced", "timings", "values", "transfers")
    RECV_FIELD_NUMBER: _ClassVar[int]
    STEP_STATS_FIELD_NUMBER: _ClassVar[int]
    TRACED_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    TRANSFERS_FIELD_NUMBER: _ClassVar[int]
    recv: _containers.RepeatedCompositeFieldContainer[NamedTensorProto]
    step_stats: _step_stats_pb2.StepStats
    traced: bool
    timings: _containers.RepeatedCompositeFieldContainer[NodeTiming]
    values: _containers.RepeatedCompositeFieldContainer[ValueSummary]
    transfers: _containers.RepeatedCompositeFieldContainer[TransferRecord]
    def __init__(self, recv: _Optional[_Iterable[_Union[NamedTensorProto, _Mapping]]] = ..., step_stats: _Optional[_Union[_step_stats_pb2.StepStats, _Mapping]] = ..., traced: _Optional[bool] = ..., timings: _Optional[_Iterable[_Union[NodeTiming, _Mapping]]] = ..., values: _Optional[_Iterable[_Union[ValueSummary, _Mapping]]] = ..., transfers: _Optional[_Iterable[_Union[TransferRecord, _Mapping]]] = ...) -> None: ...

class CleanupGraphRequest(_message.Message):
    __slots__ = ("step_id", "commit")
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    commit: bool
    def __init__(self, step_id: _Optional[int] = ..., commit: _Optional[bool] = ...) -> None: ...

class CleanupGraphResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RecvTensorRequest(_message.Message):
    __slots__ = ("step_id", "rendezvous_key", "dma_ok", "request_id", "master_task")
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    RENDEZVOUS_KEY_FIELD_NUMBER: _ClassVar[int]
    DMA_OK_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    MASTER_TASK_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    rendezvous_key: str
    dma_ok: bool
    request_id: int
    master_task: int
    def __init__(self, step_id: _Optional[int] = ..., rendezvous_key: _Optional[str] = ..., dma_ok: _Optional[bool] = ..., request_id: _Optional[int] = ..., master_task: _Optional[int] = ...) -> None: ...

class RecvTensorResponse(_message.Message):
    __slots__ = ("tensor", "is_dead", "send_start_micros", "require_ack", "send_time_s")
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    IS_DEAD_FIELD_NUMBER: _ClassVar[int]
    SEND_START_MICROS_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_ACK_FIELD_NUMBER: _ClassVar[int]
    SEND_TIME_S_FIELD_NUMBER: _ClassVar[int]
    tensor: _tensor_pb2.TensorProto
    is_dead: bool
    send_start_micros: int
    require_ack: bool
    send_time_s: float
    def __init__(self, tensor: _Optional[_Union[_tensor_pb2.TensorProto, _Mapping]] = ..., is_dead: _Optional[bool] = ..., send_start_micros: _Optional[int] = ..., require_ack: _Optional[bool] = ..., send_time_s: _Optional[float] = ...) -> None: ...

class AbortStepRequest(_message.Message):
    __slots__ = ("step_id", "master_task", "error_class", "error_message")
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    MASTER_TASK_FIELD_NUMBER: _ClassVar[int]
    ERROR_CLASS_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    master_task: int
    error_class: str
    error_message: str
    def __init__(self, step_id: _Optional[int] = ..., master_task: _Optional[int] = ..., error_class: _Optional[str] = ..., error_message: _Optional[str] = ...) -> None: ...

class AbortStepResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
