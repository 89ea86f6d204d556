"""Registers, after ``import dfcore``, files with TensorFlow's own proto file names, packages and symbols in
protobuf's default descriptor pool (what ``import tensorflow`` does), for tests/unit/test_protos_beside_tensorflow.py:
``tensorflow.error.Code`` and ``tensorflow.BytesList``/``tensorflow.Feature``, which dfcore's copies used to take.
Prints ``registered`` and the full names, or the error protobuf raised."""

from google.protobuf import descriptor_pb2, descriptor_pool

import dfcore  # imported first, on purpose
import dfcore.transport.grpc_server  # noqa: F401  (dfcore's gRPC messages too)
from dfcore.framework.protos import BytesList


def tf_files():
    codes = descriptor_pb2.FileDescriptorProto(name="tensorflow/core/protobuf/error_codes.proto",
                                               package="tensorflow.error", syntax="proto3")
    code = codes.enum_type.add(name="Code")
    for number, name in enumerate(["OK", "CANCELLED", "UNKNOWN"]):
        code.value.add(name=name, number=number)
    feature = descriptor_pb2.FileDescriptorProto(name="tensorflow/core/example/feature.proto", package="tensorflow",
                                                 syntax="proto3")
    bytes_list = feature.message_type.add(name="BytesList")
    bytes_list.field.add(name="value", number=1, label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
                         type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES)
    one = feature.message_type.add(name="Feature")
    one.field.add(name="bytes_list", number=1, label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
                  type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE, type_name=".tensorflow.BytesList")
    return codes, feature


pool = descriptor_pool.Default()
try:
    for file in tf_files():
        pool.AddSerializedFile(file.SerializeToString())
except TypeError as error:
    print(f"error: {error}")
else:
    names = [pool.FindEnumTypeByName("tensorflow.error.Code").full_name,
             pool.FindMessageTypeByName("tensorflow.BytesList").full_name, BytesList.DESCRIPTOR.full_name]
    print("registered", *names)
