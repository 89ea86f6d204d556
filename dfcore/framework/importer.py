"""``import_graph_def``: rebuild a Graph from the GraphDef-like dict ``Graph.as_graph_def()`` gives.

Source: ``tensorflow/python/framework/importer.py`` (``import_graph_def``: nodes keep their
names under an optional prefix, inputs are ``"op"``, ``"op:1"`` or ``"^op"``, requested
devices and attrs are kept). dfcore uses it to ship a partition's ops to another process:
the receiving task rebuilds the ops and compiles their kernels from the same attrs.
"""

from . import graph as graph_lib


def import_graph_def(graph_def, name="import", graph=None):
    """Add the nodes of ``graph_def`` to ``graph`` (default: the default graph).

    Args:
        graph_def: ``{"node": [{"name", "op", "input", "device", "attr"}, ...]}`` (any node order).
        name: a prefix for the imported names (``"import/w"``); ``""`` keeps the names as they are.
        graph: the Graph to add to.
    Returns:
        ``{original node name: Operation}``.
    Raises:
        ValueError: a name clashes with an op already in the graph, an input names a node that is
            not in ``graph_def``, or the inputs form a cycle.
        InvalidArgumentError: an op's shape function rejects its inputs (as when it was built).
    """
    graph = graph_lib.get_default_graph() if graph is None else graph
    nodes = {node["name"]: node for node in graph_def["node"]}
    created = {}
    for node_name in _topological(nodes):
        node = nodes[node_name]
        data, control = [], []
        for text in node["input"]:
            if text.startswith("^"):
                control.append(created[text[1:]])
            else:
                source, _, port = text.partition(":")
                data.append(created[source].outputs[int(port) if port else 0])
        full_name = f"{name}/{node_name}" if name else node_name
        op = graph.create_op(node["op"], data, dict(node["attr"]), name=full_name + "/")
        op._set_device(node.get("device", ""))
        op._add_control_inputs(control)
        created[node_name] = op
    return created


def _topological(nodes):
    """Node names in an order where every input comes first (raises ValueError on cycles / missing inputs)."""
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
                raise ValueError(f"import_graph_def: the inputs of node '{current}' form a cycle")
            state[current] = "open"
            stack.append((current, True))
            for text in nodes[current]["input"]:
                source = text.lstrip("^").partition(":")[0]
                if source not in nodes:
                    raise ValueError(f"import_graph_def: node '{current}' has input '{text}', which is not in "
                                     "the GraphDef")
                if state.get(source) != "done":
                    if state.get(source) == "open":
                        raise ValueError(f"import_graph_def: the inputs of node '{source}' form a cycle")
                    stack.append((source, False))
    return order
