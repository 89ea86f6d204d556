"""``tf.import_graph_def``: add the nodes of a ``GraphDef`` message to a Graph.

Source: ``tensorflow/python/framework/importer.py`` (``import_graph_def``: nodes keep their names under a
prefix, default ``"import"``; inputs are ``"op"``, ``"op:1"`` or ``"^op"``; ``input_map`` replaces inputs by
existing tensors; ``return_elements`` names what to hand back; requested devices and attrs are kept). A
GraphDef written by TensorFlow imports as long as dfcore has its op types; TF's ``_output_shapes`` attr is
dropped (dfcore infers shapes). dfcore's MPI tasks use :func:`import_nodes` to rebuild the master's graph.
"""

from typing import Any

from .. import errors
from . import graph as graph_lib, registry
from .graph_def import node_attrs
from .graph_def_checks import InvalidGraphDefError, check_graph_def, check_output_index
from .protos import GraphDef

_DROPPED_ATTRS = ("_output_shapes",)


def import_graph_def(graph_def: GraphDef, input_map=None, return_elements=None, name=None, op_dict=None,
                     producer_op_list=None):
    """Import ``graph_def`` into the default graph.

    Args:
        graph_def: a ``GraphDef`` message.
        input_map: ``{"name:0" or "name": Tensor}``: inputs of imported nodes that name a key read that
            existing tensor instead.
        return_elements: names of imported ops (``"op"``) or tensors (``"op:0"``) to return.
        name: prefix for the imported names, a name scope made unique as TF does (default ``"import"``, then
            ``"import_1"``…); ``""`` keeps the names as they are.
        op_dict, producer_op_list: accepted for TF's signature; unused (dfcore's op registry is fixed).
    Returns:
        the Operations/Tensors named by ``return_elements``, in order; None without it.
    Raises:
        TypeError: ``graph_def`` is not a GraphDef.
        NotFoundError: a node's op type is not registered in dfcore (naming the op type and node).
        ValueError: a return element is not in ``graph_def``, or a name clashes with the graph's.
        InvalidGraphDefError: (an ``InvalidArgumentError`` and a ``ValueError``, naming the node) an input names
            a node that is not in ``graph_def`` (nor in ``input_map``) or an output its op does not have, the
            inputs form a cycle, a node name is given twice, a tensor attr is malformed (negative dims,
            ``tensor_content`` of the wrong size) or an attr is too large (see
            :mod:`dfcore.framework.graph_def_checks`). Checked before anything is built.
        ResourceExhaustedError: a tensor attr is larger than the memory this process may allocate.
        InvalidArgumentError: an op's shape function rejects its inputs (as when it was built).
    """
    del op_dict, producer_op_list
    graph = graph_lib.get_default_graph()
    if name == "":
        created = import_nodes(graph_def, "", graph, input_map)
    else:
        with graph.name_scope(name or "import") as scope:
            created = import_nodes(graph_def, scope[:-1], graph, input_map)
    if return_elements is None:
        return None
    return [_element(created, text) for text in return_elements]


def import_nodes(graph_def: GraphDef, prefix: str, graph, input_map=None) -> dict:
    """Add the nodes of ``graph_def`` to ``graph`` with names ``<prefix>/<name>``; returns
    ``{original node name: Operation}``. Raises as :func:`import_graph_def`."""
    if not isinstance(graph_def, GraphDef):
        raise TypeError(f"import_graph_def() argument 'graph_def' must be a GraphDef proto; got "
                        f"{type(graph_def).__name__}")
    check_graph_def(graph_def)
    input_map = {_tensor_key(k): v for k, v in (input_map or {}).items()}
    nodes = {node.name: node for node in graph_def.node}
    known = set(registry.registered_op_types())  # sorted anew on each call: take it once, not per node
    for node in graph_def.node:
        if node.op not in known:
            raise errors.NotFoundError(node, None, f"Op type not registered '{node.op}' in binary running on "
                                                   f"dfcore (node '{node.name}'). Run python -m "
                                                   "dfcore.compat_report to see which ops dfcore has.")
    created: dict[str, Any] = {}
    back_edges = []  # (Merge op, input index, NextIteration's tensor text): wired once the loop body exists
    for node_name in _topological(nodes, input_map):
        node = nodes[node_name]
        data, control = [], []
        for text in node.input:
            if text.startswith("^"):
                control.append(created[text[1:]])
            elif _tensor_key(text) in input_map:
                data.append(input_map[_tensor_key(text)])
            elif _is_back_edge(nodes, node, text) and text.partition(":")[0] not in created:
                back_edges.append((node_name, len(data), text))
                data.append(None)
            else:
                source, _, port = text.partition(":")
                outputs = created[source].outputs
                data.append(outputs[check_output_index(node_name, source, port, len(outputs))])
        if None in data:  # a loop's Merge: its Enter stands in for the back edge until the body is imported
            stand_in = next(t for t in data if t is not None)
            data = [stand_in if t is None else t for t in data]
        try:
            attrs = {k: v for k, v in node_attrs(node).items() if k not in _DROPPED_ATTRS}
        except (TypeError, ValueError) as error:
            raise InvalidGraphDefError(f"Node '{node_name}': Cannot parse an attr: {error}") from None
        full_name = f"{prefix}/{node_name}" if prefix else node_name
        op = graph.create_op(node.op, data, attrs, name=full_name + "/")
        op._set_device(node.device)
        op._add_control_inputs(control)
        created[node_name] = op
    for merge_name, index, text in back_edges:
        source, _, port = text.partition(":")
        outputs = created[source].outputs
        created[merge_name]._update_input(index, outputs[check_output_index(merge_name, source, port, len(outputs))])
    return created


def _is_back_edge(nodes, node, text):
    """True for a loop's back edge: a ``NextIteration`` feeding a ``Merge`` (TF's importer wires them last)."""
    source = nodes.get(text.lstrip("^").partition(":")[0])
    return (source is not None and registry.control_flow_kind(node.op) == "merge"
            and registry.control_flow_kind(source.op) == "next_iteration")


def _tensor_key(text):
    """``"op"`` and ``"op:0"`` name the same tensor."""
    return text if ":" in text else f"{text}:0"


def _element(created, text):
    source, _, port = text.partition(":")
    if source not in created:
        raise ValueError(f"Requested return_element '{text}' not found in graph_def.")
    op = created[source]
    return op.outputs[int(port)] if port else op


def _topological(nodes, input_map):
    """Node names in an order where every input comes first (raises InvalidGraphDefError on cycles and missing
    inputs)."""
    order, state = [], {}
    for root in nodes:
        if root in state:
            continue
        stack = [(root, False)]
        while stack:
            current, expanded = stack.pop()
            if expanded:
                state[current] = "done"
                order.append(current)
                continue
            if state.get(current) == "done":
                continue
            if state.get(current) == "open":
                raise InvalidGraphDefError(f"import_graph_def: the inputs of node '{current}' form a cycle")
            state[current] = "open"
            stack.append((current, True))
            for text in nodes[current].input:
                if not text.startswith("^") and _tensor_key(text) in input_map:
                    continue
                if _is_back_edge(nodes, nodes[current], text):
                    continue
                source = text.lstrip("^").partition(":")[0]
                if source not in nodes:
                    raise InvalidGraphDefError(f"Node '{current}': Unknown input node '{text}'")
                if state.get(source) != "done":
                    if state.get(source) == "open":
                        raise InvalidGraphDefError(f"import_graph_def: the inputs of node '{source}' form a cycle")
                    stack.append((source, False))
    return order
