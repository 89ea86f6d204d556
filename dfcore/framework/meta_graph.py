"""``MetaGraphDef``: a graph with its collections and SaverDef, as one TF message, and back.

Source: ``tensorflow/python/framework/meta_graph.py`` (``export_scoped_meta_graph``,
``create_meta_graph_def``, ``add_collection_def``, ``import_scoped_meta_graph``) and the proto-function
registry and name-scope helpers of ``python/framework/ops.py``. A collection is written as TF writes it: a
collection with registered proto functions (variables: serialized ``VariableDef``; savers: ``SaverDef``) as
``bytes_list``; otherwise by the kind of its first item: Tensors, Operations and Variables by name as
``node_list``, ``str``/``bytes`` as ``bytes_list``, ints (and bools) as ``int64_list``, floats as
``float_list``. A collection none of these encodes is skipped with a warning, as TF does. On import the
variable collections share one ``Variable`` object per ``VariableDef`` (TF's ``_VARIABLE_COLLECTIONS``;
dfcore counts ``global_step`` among them, so ``tf.train.get_global_step()`` is that same object). File I/O
lives in :mod:`dfcore.train.graph_io`; ``tf.train.export_meta_graph``/``import_meta_graph`` in
:mod:`dfcore.train.saver`.
"""

import logging
import re
from collections.abc import Callable, Iterable
from typing import Any

from google.protobuf import wrappers_pb2

from . import graph as graph_lib
from .graph import GraphKeys
from .importer import import_graph_def
from .operation import Operation
from .protos import CollectionDef, GraphDef, MetaGraphDef, NodeDef, SaverDef
from .tensor import Tensor
from .versions import __version__

_LOG = logging.getLogger(__name__)
UNBOUND_INPUT_PREFIX = "$unbound_inputs_"
UNBOUND_INPUTS_COLLECTION = "unbound_inputs"
# Collections whose items are Variables: on import one Variable object per VariableDef serves them all.
VARIABLE_COLLECTIONS = (GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES, GraphKeys.MODEL_VARIABLES,
                        GraphKeys.TRAINABLE_VARIABLES, GraphKeys.MOVING_AVERAGE_VARIABLES, GraphKeys.GLOBAL_STEP)
_SAVE_OPS = ("SaveV2",)  # a Saver's scope is the scope of its save op (TF: SAVE_AND_RESTORE_OPS)

# -- TF's proto-function registry (ops.register_proto_function) --------------------
_PROTO_FUNCTIONS: dict = {}


def register_proto_function(collection_name: str, proto_type: type, to_proto: Callable,
                            from_proto: Callable) -> None:
    """Encode the items of ``collection_name`` as ``to_proto(item, export_scope=...)`` (a ``proto_type``
    message, or None to leave the item out) and decode them with ``from_proto(proto, import_scope=...)``."""
    _PROTO_FUNCTIONS[collection_name] = (proto_type, to_proto, from_proto)


# -- name scopes (ops.strip_name_scope / prepend_name_scope) ------------------------
def strip_name_scope(name: str, export_scope: str | None) -> str:
    """``name`` without the leading ``export_scope/`` (also after ``^`` or ``loc:@``); unchanged without one."""
    if not export_scope:
        return name
    scope = export_scope.rstrip("/")
    return re.sub(r"([\^]|loc:@|^)" + re.escape(scope) + r"[\/]+(.*)", r"\1\2", name, count=1)


def prepend_name_scope(name: str, import_scope: str | None) -> str:
    """``name`` under ``import_scope/`` (after a leading ``^`` or ``loc:@``); unchanged without one."""
    if not import_scope:
        return name
    scope = import_scope.rstrip("/")
    return re.sub(r"([\^]|loc:@|^)(.*)", lambda m: f"{m.group(1)}{scope}/{m.group(2)}", name, count=1)


