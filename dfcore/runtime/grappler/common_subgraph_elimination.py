"""Common-subexpression elimination: nodes computing the same thing from the same inputs become one.

Source: ``tensorflow/core/grappler/optimizers/common_subgraph_elimination.cc`` (grappler) and
``core/graph/optimizer_cse.cc`` (the classic L1 ``OptimizeCSE``; same rule, run as ``OptimizeCSE``).
Two nodes are the same when their type, attrs, device, data inputs (in order; sorted for commutative ops, as
TF canonicalises them) and control inputs are; ``Const`` values are compared by dtype, shape and bytes (up to
:data:`MAX_HASHED_BYTES`). The first in producer order survives; a fetched node, a target or a feed's
producer is never the one removed. Stateful nodes, nodes reading the step's context (variables, queues,
resources) and nodes with no outputs are never merged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...framework import registry
from .graph_item import GraphItem, Node, Output, is_stateful

MAX_HASHED_BYTES = 64 * 1024
COMMUTATIVE = frozenset({"Add", "AddV2", "Mul", "Maximum", "Minimum", "LogicalAnd", "LogicalOr", "Equal",
                         "NotEqual", "SquaredDifference"})


def run(item: GraphItem) -> None:
    """Merge duplicates, producers first (so their consumers become duplicates in the same sweep)."""
    seen: dict[Any, Node] = {}
    for node in item.ordered():
        if item.nodes.get(node.name) is not node or not _candidate(node):
            continue
        key = _key(node)
        if key is None:
            continue
        kept = seen.setdefault(key, node)
        if kept is not node and item.removable(node):
            item.replace(node, kept)


def _candidate(node: Node) -> bool:
    kernel_def = registry.kernel(node.type)
    return (bool(node._outputs) and kernel_def is not None and not kernel_def.needs_context
            and not kernel_def.is_async and not is_stateful(node))


def _key(node: Node) -> tuple[Any, ...] | None:
    inputs = [(id(t.op), t.value_index) if isinstance(t, Output) else (id(t), -1) for t in node.inputs]
    if node.type in COMMUTATIVE:
        inputs.sort()
    attrs = []
    for name in sorted(node._attrs):
        value = _attr_key(node._attrs[name])
        if value is None:
            return None
        attrs.append((name, value))
    return (node.type, node.device, tuple(inputs), tuple(sorted(id(c) for c in node.control_inputs)),
            tuple(attrs))


def _attr_key(value: Any) -> Any:
    """A hashable stand-in for an attr value; None when it cannot be compared cheaply."""
    if isinstance(value, np.ndarray):
        if value.nbytes > MAX_HASHED_BYTES or value.dtype == object:
            return None
        return "ndarray", value.dtype.str, value.shape, value.tobytes()
    if isinstance(value, list | tuple):
        items = [_attr_key(v) for v in value]
        return None if any(i is None for i in items) else ("seq", tuple(items))
    if isinstance(value, bool | int | float | str | bytes) or value is None:
        return type(value).__name__, value
    return type(value).__name__, repr(value)
