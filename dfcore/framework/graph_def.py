"""Build TF's ``NodeDef`` and ``GraphDef`` messages from dfcore's nodes, and read attrs back.

Source: ``tensorflow/core/framework/node_def.proto`` and ``graph.proto``: a node has ``name``, ``op``,
``input`` (``"src"``, ``"src:1"``, ``"^ctrl"`` for a control input), ``device`` and ``attr``; a graph is its
nodes plus ``versions``. The one place that writes these messages: ``Operation.node_def``,
``Graph.as_graph_def`` and the partition graphs of ``RunMetadata`` all call it.
"""

from collections.abc import Iterable, Mapping

from .attr_value import from_attr_value, to_attr_value
from .protos import GRAPH_DEF_VERSION, GraphDef, NodeDef, VersionDef


def make_node_def(name: str, op: str, inputs: Iterable[str], device: str, attrs: Mapping) -> NodeDef:
    """A ``NodeDef``; attrs are Python values (see :mod:`dfcore.framework.attr_value`)."""
    node = NodeDef(name=name, op=op, input=list(inputs), device=device or "")
    for key in sorted(attrs):
        node.attr[key].CopyFrom(to_attr_value(attrs[key]))
    return node


def make_graph_def(nodes: Iterable[NodeDef]) -> GraphDef:
    """A ``GraphDef`` of ``nodes`` with dfcore's producer version."""
    return GraphDef(node=list(nodes), versions=VersionDef(producer=GRAPH_DEF_VERSION))


def node_attrs(node: NodeDef) -> dict:
    """The attrs of ``node`` as Python values, by name."""
    return {key: from_attr_value(value) for key, value in node.attr.items()}