# -- export ---------------------------------------------------------------------
def export_scoped_meta_graph(graph_def: GraphDef | None = None, graph=None, export_scope: str | None = None,
                             clear_devices: bool = False, saver_def: SaverDef | None = None,
                             clear_extraneous_savers: bool = False, meta_info_def=None,
                             collection_list: Iterable[str] | None = None) -> MetaGraphDef:
    """The ``MetaGraphDef`` of ``graph`` (default graph): its GraphDef, ``saver_def`` and collections (all, or
    those named in ``collection_list``). Unlike TF's, it returns no ``{name: Variable}`` dict beside it.

    ``graph_def`` replaces the graph's own GraphDef (``graph.as_graph_def(add_shapes=True)``). With
    ``export_scope`` only the nodes under it are kept, names stripped of it, and inputs from outside become
    ``$unbound_inputs_<name>``, listed in the ``unbound_inputs`` collection (import them with ``input_map``).
    ``clear_extraneous_savers`` drops the nodes of other Savers' scopes and keeps only ``saver_def`` in the
    ``savers`` collection. ``meta_info_def.stripped_op_list`` stays empty (dfcore has no OpDefs).
    Raises:
        TypeError: an argument is not the message type TF expects.
    """
    for value, kind in ((graph_def, GraphDef), (saver_def, SaverDef), (meta_info_def, MetaGraphDef.MetaInfoDef)):
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{kind.__name__} argument must be of type {kind.__name__}, not {type(value).__name__}")
    graph = graph or graph_lib.get_default_graph()
    source = graph_def if graph_def is not None else graph.as_graph_def(add_shapes=True)
    exclude = _extraneous_saver_nodes(source, saver_def) if clear_extraneous_savers else set()
    meta_graph_def = MetaGraphDef()
    meta_graph_def.meta_info_def.MergeFrom(meta_info_def or MetaGraphDef.MetaInfoDef())
    _stamp_writer(meta_graph_def.meta_info_def)
    unbound: list[str] = []
    if export_scope or exclude or clear_devices:
        meta_graph_def.graph_def.versions.CopyFrom(source.versions)
        meta_graph_def.graph_def.library.CopyFrom(source.library)
        meta_graph_def.graph_def.node.extend(
            _scoped_node_def(node, export_scope, unbound, clear_devices) for node in source.node
            if node.name not in exclude and _in_scope(node.name, export_scope))
    else:
        meta_graph_def.graph_def.CopyFrom(source)
    if saver_def is not None:
        meta_graph_def.saver_def.CopyFrom(saver_def)
    for key in graph.get_all_collection_keys() if collection_list is None else collection_list:
        if clear_extraneous_savers and key == GraphKeys.SAVERS:
            with graph.as_default():
                items = [_PROTO_FUNCTIONS[key][2](saver_def)] if saver_def is not None else []
        else:
            items = graph.get_collection(key)
        _add_collection_def(meta_graph_def, key, [x for x in items if _item_kept(x, export_scope, exclude)],
                            export_scope)
    if unbound:  # replaces a graph collection of that name, as TF clears it first
        meta_graph_def.collection_def[UNBOUND_INPUTS_COLLECTION].CopyFrom(
            CollectionDef(bytes_list=CollectionDef.BytesList(value=[name.encode("utf-8") for name in unbound])))
    return meta_graph_def


def _stamp_writer(meta_info_def) -> None:
    """Say that dfcore, not TensorFlow, wrote this (``tensorflow_version``; ``any_info`` unless the caller's
    ``meta_info_def`` has its own)."""
    meta_info_def.tensorflow_version = f"dfcore {__version__}"
    meta_info_def.tensorflow_git_version = f"dfcore-{__version__}"
    if not meta_info_def.HasField("any_info"):
        meta_info_def.any_info.Pack(wrappers_pb2.StringValue(
            value=f"Written by dfcore {__version__}, a TF1-style dataflow engine on numpy, not by TensorFlow; "
                  "stripped_op_list is empty because dfcore has no OpDefs."))


def _in_scope(name: str, export_scope: str | None) -> bool:
    return name.startswith(UNBOUND_INPUT_PREFIX) or not export_scope or name.startswith(export_scope)


def _item_kept(item, export_scope, exclude) -> bool:
    """TF's ``_should_include_node`` for a collection item: items without a name are always kept."""
    name = getattr(item, "name", None)
    if not isinstance(name, str):
        return True
    return name.split(":")[0] not in exclude and _in_scope(name, export_scope)


