"""Checks a ``GraphDef`` from outside (a file, a gRPC client) before any of it is built or allocated.

Source: TF's ``GraphConstructor`` (``tensorflow/core/common_runtime/graph_constructor.cc``: ``Node 'c' is not
unique``, ``Node 'a': Connecting to invalid output 7 of source node c which has 1 outputs.``, ``Node 'a':
Unknown input node 'x'``) and ``Tensor::FromProto`` (``tensorflow/core/framework/tensor.cc``: a
``tensor_content`` whose size does not match shape and dtype is ``Cannot parse tensor from proto``).
TF's Python ``import_graph_def`` raises these as ``ValueError``; dfcore raises
:class:`InvalidGraphDefError`, which is both that and ``InvalidArgumentError``, so that a gRPC master
answers with TF's status code. A tensor attr larger than the memory this process may still take fails
with ``ResourceExhaustedError`` before it is decoded; any other attr is capped at :func:`max_attr_bytes`.
"""

from __future__ import annotations

import math
import os
import resource

import numpy as np

from .. import errors
from . import dtypes
from .protos import GraphDef

#: Environment variable: the largest non-tensor attr value a GraphDef may carry (bytes, default 16 MiB).
MAX_ATTR_BYTES_ENV = "DFCORE_GRAPHDEF_MAX_ATTR_BYTES"
DEFAULT_MAX_ATTR_BYTES = 16 << 20


class InvalidGraphDefError(errors.InvalidArgumentError, ValueError):
    """A malformed GraphDef: ``InvalidArgumentError`` (its status code) that is also the ``ValueError`` TF's
    ``import_graph_def`` raises."""

    def __init__(self, message: str) -> None:
        super().__init__(None, None, message)


def max_attr_bytes() -> int:
    """The size limit of a non-tensor attr value (bytes): ``$DFCORE_GRAPHDEF_MAX_ATTR_BYTES``, else 16 MiB."""
    return int(os.environ.get(MAX_ATTR_BYTES_ENV, DEFAULT_MAX_ATTR_BYTES))


def allocatable_bytes() -> int:
    """What this process may still allocate (bytes): the memory Linux reports available, capped by the
    address-space and data-segment limits (``RLIMIT_AS``, ``RLIMIT_DATA``); unbounded where neither is known."""
    limits = []
    for which in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
        soft = resource.getrlimit(which)[0]
        if soft != resource.RLIM_INFINITY:
            limits.append(soft)
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            fields = dict(line.split(":", 1) for line in f)
        limits.append(int(fields["MemAvailable"].split()[0]) * 1024 + int(fields["SwapFree"].split()[0]) * 1024)
    except (OSError, KeyError, ValueError):
        pass
    return min(limits) if limits else 1 << 62


def check_graph_def(graph_def: GraphDef) -> None:
    """Check ``graph_def``'s node names and attrs before anything of it is built.

    Raises:
        InvalidGraphDefError: a name given twice, a tensor attr with negative dims, an unknown dtype or a
            ``tensor_content`` whose size is not shape x dtype size, or a non-tensor attr over
            :func:`max_attr_bytes` (each message names the node).
        ResourceExhaustedError: a tensor attr bigger than :func:`allocatable_bytes`.
    """
    seen: set[str] = set()
    limit, available = max_attr_bytes(), allocatable_bytes()
    for node in graph_def.node:
        if node.name in seen:
            raise InvalidGraphDefError(f"Node '{node.name}' is not unique")
        seen.add(node.name)
        for key, attr in node.attr.items():
            which = attr.WhichOneof("value")
            tensors = [attr.tensor] if which == "tensor" else list(attr.list.tensor) if which == "list" else []
            for proto in tensors:
                _check_tensor(node.name, key, proto, available)
            if not tensors and attr.ByteSize() > limit:
                raise InvalidGraphDefError(
                    f"Node '{node.name}': attr '{key}' is {attr.ByteSize()} bytes, more than the {limit} bytes a "
                    f"GraphDef attr may have here (set {MAX_ATTR_BYTES_ENV} to allow more)")


def check_output_index(node: str, source: str, port: str, num_outputs: int) -> int:
    """The output index ``port`` (``""`` is 0) of ``source``, an input of ``node``.

    Raises:
        InvalidGraphDefError: ``port`` is not an index of one of ``source``'s ``num_outputs`` outputs (TF's words).
    """
    index = int(port) if port.isdigit() else -1 if port else 0
    if not 0 <= index < num_outputs:
        raise InvalidGraphDefError(f"Node '{node}': Connecting to invalid output {port} of source node {source} "
                                   f"which has {num_outputs} outputs.")
    return index


def _check_tensor(node: str, key: str, proto, available: int) -> None:
    dims = [d.size for d in proto.tensor_shape.dim]
    shape = "[" + ",".join(str(d) for d in dims) + "]"
    if any(d < 0 for d in dims):
        raise InvalidGraphDefError(f"Node '{node}': Shape {shape} of attr '{key}' is not fully defined")
    try:
        dtype = dtypes.as_dtype(proto.dtype)
    except TypeError:
        raise InvalidGraphDefError(f"Node '{node}': attr '{key}' has an unknown dtype {proto.dtype}") from None
    count = math.prod(dims)
    itemsize = np.dtype(dtype.as_numpy_dtype).itemsize
    if proto.tensor_content and dtype != dtypes.string and len(proto.tensor_content) != count * itemsize:
        raise InvalidGraphDefError(
            f"Node '{node}': Cannot parse tensor from proto: tensor_content of attr '{key}' has "
            f"{len(proto.tensor_content)} bytes; shape {shape} of {dtype.name} needs {count * itemsize}")
    size = count * itemsize
    if size > available:
        raise errors.ResourceExhaustedError(
            None, None, f"Node '{node}': attr '{key}' is a {dtype.name} tensor of shape {shape} ({size} bytes), "
            f"more than this process may allocate now ({available} bytes); nothing was allocated")
