"""Prune a graph to what one ``Session.run`` needs, and order it.

Source: TF's ``subgraph.cc`` (prune to the fetches, cut at the feeds).
Pruning walks back from the fetched tensors and target ops through data and
control inputs, stopping at fed tensors. Ops are ordered topologically (a loop's
``NextIteration`` → ``Merge`` back edge does not count) with ties broken by creation
order, so the result is deterministic; a cycle is reported in TF's words.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable

from .. import errors
from ..framework import dtypes, registry
from ..framework.operation import Operation
from ..framework.tensor import Tensor


def prune(fetch_tensors: Iterable[Tensor], target_ops: Iterable[Operation],
          feed_tensors: Iterable[Tensor]) -> set[Operation]:
    """The set of ops needed to compute the fetches and run the targets, given the feeds."""
    fed = set(feed_tensors)
    needed = set()
    stack = [t.op for t in fetch_tensors if t not in fed] + list(target_ops)
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        for tensor in op.inputs:
            if tensor not in fed:
                stack.append(tensor.op)
        # A control edge from a fed op waits on nothing: the feed is there from the start
        # (TF moves such edges onto the feed's _Recv).
        stack.extend(c for c in op.control_inputs if not c.outputs or not all(t in fed for t in c.outputs))
    return needed


def topological_order(ops: Collection[Operation], feed_tensors: Iterable[Tensor] = ()) -> list[Operation]:
    """Kahn's algorithm over ``ops``; ties broken by op creation id.

    Most graphs never gain an input after an op is made, so every op reads only older ops: then the creation
    order is the answer (the oldest op not yet placed is always ready) and no count is kept.

    Raises:
        InvalidArgumentError: the ops contain a cycle (TF's wording).
    """
    if _reads_only_older(ops):
        return sorted(ops, key=_op_id)
    fed = set(feed_tensors)
    pending: dict[Operation, int] = {}
    consumers: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        deps = {t.op for t in op.inputs if t not in fed and t.op in consumers and not _is_back_edge(t)}
        deps.update(c for c in op.control_inputs if c in consumers)
        pending[op] = len(deps)
        for dep in deps:
            consumers[dep].append(op)
    ready = [(op._id, op) for op, count in pending.items() if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, op = heapq.heappop(ready)
        order.append(op)
        for consumer in consumers[op]:
            pending[consumer] -= 1
            if pending[consumer] == 0:
                heapq.heappush(ready, (consumer._id, consumer))
    if len(order) != len(ops):
        stuck = sorted((op for op in ops if pending[op] > 0), key=lambda op: op._id)
        names = ", ".join(op.name for op in stuck[:10])
        raise errors.InvalidArgumentError(
            None, stuck[0], f"Graph is invalid, contains a cycle with {len(stuck)} nodes, including: {names}"
        )
    return order


def _reads_only_older(ops: Iterable[Operation]) -> bool:
    """Whether every data and control input of every op was made before the op."""
    for op in ops:
        made = op._id
        for t in op.inputs:
            if t.op._id > made:
                return False
        for c in op.control_inputs:
            if c._id > made:
                return False
    return True


def _op_id(op: Operation) -> int:
    return op._id


def _is_back_edge(tensor):
    """A loop's back edge (``NextIteration`` → ``Merge``) is no ordering constraint."""
    return registry.control_flow_kind(tensor.op.type) == "next_iteration"


def check_feeds_cover_placeholders(ops: Iterable[Operation]) -> None:
    """Raise TF's error for the first Placeholder that must run but is not fed."""
    for op in sorted(ops, key=lambda o: o._id):
        if op.type == "Placeholder":
            tensor = op.outputs[0]
            raise errors.InvalidArgumentError(
                op.node_def,
                op,
                f"You must feed a value for placeholder tensor '{op.name}' with dtype "
                f"{dtypes.tf_type_name(tensor.dtype)} and shape {tensor.shape.tf_str()}\n\t [[node {op.name}]]",
            )
