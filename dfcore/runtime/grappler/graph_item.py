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

    def __init__(self, name: str, op_type: str, attrs: dict[str, Any], device: str, node_id: int,
                 output_specs: Sequence[tuple[Any, TensorShape]], original: Operation | None = None) -> None:
        # ``attrs``: a dict of the node's own, kept as given (nothing changes a node's attrs)
        self.name, self.type, self._attrs, self.device, self._id = name, op_type, attrs, device, node_id
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
    merged away (a rewrite in place keeps the name); ``fed``: the fed tensors; ``users``: ``{node name: names
    of the nodes with a data or control input from it}``, kept exact as passes rewrite (TF's ``NodeMap``
    fan-out), so no pass rebuilds it. Passes change the graph only through :meth:`add`, :meth:`remove`,
    :meth:`set_inputs` and the rewrites built on them; each change is noted (:meth:`take_changes`), and a
    node that lost its last reader is a candidate for the next :meth:`prune`.
    """

    def __init__(self, ops: Sequence[Operation], placement: Mapping[Operation, str], feeds: Sequence[Tensor],
                 fetches: Sequence[Tensor], targets: Sequence[Operation]) -> None:
        self.fed = fed = set(feeds)
        fed_ops = {t.op for t in fed}  # asked first: an op's identity hashes faster than a tensor
        nodes = {op: Node.from_op(op, placement[op]) for op in ops}
        for op, node in nodes.items():
            node.inputs = [t if t.op in fed_ops and t in fed else nodes[t.op]._outputs[t.value_index]
                           for t in op.inputs]
            node.control_inputs = [nodes[c] for c in op.control_inputs if c in nodes]
        self.nodes: dict[str, Node] = {node.name: node for node in nodes.values()}
        self.preserved = ({t.op.name for t in fetches if t not in self.fed} | {op.name for op in targets}
                          | {t.op.name for t in feeds if t.op in nodes})
        self.fetches = list(fetches)
        self.users: dict[str, set[str]] = self.rebuilt_users()
        self._changed: dict[str, None] = {}  # names added, removed or rewired since take_changes (in that order)
        self._unread: list[Node] = []  # nodes that lost their last reader or came without one: prune's candidates
        self._pruned = False  # the first prune walks the whole graph; later ones start from _unread
        self._order: list[Node] | None = None  # ordered()'s answer while no node was added or removed

    # -- reading --------------------------------------------------------------
    def __iter__(self) -> Iterator[Node]:
        return iter(list(self.nodes.values()))

    def __len__(self) -> int:
        return len(self.nodes)

    def rebuilt_users(self) -> dict[str, set[str]]:
        """:attr:`users` computed afresh from every node's input lists (what the kept table must equal)."""
        result: dict[str, set[str]] = {name: set() for name in self.nodes}
        for name, node in self.nodes.items():
            for t in node.inputs:
                if isinstance(t, Output):
                    result[t.op.name].add(name)
            for c in node.control_inputs:
                result[c.name].add(name)
        return result

    def data_users(self, node: Node) -> list[tuple[Node, int]]:
        """``(consumer, input index)`` of each data use of ``node``, consumers by name."""
        found: list[tuple[Node, int]] = []
        for name in sorted(self.users.get(node.name, ())):
            consumer = self.nodes[name]
            found.extend((consumer, i) for i, t in enumerate(consumer.inputs)
                         if isinstance(t, Output) and t.op is node)
        return found

    def control_users(self, node: Node) -> list[Node]:
        """The nodes with a control input ``^node``, by name."""
        return [self.nodes[name] for name in sorted(self.users.get(node.name, ()))
                if node in self.nodes[name].control_inputs]

    def removable(self, node: Node) -> bool:
        """May a pass replace ``node`` by another node (its name disappears)?"""
        return node.name not in self.preserved and not is_stateful(node)

    def ordered(self) -> list[Node]:
        """The nodes by ``_id`` (producers first); sorted again only after a node was added or removed."""
        if self._order is None:
            self._order = sorted(self.nodes.values(), key=_position)
        return self._order

    def fetch_outputs(self) -> list[Any]:
        """The fetches as this item's outputs (a fed fetch stays the user's tensor)."""
        return [t if t in self.fed else self.nodes[t.op.name]._outputs[t.value_index] for t in self.fetches]

    def take_changes(self) -> list[str]:
        """Names of the nodes added, removed or rewired since the last call (first change first)."""
        changed, self._changed = list(self._changed), {}
        return changed

    # -- rewriting: every change goes through add, remove and set_inputs -----------
    def add(self, node: Node) -> None:
        """Put ``node`` (a name not in the graph) into the graph, its input lists as they are."""
        self.nodes[node.name] = node
        self.users.setdefault(node.name, set())
        self._link(node, _sources(node))
        self._changed[node.name] = None
        self._unread.append(node)
        self._order = None

    def remove(self, node: Node) -> None:
        """Take ``node`` out of the graph (a pass first moves its readers elsewhere)."""
        del self.nodes[node.name]
        del self.users[node.name]
        self._unlink(node, _sources(node))
        self._changed[node.name] = None
        self._order = None

    def set_inputs(self, node: Node, inputs: list[Input] | None = None,
                   control_inputs: list[Node] | None = None) -> None:
        """Give ``node`` new ``inputs`` and/or ``control_inputs`` lists (None: keep that list)."""
        before = _sources(node)
        if inputs is not None:
            node.inputs = inputs
        if control_inputs is not None:
            node.control_inputs = control_inputs
        after = _sources(node)
        self._changed[node.name] = None
        self._unlink(node, before - after)
        self._link(node, after - before)

    def replace(self, old: Node, new: Node) -> None:
        """Put ``new`` where ``old`` was: each data use of ``old``'s output i reads ``new``'s output i, each
        ``^old`` becomes ``^new``; ``new`` may already be in the graph (CSE keeps the first of equals), and a
        ``new`` of ``old``'s name takes its place in the node table."""
        data, control = self.data_users(old), self.control_users(old)
        if new.name == old.name:
            self._unlink(old, _sources(old))
            self.users[new.name] = set()  # its readers come back as they are rewired below
            self.add(new)  # the same key: its place in the node table stays
        else:
            self.remove(old)
            if self.nodes.get(new.name) is not new:
                self.add(new)
        for consumer in _dedup(c for c, _ in data):
            self.set_inputs(consumer, [_forwarded(t, old, new._outputs) for t in consumer.inputs])
        for consumer in control:
            self.set_inputs(consumer, control_inputs=_dedup(new if c is old else c for c in consumer.control_inputs))

    def forward(self, old: Node, outputs: Sequence[Input | None]) -> None:
        """Rewire each data use of ``old``'s output i to ``outputs[i]`` (None: leave it)."""
        for consumer in _dedup(c for c, _ in self.data_users(old)):
            self.set_inputs(consumer, [_forwarded(t, old, outputs) for t in consumer.inputs])

    def move_control_uses(self, old: Node, instead: Sequence[Node]) -> None:
        """Replace each ``^old`` by ``^n`` for each ``n`` in ``instead``."""
        for consumer in self.control_users(old):
            kept = [c for c in consumer.control_inputs if c is not old]
            self.set_inputs(consumer, control_inputs=_dedup(kept + [n for n in instead if n is not consumer]))

    def prune(self) -> None:
        """Drop nodes nothing preserved or stateful depends on (TF's model pruner, after each pass).

        The first call walks back from the preserved and stateful nodes over every edge (the graph as built
        may hold nodes only a preserved node's consumers read). After it the graph has no dead node, and a
        node dies only when its last reader goes: later calls remove the candidates a rewrite left without a
        reader, then their inputs that lose their last reader in turn (the graph is acyclic: the optimizer
        never runs on control flow), which drops exactly what the full walk would."""
        if not self._pruned:
            self._pruned = True
            live = self._live()
            for node in [n for n in self.nodes.values() if n not in live]:
                self.remove(node)
            self._unread.clear()
            return
        unread, preserved = self._unread, self.preserved
        while unread:
            node = unread.pop()
            if (self.nodes.get(node.name) is node and not self.users[node.name] and node.name not in preserved
                    and not is_stateful(node)):
                self.remove(node)

    def _live(self) -> set[Node]:
        """The preserved and stateful nodes and everything they depend on."""
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
        return live

    def _link(self, reader: Node, sources: Iterable[Node]) -> None:
        users = self.users
        for source in sources:
            users[source.name].add(reader.name)

    def _unlink(self, reader: Node, sources: Iterable[Node]) -> None:
        """``reader`` reads ``sources`` no more (a source already out of the graph is skipped)."""
        nodes, users = self.nodes, self.users
        for source in sources:
            if nodes.get(source.name) is source:
                readers = users[source.name]
                readers.discard(reader.name)
                if not readers:
                    self._unread.append(source)


def _sources(node: Node) -> set[Node]:
    """The nodes ``node`` reads (data or control)."""
    sources = {t.op for t in node.inputs if isinstance(t, Output)}
    sources.update(node.control_inputs)
    return sources


def _position(node: Node) -> int:
    return node._id


def _forwarded(t: Input, old: Node, outputs: Sequence[Input | None]) -> Input:
    if isinstance(t, Output) and t.op is old:
        new = outputs[t.value_index]
        if new is not None:
            return new
    return t


def _dedup(nodes: Iterable[Node]) -> list[Node]:
    return list(dict.fromkeys(nodes))