def _scoped_node_def(node: NodeDef, export_scope, unbound: list, clear_devices: bool) -> NodeDef:
    """A copy of ``node`` with ``export_scope`` stripped (inputs from outside it marked unbound)."""
    new = NodeDef()
    new.CopyFrom(node)
    new.name = strip_name_scope(node.name, export_scope)
    del new.input[:]
    for text in node.input:
        if export_scope and not text.lstrip("^").startswith(export_scope):
            text = re.sub(r"([\^]|^)(.*)", lambda m: m.group(1) + UNBOUND_INPUT_PREFIX + m.group(2), text, count=1)
            unbound.append(text)
        else:
            text = strip_name_scope(text, export_scope)
        new.input.append(text)
    if "_class" in node.attr:
        groups = [s for s in node.attr["_class"].list.s
                  if not export_scope or s.decode("utf-8").split("@", 1)[1].startswith(export_scope)]
        del new.attr["_class"].list.s[:]
        new.attr["_class"].list.s.extend(strip_name_scope(s.decode("utf-8"), export_scope).encode("utf-8")
                                         for s in groups)
    if node.op in ("Enter", "RefEnter") and "frame_name" in node.attr:
        new.attr["frame_name"].s = strip_name_scope(node.attr["frame_name"].s.decode("utf-8"),
                                                    export_scope).encode("utf-8")
    if clear_devices:
        new.device = ""
    return new


def _extraneous_saver_nodes(graph_def: GraphDef, saver_def: SaverDef | None) -> set:
    """Names of the nodes in the scopes of Savers other than ``saver_def``'s (TF assumes one scope each)."""
    def scope_of(name):
        return name.lstrip("^").split(":")[0].rpartition("/")[0]

    keep = set()
    if saver_def is not None:
        keep = {scope_of(saver_def.save_tensor_name) + "/", scope_of(saver_def.restore_op_name) + "/"}
    saver_scopes = {scope_of(node.name) + "/" for node in graph_def.node if node.op in _SAVE_OPS} - keep
    return {node.name for node in graph_def.node if any(node.name.startswith(s) for s in saver_scopes)}


def _add_collection_def(meta_graph_def: MetaGraphDef, key, items: list, export_scope) -> None:
    """Encode ``items`` as collection ``key`` (TF's ``add_collection_def``); skip it with a warning where no
    CollectionDef kind holds them."""
    if not isinstance(key, (str, bytes)):
        _LOG.warning("Only collections with string type keys will be serialized. This key has %s", type(key))
        return
    if not items:
        return
    try:
        meta_graph_def.collection_def[key].CopyFrom(_collection_def(key, items, export_scope))
    except (TypeError, ValueError, AttributeError) as error:
        _LOG.warning("Error encountered when serializing %s.\nType is unsupported, or the types of the items don't "
                     "match field type in CollectionDef.\n%s", key, error)
        meta_graph_def.collection_def.pop(key, None)


def _collection_def(key, items: list, export_scope) -> CollectionDef:
    col_def = CollectionDef()
    if key in _PROTO_FUNCTIONS:
        proto_type, to_proto, _ = _PROTO_FUNCTIONS[key]
        for item in items:
            proto = to_proto(item, export_scope=export_scope)
            if proto is not None:
                if not isinstance(proto, proto_type):
                    raise TypeError(f"to_proto of collection {key} returned a {type(proto).__name__}, "
                                    f"not a {proto_type.__name__}")
                col_def.bytes_list.value.append(proto.SerializeToString())
        return col_def
    kind = _kind_name(items[0])
    if kind == "node_list":
        for item in items:
            if not _is_graph_element(item):
                raise TypeError(f"{item!r} is neither a Tensor, an Operation nor a Variable")
            col_def.node_list.value.append(strip_name_scope(item.name, export_scope))
    elif kind == "bytes_list":
        col_def.bytes_list.value.extend(x.encode("utf-8") if isinstance(x, str) else x for x in items)
    else:
        getattr(col_def, kind).value.extend(items)
    return col_def


