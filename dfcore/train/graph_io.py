"""``tf.train.write_graph`` and reading a GraphDef file back (binary ``.pb`` or text ``.pbtxt``).

Source: ``tensorflow/python/framework/graph_io.py`` (``write_graph``: text format with ``as_text=True``,
else the serialized message; creates ``logdir``; returns the path). The file is written atomically
(:func:`dfcore.train.file_io.atomic_write`): a reader sees the old file or the new one, never half of one.
"""

import os

from google.protobuf import message, text_format

from .. import errors
from ..framework.protos import GraphDef
from .file_io import atomic_write


def write_graph(graph_or_graph_def, logdir: str, name: str, as_text: bool = True) -> str:
    """Write a Graph's (or a GraphDef's) GraphDef to ``logdir/name``; returns that path.

    Raises:
        TypeError: the first argument is neither a Graph nor a GraphDef.
        PermissionDeniedError, NotFoundError, ...: the directory or file cannot be written (naming it).
    """
    graph_def = graph_or_graph_def
    if not isinstance(graph_def, GraphDef):
        if not hasattr(graph_def, "as_graph_def"):
            raise TypeError(f"write_graph() expects a Graph or a GraphDef; got {type(graph_def).__name__}")
        graph_def = graph_def.as_graph_def()
    path = os.path.join(logdir, name)
    try:
        os.makedirs(logdir, exist_ok=True)
    except OSError as error:
        raise errors.error_from_os_error(error, f"Cannot create directory {logdir}") from None
    data = text_format.MessageToString(graph_def).encode("utf-8") if as_text else graph_def.SerializeToString()
    atomic_write(path, lambda f: f.write(data))
    return path


def read_graph_def(path: str) -> GraphDef:
    """The GraphDef in ``path``: binary if it parses as one, else text format (as TF's tools accept both).

    Raises:
        NotFoundError: no such file.
        DataLossError: the file is neither a serialized GraphDef nor its text format (a corrupt ``.pb``).
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as error:
        raise errors.error_from_os_error(error, f"Cannot read GraphDef {path}") from None
    graph_def = GraphDef()
    try:
        graph_def.ParseFromString(data)
        return graph_def
    except message.DecodeError:
        pass
    try:
        return text_format.Parse(data.decode("utf-8"), GraphDef())
    except (UnicodeDecodeError, text_format.ParseError) as error:
        raise errors.DataLossError(None, None, f"{path} holds neither a binary GraphDef nor a text one "
                                               f"(corrupt or not a GraphDef): {error}") from None
