"""Write the FileDescriptorSet of tensorboard's compiled TF messages (``tensorboard.compat.proto``) to a file.

``make protos`` hands it to ``grpc_tools.protoc --descriptor_set_in``: dfcore's ``.proto`` files import
``tensorboard/compat/proto/*.proto``, which the ``tensorboard`` package ships compiled only.
Usage: ``python tools/tensorboard_descriptors.py OUT.pb``.
"""

import importlib
import pkgutil
import sys

from google.protobuf import descriptor_pb2


def main(out_path: str) -> None:
    import tensorboard.compat.proto as package

    files = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add(descriptor) -> None:
        if descriptor.name in seen:
            return
        for dependency in descriptor.dependencies:
            add(dependency)
        seen.add(descriptor.name)
        descriptor.CopyToProto(files.file.add())

    for module in pkgutil.iter_modules(package.__path__):
        if module.name.endswith("_pb2"):
            add(importlib.import_module(f"{package.__name__}.{module.name}").DESCRIPTOR)
    with open(out_path, "wb") as out:
        out.write(files.SerializeToString())


if __name__ == "__main__":
    main(sys.argv[1])