def _kind_name(item) -> str:
    """The CollectionDef field for ``item`` (TF's ``_get_kind_name``)."""
    if isinstance(item, (str, bytes)):
        return "bytes_list"
    if isinstance(item, int):
        return "int64_list"
    if isinstance(item, float):
        return "float_list"
    return "node_list"


def _is_graph_element(item) -> bool:
    return isinstance(item, (Tensor, Operation)) or hasattr(item, "_as_graph_element")


# -- import ---------------------------------------------------------------------
def import_scoped_meta_graph(meta_graph_def: MetaGraphDef, clear_devices: bool = False, graph=None,
                             import_scope: str | None = None, input_map: dict | None = None) -> dict:
    """Add the graph of ``meta_graph_def`` to ``graph`` (default graph) under ``import_scope`` and restore its
    collections; returns ``{name without the scope: Variable}`` of the imported global variables.

    Raises:
        TypeError: ``meta_graph_def`` is not a MetaGraphDef.
        ValueError: the graph has unbound inputs that ``input_map`` does not provide (TF's wording), or as
            :func:`dfcore.import_graph_def` (names clash, an input is missing).
        NotFoundError: a node's op type is not registered in dfcore.
        KeyError: a collection names an op or tensor that is not in the graph.
    """
    if not isinstance(meta_graph_def, MetaGraphDef):
        raise TypeError(f"Expected a MetaGraphDef; got {type(meta_graph_def).__name__}")
    _check_unbound_inputs(meta_graph_def, input_map)
    graph = graph or graph_lib.get_default_graph()
    graph_def = meta_graph_def.graph_def
    if clear_devices:
        graph_def = GraphDef()
        graph_def.CopyFrom(meta_graph_def.graph_def)
        for node in graph_def.node:
            node.device = ""
    with graph.as_default():
        scope = graph.unique_name(import_scope or "", mark_as_used=False)
        import_graph_def(graph_def, input_map=input_map, name=import_scope or scope)
        variables: dict[str, Any] = {}
        for key, col_def in sorted(meta_graph_def.collection_def.items()):
            if key != UNBOUND_INPUTS_COLLECTION:
                for item in _collection_items(key, col_def, scope, graph, variables):
                    graph.add_to_collection(key, item)
        return {strip_name_scope(v.name, scope): v
                for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope=scope or None)}


def _check_unbound_inputs(meta_graph_def: MetaGraphDef, input_map) -> None:
    col_def = meta_graph_def.collection_def.get(UNBOUND_INPUTS_COLLECTION)
    kind = col_def.WhichOneof("kind") if col_def is not None else None
    if kind is None:
        return
    names = [v.decode("utf-8") if isinstance(v, bytes) else v for v in getattr(col_def, kind).value]
    if names and sorted(names) != sorted(input_map or {}):
        missing = [n for n in names if n not in (input_map or {})]
        raise ValueError(f"Graph contains unbound inputs: {','.join(missing)}. Must provide these inputs "
                         "through input_map.")


def _collection_items(key, col_def: CollectionDef, scope: str, graph, variables: dict) -> list:
    """The Python items of one CollectionDef; ``variables`` shares Variables across variable collections."""
    kind = col_def.WhichOneof("kind")
    if kind is None:
        _LOG.error("Cannot identify data type for collection %s. Skipping.", key)
        return []
    if key in _PROTO_FUNCTIONS and kind == "bytes_list":
        proto_type, _, from_proto = _PROTO_FUNCTIONS[key]
        if key not in VARIABLE_COLLECTIONS:
            return [from_proto(proto_type.FromString(v), import_scope=scope) for v in col_def.bytes_list.value]
        for value in col_def.bytes_list.value:
            if value not in variables:
                variables[value] = from_proto(proto_type.FromString(value), import_scope=scope)
        return [variables[v] for v in col_def.bytes_list.value]
    values = list(getattr(col_def, kind).value)
    if kind == "node_list":
        return [graph.as_graph_element(prepend_name_scope(v, scope)) for v in values]
    if kind == "int64_list":
        return [int(v) for v in values]
    if kind == "bytes_list" and scope:
        return [prepend_name_scope(v.decode("utf-8"), scope).encode("utf-8") for v in values]
    return values
