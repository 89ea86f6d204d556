"""Loops across devices: a copy of each loop's control on every device its iterations reach.

Source: TF's ``core/graph/graph_partition.cc`` (``AddControlFlow``, ``AddControlLoop``) and
Yu et al., "Dynamic Control Flow in Large-Scale Machine Learning", EuroSys 2018, §4.2. When
a loop's body has ops on several devices, the ``_Recv`` s inside the loop on a device need to
run once per iteration, in the loop's frame. So each such device gets its own *control loop*
for the frame (named ``<frame>/_cloop_<device>/…``)::

    Const (or the parent frame's control pivot) → Enter → Merge ← NextIteration ← Identity (pivot)
                                                     ↓                 ↑
                                                  Switch(Merge, LoopCond) ─┘

with the frame's ``LoopCond`` sent to it each iteration (``_Send``/``_Recv``, keys
``<frame_id>:<iter>``), and every ``_Recv`` of the frame on the device takes a control input
from the control loop's ``Merge``. The control loop ends when the ``LoopCond`` it receives is
false; in that last iteration the body's sends carry dead values, so the receivers run dead.

Before that, as TF's ``OptimizeControlFlowColocation``, the partitioner moves control-flow ops next
to their data (whatever the placer chose; the placement itself is unchanged): a ``Switch`` or ``Exit``
to its data input's device, a non-reference ``Enter`` or a ``NextIteration`` to its first data
consumer's (a loop ``Merge``). So a loop variable's ``Enter``, ``Merge``, ``NextIteration``, ``Switch``
and ``Exit`` always share a device; a split that remains (a reference ``Enter``) is refused at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.operation import Operation
from .control_flow_info import assign_frames

_CONTROL_LOOP = "/_cloop_"


def control_loop_prefix(frame: str, device: str) -> str:
    """The name prefix of the control loop of ``frame`` on ``device``: ``<frame>/_cloop_<TYPE>_<i>``."""
    tag = device.rsplit("/", 1)[-1].replace("device:", "").replace(":", "_")
    return f"{frame}{_CONTROL_LOOP}{tag}"


def control_loop_frame(node_name: str) -> str | None:
    """The frame whose control loop ``node_name`` belongs to (see :func:`control_loop_prefix`), else None."""
    frame, found, _ = node_name.rpartition(_CONTROL_LOOP)
    return frame if found else None


def colocate_control_flow(ops: Sequence[Operation], placement: Mapping[Operation, str],
                          fed: set) -> dict[Operation, str]:
    """The device each op of the run is partitioned on: ``placement`` with control-flow ops moved next to
    their data (see the module docstring; TF's ``graph_partition.cc``, ``OptimizeControlFlowColocation``).

    Args:
        ops: the run's ops in creation (op id) order, so a ``Switch`` comes after its data input and an ``Exit``
            after its ``Switch``; placement: op → full device name; fed: the fed tensors (no data edge).
    Raises:
        InvalidArgumentError: a loop ``Merge`` whose ``Enter`` or ``NextIteration`` still sits on another device
            (a reference ``Enter``, which TF leaves in place too): dfcore cannot run such a frame.
    """
    devices = {op: placement[op] for op in ops}
    if not any(registry.control_flow_kind(op.type) is not None for op in ops):
        return devices
    in_run = set(devices)
    for op in ops:
        kind = registry.control_flow_kind(op.type)
        if kind in ("switch", "exit"):
            data = op.inputs[0]
            if data not in fed and data.op in in_run:
                devices[op] = devices[data.op]
        elif kind == "next_iteration" or (kind == "enter" and not op.inputs[0].dtype.is_ref):
            consumer = _first_data_consumer(op, in_run, fed)
            if consumer is not None:
                devices[op] = placement[consumer]
    _check_loop_merges(ops, devices, fed)
    return devices


def _first_data_consumer(op, in_run, fed):
    consumers = [c for t in op.outputs if t not in fed for c in t.consumers() if c in in_run]
    return min(consumers, key=lambda c: c._id, default=None)


def _check_loop_merges(ops, devices, fed):
    for op in ops:
        if registry.control_flow_kind(op.type) != "merge":
            continue
        linked = [t.op for t in op.inputs if t not in fed and t.op in devices
                  and registry.control_flow_kind(t.op.type) in ("enter", "next_iteration")]
        if not any(registry.control_flow_kind(o.type) == "next_iteration" for o in linked):
            continue  # a cond's Merge: its inputs may come from any device
        for other in linked:
            if devices[other] != devices[op]:
                raise errors.InvalidArgumentError(
                    None, op, f"Loop merge '{op.name}' on {devices[op]} has its {other.type} '{other.name}' on "
                    f"{devices[other]}: dfcore runs a loop variable's Enter, Merge and NextIteration on one device; "
                    "place them together")


def op_frames(ops: Sequence[Operation], fed: set) -> tuple[dict[Operation, str], dict[str, str], dict[str, Any]]:
    """The static frame of each op's *outputs* (a child frame for an ``Enter``, the parent for an ``Exit``),
    each frame's parent, and each frame's ``LoopCond`` op.

    Raises:
        InvalidArgumentError: as :func:`~dfcore.runtime.control_flow_info.assign_frames`.
    """
    index = {op: i for i, op in enumerate(ops)}
    kinds = [registry.control_flow_kind(op.type) for op in ops]
    out_edges: list[list[tuple[int, int]]] = [[] for _ in ops]
    has_input = [False] * len(ops)
    for i, op in enumerate(ops):
        for tensor in op.inputs:
            if tensor not in fed and tensor.op in index:
                out_edges[index[tensor.op]].append((i, tensor.value_index))
                has_input[i] = True
        for control in op.control_inputs:
            if control in index:
                out_edges[index[control]].append((i, -1))
                has_input[i] = True
    enter_frames = {i: op.get_attr("frame_name") for i, op in enumerate(ops) if kinds[i] == "enter"}
    roots = [i for i in range(len(ops)) if not has_input[i]]
    frames, parent, _, _ = assign_frames([op.name for op in ops], kinds, enter_frames, out_edges, roots)
    out_frames = {}
    for i, op in enumerate(ops):
        out_frames[op] = enter_frames[i] if kinds[i] == "enter" else parent[frames[i]] if kinds[i] == "exit" \
            else frames[i]
    loop_conds = {frames[i]: op for i, op in enumerate(ops) if kinds[i] == "loop_cond"}
    return out_frames, parent, loop_conds


def add_control_loops(partitioner: Any, ops: Sequence[Operation], nodes: Mapping[Operation, Any], fed: set,
                      next_edge_id: int) -> None:
    """Give every ``_Recv`` inside a loop frame its device's control loop (see the module docstring).

    Args:
        partitioner: the partitioning in progress (``dfcore.runtime.partition._Partitioner``).
        ops, nodes: the run's ops and their partition node builders.
        fed: the fed tensors; next_edge_id: the first free edge id (for the LoopCond transfers).
    Raises:
        UnimplementedError: a loop frame spanning devices has no ``LoopCond``.
    """
    if not any(registry.control_flow_kind(op.type) == "enter" for op in ops):
        return
    out_frames, parent, loop_conds = op_frames(ops, fed)
    by_name = {op.name: op for op in ops}
    builder = _ControlLoops(partitioner, nodes, parent, loop_conds, ops, next_edge_id)
    for device, built in list(partitioner.graphs.items()):
        for node in list(built):
            if node.op != "_Recv" or node.attrs.get("client_terminated"):
                continue
            src = by_name.get(node.attrs.get("_src"))
            frame = out_frames.get(src, "") if src is not None else ""
            if frame:
                node.inputs.append(f"^{builder.loop(frame, device).merge}")


class _Loop:
    def __init__(self, merge: str, pivot: str) -> None:
        self.merge = merge
        self.pivot = pivot


class _ControlLoops:
    def __init__(self, partitioner, nodes, parent, loop_conds, ops, next_edge_id):
        self.part = partitioner
        self.nodes = nodes
        self.parent = parent
        self.loop_conds = loop_conds
        self.parallel = {op.get_attr("frame_name"): op.get_attr("parallel_iterations") for op in ops
                         if registry.control_flow_kind(op.type) == "enter"}
        self.edge_id = next_edge_id
        self.loops: dict[tuple[str, str], _Loop] = {}

    def loop(self, frame: str, device: str) -> _Loop:
        key = (frame, device)
        if key not in self.loops:
            self.loops[key] = self._build(frame, device)
        return self.loops[key]

    def _build(self, frame, device):
        from .partition import _Builder  # partition imports this module

        loop_cond = self.loop_conds.get(frame)
        if loop_cond is None:
            raise errors.UnimplementedError(None, None, f"Loop frame '{frame}' spans devices but has no LoopCond")
        part = self.part
        prefix = control_loop_prefix(frame, device)
        f32 = dtypes.float32
        if self.parent[frame]:
            entry = self.loop(self.parent[frame], device).pivot
        else:
            entry = part.add(_Builder(part.new_name(prefix), "Const", device,
                                      {"dtype": f32, "value": np.zeros((0,), np.float32)})).name
        enter = part.add(_Builder(part.new_name(prefix), "Enter", device,
                                  {"T": f32, "frame_name": frame, "is_constant": False,
                                   "parallel_iterations": self.parallel.get(frame, 10)}, inputs=[entry]))
        merge = part.add(_Builder(part.new_name(prefix), "Merge", device, {"T": f32, "N": 2}, inputs=[enter.name]))
        switch = part.add(_Builder(part.new_name(prefix), "Switch", device, {"T": f32}, inputs=[merge.name]))
        self.edge_id += 1
        part.connect(switch, self.nodes[loop_cond], 0, self.edge_id, dtypes.bool, False, [], [])
        received = switch.inputs[-1]
        if received != loop_cond.name:  # the LoopCond's _Recv (shared by the device's loops of this frame)
            recv = next(n for n in part.graphs[device] if n.name == received)
            if f"^{merge.name}" not in recv.inputs:
                recv.inputs.append(f"^{merge.name}")
        pivot = part.add(_Builder(part.new_name(prefix), "Identity", device, {"T": f32}, inputs=[f"{switch.name}:1"]))
        nxt = part.add(_Builder(part.new_name(prefix), "NextIteration", device, {"T": f32}, inputs=[pivot.name]))
        merge.inputs.append(nxt.name)
        return _Loop(merge.name, pivot.name)
