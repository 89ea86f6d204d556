"""Split one run's placed ops into per-device graphs joined by ``_Send``/``_Recv`` pairs.

Source: ``tensorflow/core/graph/graph_partition.cc`` (``Partition``) and
``tensorflow/core/graph/subgraph.cc`` (feeds and fetches, made by
:mod:`dfcore.runtime.subgraph`). Pure: the user's Graph is read, never changed; the
result is node records.

Rules (TF's):
- a data edge between devices gets ``_Send`` (attr ``T``) on the source device and
  ``_Recv`` (attr ``tensor_type``) on the destination, both with ``tensor_name``
  ``edge_<edge id>_<src name>``, ``send_device``, ``send_device_incarnation``,
  ``recv_device``, ``client_terminated=False``, ``_src``, ``_dst``;
- one pair per (source tensor, destination device): later consumers reuse the
  ``_Recv`` (``DupRecvKey``), except reference edges, which are never shared and
  whose ``_Recv`` waits (control inputs) for the consumer's other inputs;
- a control edge between devices: a dummy ``Const`` (float32, shape [0]) named
  ``<src>/ctrl/_k`` with ``^src``, sent and received, then an ``Identity`` on the
  destination that the consumer takes as a control input;
- inserted nodes are named ``<src>/_k`` with one counter over the whole call,
  send before recv (``MatMul/_0``, ``MatMul/_1``);
- a fed tensor arrives through its feed endpoint on the client device and a fetched
  one leaves through its fetch endpoint there (``_Arg``/``_Retval`` in a normal run,
  client-terminated ``_Recv``/``_Send`` in a partial run), with a regular pair where
  the other end is elsewhere: a fetch computed on another device costs one pair;
- control-flow ops move next to their data (a ``Switch``/``Exit`` to its input's device, an
  ``Enter``/``NextIteration`` to its consumer's), and a loop whose body spans devices gets a copy
  of its control on each device that receives inside it (:mod:`dfcore.runtime.partition_control_flow`).

Edge ids (TF uses its Graph's edge ids): edges are numbered from 0 in the order
TF's rewrite creates them: first the edges among the run's ops (consumer op id
order; data inputs by index, then control inputs), then the edges out of feed
endpoints (feed order; consumers by op id, then input index), then the edges
into fetch endpoints (fetch order). Nodes are visited in op-id order, then
feeds, then fetches, each partition listing nodes in the order they are created.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import errors
from ..framework import dtypes
from ..framework.graph_def import make_graph_def, make_node_def
from ..framework.operation import Operation
from ..framework.protos import GraphDef, NodeDef
from .partition_control_flow import add_control_loops, colocate_control_flow
from .subgraph import check_endpoints, endpoint, send_recv_attrs

CLIENT_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


@dataclasses.dataclass(frozen=True)
class PartitionNode:
    """One node of a partition graph (a NodeDef record).

    ``inputs`` are NodeDef strings: ``"src"`` (output 0), ``"src:1"``, ``"^ctrl"``;
    ``original`` is the Operation the node came from (or, for a node the graph optimizer made, that
    :class:`~dfcore.runtime.grappler.graph_item.Node`), None for inserted nodes.
    """

    name: str
    op: str
    inputs: tuple[str, ...]
    device: str
    attrs: dict[str, Any] = dataclasses.field(hash=False)
    original: Operation | None = dataclasses.field(default=None, compare=False)

    def get_attr(self, name: str) -> Any:
        """The attr ``name``; raises ValueError (TF's wording) if absent."""
        try:
            return self.attrs[name]
        except KeyError:
            raise ValueError(f"Node '{self.name}' has no attr named '{name}'.") from None

    @property
    def node_def(self) -> NodeDef:
        """This node as TF's ``NodeDef`` message, as ``Operation.node_def``."""
        return make_node_def(self.name, self.op, self.inputs, self.device, self.attrs)


@dataclasses.dataclass(frozen=True)
class PartitionGraph:
    """The nodes one device runs in one step."""

    device: str
    nodes: tuple[PartitionNode, ...]

    def as_graph_def(self) -> GraphDef:
        """This partition as TF's ``GraphDef`` message (what ``RunMetadata.partition_graphs`` holds)."""
        return make_graph_def(n.node_def for n in self.nodes)

    def node(self, name: str) -> PartitionNode:
        """The node called ``name``; raises KeyError."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)


@dataclasses.dataclass(frozen=True)
class PartitionStats:
    """Counts of one partitioning.

    ``data_pairs``/``control_pairs``: pairs inserted (TF's ``data=``/``controls=``);
    ``cross_device_*_edges``: edges between devices, shared or not;
    ``transfers_saved_by_dedup``: cross-device edges served by an existing pair.
    """

    cross_device_data_edges: int
    cross_device_control_edges: int
    data_pairs: int
    control_pairs: int
    transfers_saved_by_dedup: int

    @property
    def pairs_inserted(self) -> int:
        return self.data_pairs + self.control_pairs

    def vlog_line(self) -> str:
        """TF's ``VLOG(1)`` summary: ``Added send/recv: controls=<n>, data=<m>``."""
        return f"Added send/recv: controls={self.control_pairs}, data={self.data_pairs}"


class Partitions(dict):
    """``{device name: PartitionGraph}`` plus ``stats`` (:class:`PartitionStats`)."""

    def __init__(self, graphs: Mapping[str, PartitionGraph], stats: PartitionStats) -> None:
        super().__init__(graphs)
        self.stats = stats


class _Builder:
    """A mutable node while partitioning."""

    __slots__ = ("name", "op", "inputs", "device", "attrs", "original")

    def __init__(self, name, op, device, attrs, original=None, inputs=()):
        self.name, self.op, self.device, self.attrs, self.original = name, op, device, attrs, original
        self.inputs = list(inputs)

    def freeze(self):
        return PartitionNode(self.name, self.op, tuple(self.inputs), self.device, self.attrs, self.original)


def _input_string(name, index):
    return name if index == 0 else f"{name}:{index}"


class _Partitioner:
    def __init__(self):
        self.graphs = {}
        self.counter = 0
        self.dup_recv = {}
        self.data_edges = self.control_edges = self.data_pairs = self.control_pairs = self.saved = 0

    def new_name(self, prefix):
        name = f"{prefix}/_{self.counter}"
        self.counter += 1
        return name

    def add(self, node):
        self.graphs.setdefault(node.device, []).append(node)
        return node

    def connect(self, dst, src, index, edge_id, dtype, is_ref, ref_recvs, read_inputs):
        """Wire edge ``src:index → dst`` (index -1: control), inserting a pair across devices."""
        if src.device == dst.device:
            dst.inputs.append(f"^{src.name}" if index < 0 else _input_string(src.name, index))
            if index < 0 or not is_ref:
                read_inputs.append(src.name)
            return
        if index < 0:
            self.control_edges += 1
        else:
            self.data_edges += 1
        key = (src.name, index, dst.device)
        if key in self.dup_recv:
            recv_name = self.dup_recv[key]
            dst.inputs.append(f"^{recv_name}" if index < 0 else recv_name)
            read_inputs.append(recv_name)
            self.saved += 1
            return
        tensor_name = f"edge_{edge_id}_{src.name}"
        send_from = _input_string(src.name, index)
        if index < 0:
            dummy = self.add(_Builder(self.new_name(f"{src.name}/ctrl"), "Const", src.device,
                                      {"dtype": dtypes.float32, "value": np.zeros((0,), np.float32)},
                                      inputs=[f"^{src.name}"]))
            send_from, dtype = dummy.name, dtypes.float32
        attrs = {**send_recv_attrs(tensor_name, src.device, dst.device, False), "_src": src.name, "_dst": dst.name}
        self.add(_Builder(self.new_name(src.name), "_Send", src.device, {"T": dtype, **attrs}, inputs=[send_from]))
        recv = self.add(_Builder(self.new_name(src.name), "_Recv", dst.device, {"tensor_type": dtype, **attrs}))
        if index < 0:
            identity = self.add(_Builder(self.new_name(src.name), "Identity", dst.device, {"T": dtype},
                                         inputs=[recv.name]))
            self.control_pairs += 1
            self.dup_recv[key] = identity.name
            dst.inputs.append(f"^{identity.name}")
            read_inputs.append(identity.name)
            return
        self.data_pairs += 1
        if is_ref:
            ref_recvs.append(recv)
        else:
            self.dup_recv[key] = recv.name
            read_inputs.append(recv.name)
        dst.inputs.append(recv.name)

    def stats(self):
        return PartitionStats(self.data_edges, self.control_edges, self.data_pairs, self.control_pairs, self.saved)


def partition(ops: Sequence[Operation] | Sequence[Any], placement: Mapping[Any, str], feeds: Sequence[Any] = (),
              fetches: Sequence[Any] = (), client_device: str = CLIENT_DEVICE, call_frame: bool = True) -> Partitions:
    """Partition the placed ops of one run by device (TF's ``Partition`` after ``RewriteGraphForExecution``).

    Args:
        ops: the run's Operations (pruned: every input is produced by one of them or fed), or the graph
            optimizer's nodes standing for them.
        placement: op → full device name (a :class:`~dfcore.runtime.placer.Placement` or dict).
        feeds: the fed Tensors; fetches: the fetched Tensors (duplicates are fetched once); a feed's
            (fetch's) position is its ``index`` (the session passes both sorted by name, as TF).
        client_device: where feeds arrive and fetches leave (a name or a ``Device``).
        call_frame: True: ``_Arg``/``_Retval`` endpoints (``Session.run``); False: client-terminated
            ``_Recv``/``_Send`` (``partial_run``).
    Returns:
        :class:`Partitions`: ``{device: PartitionGraph}`` with ``.stats``.
    Raises:
        InvalidArgumentError: a feed given twice, a tensor both fed and fetched
            (``subgraph.cc``'s wording), an input neither produced in the run nor fed, or a loop
            whose Enter or NextIteration stays off its Merge's device (see ``colocate_control_flow``).
    """
    client = getattr(client_device, "name", client_device)
    ops = sorted(set(ops), key=lambda op: op._id)
    feeds, fetches = list(feeds), list(dict.fromkeys(fetches))
    check_endpoints(feeds, fetches)
    fed = set(feeds)
    fed_ops = {t.op for t in feeds}  # asked first: an op's identity hashes faster than a tensor
    part = _Partitioner()
    devices = colocate_control_flow(ops, placement, fed)
    # an optimized graph's node names the op whose kernel it runs (itself, when the optimizer made it)
    nodes = {op: _Builder(op.name, op.type, devices[op], op.attrs, getattr(op, "kernel_source", op)) for op in ops}

    # Edge ids in TF's creation order (see the module docstring): the edges among the run's ops are numbered
    # as the main loop below meets them (0, 1, ...), so only feed and fetch edges are kept here.
    num_op_edges = 0
    feed_consumers: dict[Any, list[Any]] = {t: [] for t in feeds}
    for op in ops:
        for i, tensor in enumerate(op.inputs):
            if tensor.op in fed_ops and tensor in fed:
                feed_consumers[tensor].append((op, i))
            elif tensor.op in nodes:
                num_op_edges += 1
            else:
                raise _missing_input(op, tensor.name)
        num_op_edges += len(_controls(op, nodes, fed))
    edge_ids: dict[Any, int] = {}
    next_edge = num_op_edges
    feed_nodes = {}
    for index, tensor in enumerate(feeds):
        if feed_consumers[tensor]:
            name, op_type, attrs = endpoint("feed", tensor, index, client, call_frame)
            feed_nodes[tensor] = _Builder(name, op_type, client, attrs)
        for consumer in feed_consumers[tensor]:
            edge_ids[consumer], next_edge = next_edge, next_edge + 1
    fetch_nodes = []
    for index, tensor in enumerate(fetches):
        if tensor.op not in nodes:
            raise _missing_input(None, tensor.name)
        name, op_type, attrs = endpoint("fetch", tensor, index, client, call_frame)
        fetch_nodes.append((tensor, _Builder(name, op_type, client, attrs)))
        edge_ids[tensor], next_edge = next_edge, next_edge + 1

    op_edge = 0
    for op in ops:
        dst = part.add(nodes[op])
        ref_recvs: list[Any] = []
        read_inputs: list[Any] = []
        for i, tensor in enumerate(op.inputs):
            if tensor.op in fed_ops and tensor in fed:
                part.connect(dst, feed_nodes[tensor], 0, edge_ids[(op, i)], tensor.dtype.base_dtype, False,
                             ref_recvs, read_inputs)
                continue
            dtype = tensor.dtype
            part.connect(dst, nodes[tensor.op], tensor.value_index, op_edge, dtype.base_dtype, dtype.is_ref,
                         ref_recvs, read_inputs)
            op_edge += 1
        for control in _controls(op, nodes, fed):
            part.connect(dst, nodes[control], -1, op_edge, None, False, ref_recvs, read_inputs)
            op_edge += 1
        for recv in ref_recvs:
            recv.inputs.extend(f"^{name}" for name in read_inputs)
    add_control_loops(part, ops, nodes, fed, next_edge)
    for node in feed_nodes.values():
        part.add(node)
    for tensor, send in fetch_nodes:
        part.add(send)
        src = nodes[tensor.op]
        part.connect(send, src, tensor.value_index, edge_ids[tensor], tensor.dtype.base_dtype,
                     tensor.dtype.is_ref, [], [])
    graphs = {device: PartitionGraph(device, tuple(n.freeze() for n in built)) for device, built in part.graphs.items()}
    return Partitions(graphs, part.stats())


def _controls(op, nodes, fed):
    """``op``'s control inputs in this run; one on an op whose outputs are all fed is
    dropped (the feed is there from the start; TF moves the edge onto the feed's _Recv)."""
    controls = []
    for control in op.control_inputs:
        if control in nodes:
            controls.append(control)
        elif not (control.outputs and all(t in fed for t in control.outputs)):
            raise _missing_input(op, f"^{control.name}")
    return controls


def _missing_input(op, input_name):
    where = f" for {op.name}" if op is not None else ""
    return errors.InvalidArgumentError(
        None, op, f"Incomplete graph, missing input {input_name}{where}: it is neither produced by an op of "
        "this run nor fed")
