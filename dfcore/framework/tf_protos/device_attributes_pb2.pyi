from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class DeviceAttributes(_message.Message):
    __slots__ = ("name", "device_type", "memory_limit", "incarnation", "physical_device_desc", "xla_global_id", "profile_name", "simulated")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TYPE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    PHYSICAL_DEVICE_DESC_FIELD_NUMBER: _ClassVar[int]
    XLA_GLOBAL_ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_NAME_FIELD_NUMBER: _ClassVar[int]
    SIMULATED_FIELD_NUMBER: _ClassVar[int]
    name: str
    device_type: str
    memory_limit: int
    incarnation: int
    physical_device_desc: str
    xla_global_id: int
    profile_name: str
    simulated: bool
    def __init__(self, name: _Optional[str] = ..., device_type: _Optional[str] = ..., memory_limit: _Optional[int] = ..., incarnation: _Optional[int] = ..., physical_device_desc: _Optional[str] = ..., xla_global_id: _Optional[int] = ..., profile_name: _Optional[str] = ..., simulated: _Optional[bool] = ...) -> None: ...
