from tensorboard.compat.proto import config_pb2 as _config_pb2
from tensorboard.compat.proto import graph_pb2 as _graph_pb2
from dfcore.framework.tf_protos import device_attributes_pb2 as _device_attributes_pb2
from dfcore.framework.tf_protos import worker_pb2 as _worker_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateSessionRequest(_message.Message):
    __slots__ = ("graph_def", "config", "target")
    GRAPH_DEF_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    graph_def: _graph_pb2.GraphDef
    config: _config_pb2.ConfigProto
    target: str
    def __init__(self, graph_def: _Optional[_Union[_graph_pb2.GraphDef, _Mapping]] = ..., config: _Optional[_Union[_config_pb2.ConfigProto, _Mapping]] = ..., target: _Optional[str] = ...) -> None: ...

class CreateSessionResponse(_message.Message):
    __slots__ = ("session_handle", "graph_version")
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    GRAPH_VERSION_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    graph_version: int
    def __init__(self, session_handle: _Optional[str] = ..., graph_version: _Optional[int] = ...) -> None: ...

class ExtendSessionRequest(_message.Message):
    __slots__ = ("session_handle", "graph_def", "current_graph_version")
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    GRAPH_DEF_FIELD_NUMBER: _ClassVar[int]
    CURRENT_GRAPH_VERSION_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    graph_def: _graph_pb2.GraphDef
    current_graph_version: int
    def __init__(self, session_handle: _Optional[str] = ..., graph_def: _Optional[_Union[_graph_pb2.GraphDef, _Mapping]] = ..., current_graph_version: _Optional[int] = ...) -> None: ...

class ExtendSessionResponse(_message.Message):
    __slots__ = ("new_graph_version",)
    NEW_GRAPH_VERSION_FIELD_NUMBER: _ClassVar[int]
    new_graph_version: int
    def __init__(self, new_graph_version: _Optional[int] = ...) -> None: ...

class RunStepRequest(_message.Message):
    __slots__ = ("session_handle", "feed", "fetch", "target", "options", "partial_run_handle", "store_errors_in_response_body", "request_id")
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    FEED_FIELD_NUMBER: _ClassVar[int]
    FETCH_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_RUN_HANDLE_FIELD_NUMBER: _ClassVar[int]
    STORE_ERRORS_IN_RESPONSE_BODY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    feed: _containers.RepeatedCompositeFieldContainer[_worker_pb2.NamedTensorProto]
    fetch: _containers.RepeatedScalarFieldContainer[str]
    target: _containers.RepeatedScalarFieldContainer[str]
    options: _config_pb2.RunOptions
    partial_run_handle: str
    store_errors_in_response_body: bool
    request_id: int
    def __init__(self, session_handle: _Optional[str] = ..., feed: _Optional[_Iterable[_Union[_worker_pb2.NamedTensorProto, _Mapping]]] = ..., fetch: _Optional[_Iterable[str]] = ..., target: _Optional[_Iterable[str]] = ..., options: _Optional[_Union[_config_pb2.RunOptions, _Mapping]] = ..., partial_run_handle: _Optional[str] = ..., store_errors_in_response_body: _Optional[bool] = ..., request_id: _Optional[int] = ...) -> None: ...

class RunStepResponse(_message.Message):
    __slots__ = ("tensor", "metadata")
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    tensor: _containers.RepeatedCompositeFieldContainer[_worker_pb2.NamedTensorProto]
    metadata: _config_pb2.RunMetadata
    def __init__(self, tensor: _Optional[_Iterable[_Union[_worker_pb2.NamedTensorProto, _Mapping]]] = ..., metadata: _Optional[_Union[_config_pb2.RunMetadata, _Mapping]] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ("session_handle",)
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    def __init__(self, session_handle: _Optional[str] = ...) -> None: ...

class CloseSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ResetRequest(_message.Message):
    __slots__ = ("container", "device_filters")
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FILTERS_FIELD_NUMBER: _ClassVar[int]
    container: _containers.RepeatedScalarFieldContainer[str]
    device_filters: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, container: _Optional[_Iterable[str]] = ..., device_filters: _Optional[_Iterable[str]] = ...) -> None: ...

class ResetResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListDevicesRequest(_message.Message):
    __slots__ = ("session_handle",)
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    def __init__(self, session_handle: _Optional[str] = ...) -> None: ...

class ListDevicesResponse(_message.Message):
    __slots__ = ("local_device", "remote_device")
    LOCAL_DEVICE_FIELD_NUMBER: _ClassVar[int]
    REMOTE_DEVICE_FIELD_NUMBER: _ClassVar[int]
    local_device: _containers.RepeatedCompositeFieldContainer[_device_attributes_pb2.DeviceAttributes]
    remote_device: _containers.RepeatedCompositeFieldContainer[_device_attributes_pb2.DeviceAttributes]
    def __init__(self, local_device: _Optional[_Iterable[_Union[_device_attributes_pb2.DeviceAttributes, _Mapping]]] = ..., remote_device: _Optional[_Iterable[_Union[_device_attributes_pb2.DeviceAttributes, _Mapping]]] = ...) -> None: ...
