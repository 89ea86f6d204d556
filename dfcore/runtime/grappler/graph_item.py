"""The graph the optimizer rewrites: one run signature's pruned, placed ops as mutable nodes.

Source: TF's ``GrapplerItem`` (``tensorflow/core/grappler/grappler_item.h``): the graph, its fetch nodes and
the nodes to preserve. The user's :class:`~dfcore.framework.graph.Graph` is never changed: each op becomes a
:class:`Node` (its name, type, attrs, placed device, inputs and control inputs), and passes replace or rewire
nodes. A node that keeps its op's type and attrs runs that op's kernel (``kernel_source`` is the op); a node a
pass creates (a folded ``Const``, a ``_FusedMatMul``) is its own kernel source, so it answers what kernels and
the partitioner ask of an Operation (``name``, ``type``, ``attrs``, ``get_attr``, ``inputs``, ``outputs``,
``control_inputs``, ``node_def``).

A node's data inputs are :class:`Output` handles of other nodes, or the user's fed
:class:`~dfcore.framework.tensor.Tensor` itself (a feed is never a constant, and the partitioner recognises it).
Passes give a node new ``inputs`` / ``control_inputs`` lists and never change a list in place: the
meta-optimizer's records keep the lists of each pass's graph as they were.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ...framework import registry
from ...framework.graph_def import make_node_def
from ...framework.operation import Operation
from ...framework.protos import NodeDef
from ...framework.tensor import Tensor
from ...framework.tensor_shape import TensorShape


class Output:
    """Output ``value_index`` of :class:`Node` ``op`` (what a ``Tensor`` is to an Operation)."""

    __slots__ = ("op", "value_index", "dtype", "shape")

    def __init__(self, op: Node, value_index: int, dtype: Any, shape: TensorShape) -> None:
        self.op, self.value_index, self.dtype, self.shape = op, value_index, dtype, shape

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.value_index}"

    def __repr__(self) -> str:
        return f"<Output {self.name} {self.dtype.name} {self.shape}>"


Input = Output | Tensor  # a node's data input: another node's output, or a fed tensor


class Node:
    """One node of a :class:`GraphItem` (duck-types :class:`~dfcore.framework.operation.Operation`).

    ``original``: the op this node was copied from (its kernel runs it), None for a node a pass made;
    ``_id``: the position the partitioner sorts by (an op's creation id; a replacement takes the id of the
    node it replaces, so producers still come first).
    """

    __slots__ = ("name", "type", "_attrs", "inputs", "control_inputs", "device", "original", "_id", "_outputs",
                 "_stateful")

    def __init__(self, name: str, op_type: str, attrs: Mapping[str, Any], device: str, node_id: int,
                 output_specs: Sequence[tuple[Any, TensorShape]], original: Operation | None = None) -> None:
        self.name, self.type, self._attrs, self.device, self._id = name, op_type, dict(attrs), device, node_id
        self.original = original
        self.inputs: list[Input] = []
        self.control_inputs: list[Node] = []
        self._outputs = [Output(self, i, dtype, shape) for i, (dtype, shape) in enumerate(output_specs)]
        self._stateful: bool | None = None  # is_stateful's answer, once asked

    @classmethod
    def from_op(cls, op: Operation, device: str) -> Node:
        return cls(op.name, op.type, op.attrs, device, op._id, [(t.dtype, t.shape) for t in op.outputs], op)

    @property
    def attrs(self) -> dict[str, Any]:
        return dict(self._attrs)

    @property
    def outputs(self) -> list[Output]:
        return list(self._outputs)

    def get_attr(self, name: str) -> Any:
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self.name}' has no attr named '{name}'.") from None

    @property
    def kernel_source(self) -> Operation | Node:
        """What the kernel factory is given: the original op, or this node when a pass made it."""
        return self.original if self.original is not None else self

    @property
    def input_strings(self) -> list[str]:
        """NodeDef ``input`` strings: ``"src"``, ``"src:1"``, ``"^ctrl"``."""
        return input_strings(self.inputs, self.control_inputs)

    @property
    def node_def(self) -> NodeDef:
        return make_node_def(self.name, self.type, self.input_strings, self.device, self._attrs)

    def __repr__(self) -> str:
        return f"<Node '{self.name}' type={self.type}>"


def input_strings(inputs: Sequence[Input], control_inputs: Sequence[Node]) -> list[str]:
    """NodeDef ``input`` strings of a node's ``inputs`` and ``control_inputs`` (a node's name never changes)."""
    names = [t.op.name if t.value_index == 0 else t.name for t in inputs]
    return names + [f"^{c.name}" for c in control_inputs]


def is_stateful(node: Node) -> bool:
    """Stateful (or otherwise unsafe to move) nodes: never folded, merged, fused or removed. Asked once per
    node (each pass's prune asks again): a rewrite rewires an input only to an output of the same dtype, so
    whether a node reads or makes a reference never changes."""
    stateful = node._stateful
    if stateful is None:
        stateful = node._stateful = registry.is_stateful(node.type) or any(
            t.dtype.is_ref for t in node.inputs) or any(t.dtype.is_ref for t in node._outputs)
    return stateful


class GraphItem:
    """The nodes of one run signature, and what must survive (TF's ``nodes_to_preserve``).

    ``preserved``: names of fetched nodes, target ops and producers of fed tensors: never removed, folded or
    merged away (a rewrite in place keeps the name); ``fed``: the fed tensors.
    """

    def __init__(self, ops: Sequence[Operation], placement: Mapping[Operation, str], feeds: Sequence[Tensor],
                 fetches: Sequence[Tensor], targets: Sequence[Operation]) -> None:
        self.fed = set(feeds)
        nodes = {op: Node.from_op(op, placement[op]) for op in ops}
        for op, node in nodes.items():
            node.inputs = [t if t in self.fed else nodes[t.op]._outputs[t.value_index] for t in op.inputs]
            node.control_inputs = [nodes[c] for c in op.control_inputs if c in nodes]
        self.nodes: dict[str, Node] = {node.name: node for node in nodes.values()}
        self.preserved = ({t.op.name for t in fetches if t not in self.fed} | {op.name for op in targets}
                          | {t.op.name for t in feeds if t.op in nodes})
        self.fetches = list(fetches)
        self._next_id = max((op._id for op in ops), default=0) + 1

    # -- reading --------------------------------------------------------------
    def __iter__(self) -> Iterator[Node]:
        return iter(list(self.nodes.values()))

    def __len__(self) -> int:
        return len(self.nodes)

    def users(self) -> dict[str, set[str]]:
        """``{node name: names of the nodes with a data or control input from it}``."""
        result: dict[str, set[str]] = {name: set() for name in self.nodes}
        for name, node in self.nodes.items():
            for t in node.inputs:
                if isinstance(t, Output):
                    result[t.op.name].add(name)
            for c in node.control_inputs:
                result[c.name].add(name)
        return result

    def data_users(self, node: Node, users: Mapping[str, set[str]]) -> list[tuple[Node, int]]:
        """``(consumer, input index)`` of each data use of ``node`` (``users``: from :meth:`users`)."""
        found: list[tuple[Node, int]] = []
        for name in sorted(users.get(node.name, ())):
            consumer = self.nodes.get(name)
            if consumer is not None:
                found.extend((consumer, i) for i, t in enumerate(consumer.inputs)
                             if isinstance(t, Output) and t.op is node)
        return found

    def control_users(self, node: Node, users: Mapping[str, set[str]]) -> list[Node]:
        return [self.nodes[name] for name in sorted(users.get(node.name, ()))
                if name in self.nodes and node in self.nodes[name].control_inputs]

    def removable(self, node: Node) -> bool:
        """May a pass replace ``node`` by another node (its name disappears)?"""
        return node.name not in self.preserved and not is_stateful(node)

    def ordered(self) -> list[Node]:
        """The nodes by ``_id`` (producers first)."""
        return sorted(self.nodes.values(), key=lambda n: n._id)

    def fetch_outputs(self) -> list[Any]:
        """The fetches as this item's outputs (a fed fetch stays the user's tensor)."""
        return [t if t in self.fed else self.nodes[t.op.name]._outputs[t.value_index] for t in self.fetches]

    # -- rewriting ------------------------------------------------------------
    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def replace(self, old: Node, new: Node, users: dict[str, set[str]]) -> None:
        """Put ``new`` where ``old`` was: each data use of ``old``'s output i reads ``new``'s output i, each
        ``^old`` becomes ``^new``; ``users`` (from :meth:`users`) is kept up to date."""
        self.forward(old, new._outputs, users)
        for consumer in self.control_users(old, users):
            consumer.control_inputs = _dedup(new if c is old else c for c in consumer.control_inputs)
        if new.name != old.name:
            del self.nodes[old.name]
        self.nodes[new.name] = new
        users[new.name] = users.get(new.name, set()) | users.get(old.name, set())
        for t in new.inputs:
            if isinstance(t, Output):
                users.setdefault(t.op.name, set()).add(new.name)
        for c in new.control_inputs:
            users.setdefault(c.name, set()).add(new.name)

    def forward(self, old: Node, outputs: Sequence[Input | None], users: dict[str, set[str]]) -> None:
        """Rewire each data use of ``old``'s output i to ``outputs[i]`` (None: leave it)."""
        for consumer, _ in self.data_users(old, users):
            consumer.inputs = [_forwarded(t, old, outputs) for t in consumer.inputs]
            for t in consumer.inputs:
                if isinstance(t, Output):
                    users.setdefault(t.op.name, set()).add(consumer.name)

    def move_control_uses(self, old: Node, instead: Sequence[Node], users: dict[str, set[str]]) -> None:
        """Replace each ``^old`` by ``^n`` for each ``n`` in ``instead``."""
        for consumer in self.control_users(old, users):
            kept = [c for c in consumer.control_inputs if c is not old]
            consumer.control_inputs = _dedup(kept + [n for n in instead if n is not consumer])
            for n in instead:
                users.setdefault(n.name, set()).add(consumer.name)

    def prune(self) -> None:
        """Drop nodes nothing preserved or stateful depends on (TF's model pruner, after each pass): one walk
        over the live nodes' edges; the node table is rebuilt only when something died."""
        preserved = self.preserved
        stack = [n for n in self.nodes.values() if n.name in preserved or is_stateful(n)]
        live: set[Node] = set(stack)
        while stack:
            node = stack.pop()
            for t in node.inputs:
                if isinstance(t, Output) and t.op not in live:
                    live.add(t.op)
                    stack.append(t.op)
            for c in node.control_inputs:
                if c not in live:
                    live.add(c)
                    stack.append(c)
        if len(live.intersection(self.nodes.values())) < len(self.nodes):
            self.nodes = {name: node for name, node in self.nodes.items() if node in live}


def _forwarded(t: Input, old: Node, outputs: Sequence[Input | None]) -> Input:
    if isinstance(t, Output) and t.op is old:
        new = outputs[t.value_index]
        if new is not None:
            return new
    return t


def _dedup(nodes: Iterable[Node]) -> list[Node]:
    return list(dict.fromkeys(nodes))
