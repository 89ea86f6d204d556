"""Dependency optimization: redundant ``Identity`` and ``NoOp`` nodes and control edges removed.

Source: ``tensorflow/core/grappler/optimizers/dependency_optimizer.cc`` (``OptimizeNode``,
``SafeToRemoveIdentity``, ``BypassingNodeIsBeneficial``, ``TransitiveReduction``).

- An ``Identity`` (or ``Snapshot``) is bypassed — its consumers read its input — unless it is fetched, a
  target or a feed's producer, reads a reference (a variable's ``read`` is the snapshot a step sees), has
  control inputs, or sits on another device than its producer or a consumer (there it is a transfer point).
  An ``Identity`` of a fed tensor is bypassed when its consumers share its device (they read the feed, which
  reaches that device once either way).
- A ``NoOp`` that is not a target is bypassed — each ``^noop`` becomes its control inputs — when all are on
  one device and bypassing adds no edges: inputs × outputs ≤ inputs + outputs.
- A control edge ``^c`` is dropped where ``c`` already feeds the node through a data edge.
"""

from __future__ import annotations

from .graph_item import GraphItem, Node, Output

IDENTITY_OPS = ("Identity", "Snapshot")


def run(item: GraphItem) -> None:
    """One sweep over the nodes, producers first."""
    for node in item.ordered():
        if item.nodes.get(node.name) is not node:
            continue
        if node.control_inputs:
            data = {t.op for t in node.inputs if isinstance(t, Output)}
            kept = [c for c in node.control_inputs if c not in data]
            if len(kept) < len(node.control_inputs):
                item.set_inputs(node, control_inputs=kept)
        if node.type in IDENTITY_OPS:
            _bypass_identity(item, node)
        elif node.type == "NoOp":
            _bypass_noop(item, node)


def _bypass_identity(item: GraphItem, node: Node) -> None:
    source = node.inputs[0]
    if not item.removable(node) or node.control_inputs:
        return
    consumers = [c for c, _ in item.data_users(node)] + item.control_users(node)
    if any(c.device != node.device for c in consumers):
        return
    if isinstance(source, Output):
        if source.op.device != node.device:
            return
        item.move_control_uses(node, [source.op])
    elif item.control_users(node):
        return  # a feed has no node to wait for
    item.forward(node, [source])
    item.remove(node)


def _bypass_noop(item: GraphItem, node: Node) -> None:
    if not item.removable(node):
        return
    inputs, outputs = node.control_inputs, item.control_users(node)
    if any(n.device != node.device for n in inputs + outputs):
        return
    if len(inputs) * len(outputs) > len(inputs) + len(outputs):
        return
    item.move_control_uses(node, inputs)
    item.remove(node)
