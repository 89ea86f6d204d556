"""``tf.train.write_graph`` and reading a protobuf file back (binary ``.pb``/``.meta`` or text ``.pbtxt``).

Source: ``tensorflow/python/framework/graph_io.py`` (``write_graph``: text format with ``as_text=True``,
else the serialized message; creates ``logdir``; returns the path; TF writes ``MetaGraphDef`` files with it
too) and ``meta_graph.py`` (``read_meta_graph_file``: binary first, then text). The file is written
atomically (:func:`dfcore.train.file_io.atomic_write`): a reader sees the old file or the new one, never half
of one. :func:`write_graph` and :func:`read_proto` are the one writer/reader pair for every proto file.
"""

import os
from typing import Any, TypeVar

from google.protobuf import message, text_format

from .. import errors
from ..framework.protos import GraphDef
from .file_io import atomic_write

_Message = TypeVar("_Message", bound=message.Message)


def write_graph(graph_or_graph_def: Any, logdir: str, name: str, as_text: bool = True) -> str:
    """Write a Graph's GraphDef (or any protobuf message, a GraphDef or MetaGraphDef) to ``logdir/name``;
    returns that path.

    Raises:
        TypeError: the first argument is neither a Graph nor a protobuf message.
        PermissionDeniedError, NotFoundError, ...: the directory or file cannot be written (naming it).
    """
    proto = graph_or_graph_def
    if not isinstance(proto, message.Message):
        if not hasattr(proto, "as_graph_def"):
            raise TypeError(f"write_graph() expects a Graph or a GraphDef; got {type(proto).__name__}")
        proto = proto.as_graph_def()
    path = os.path.join(logdir, name)
    try:
        os.makedirs(logdir or ".", exist_ok=True)
    except OSError as error:
        raise errors.error_from_os_error(error, f"Cannot create directory {logdir}") from None
    data = text_format.MessageToString(proto).encode("utf-8") if as_text else proto.SerializeToString()
    atomic_write(path, lambda f: f.write(data))
    return path


def read_proto(path: str, message_type: type[_Message]) -> _Message:
    """The ``message_type`` message in ``path``: binary if it parses as one, else text format (as TF's
    readers accept both).

    Raises:
        NotFoundError: no such file (TF raises ``IOError``).
        DataLossError: the file is neither a serialized ``message_type`` nor its text format (corrupt).
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as error:
        raise errors.error_from_os_error(error, f"Cannot read {message_type.__name__} {path}") from None
    proto = message_type()
    try:
        proto.ParseFromString(data)
        return proto
    except message.DecodeError:
        pass
    try:
        return text_format.Parse(data.decode("utf-8"), message_type())
    except (UnicodeDecodeError, text_format.ParseError) as error:
        raise errors.DataLossError(None, None, f"{path} holds neither a binary {message_type.__name__} nor a "
                                               f"text one (corrupt or not a {message_type.__name__}): "
                                               f"{error}") from None


def read_graph_def(path: str) -> GraphDef:
    """The GraphDef in ``path`` (binary or text); raises as :func:`read_proto`."""
    return read_proto(path, GraphDef)
