"""A partition compiled for the executors: its nodes (kernel, input and output value slots, consumers,
pending counts) and the step-independent bookkeeping the executors read (how many edges read each slot,
which slots hold the device allocator's buffers).

Source: TF's ``common_runtime/executor.cc`` (``ExecutorImpl::Initialize``: each node's ``NodeItem`` with
its kernel, input start, pending count and ``num_output_edges``, computed once per partition graph).
Built by :func:`dfcore.runtime.partition_compiler.compile_partition`; run by
:class:`~dfcore.runtime.executor.Executor` and
:class:`~dfcore.runtime.control_flow_executor.ControlFlowExecutor`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from .step_stats import TimelineLabel
from .straight_line import StraightLine, straight_line

STRAIGHT_LINE_STEP = 10  # the step of a partition that first runs its generated function


class CompiledNode:
    """One node of a compiled partition.

    ``compute(*inputs)`` (or ``compute(ctx, *inputs)`` when ``needs_context``) returns
    the output, or a tuple for several outputs; an async node's ``compute(ctx, done, *inputs)``
    calls ``done(error, value)`` later. ``consumers`` lists consumer node indices, once
    per edge (data or control), matching their pending counts.
    """

    __slots__ = ("name", "op_type", "compute", "in_slots", "out_slot", "num_outputs", "needs_context",
                 "is_async", "consumers", "pending", "source", "label", "preset", "gather", "compute_out", "unread",
                 "releases", "reads_variable", "small")

    def __init__(self, name: str, op_type: str, compute: Callable[..., Any], in_slots: Sequence[Any], out_slot: int,
                 num_outputs: int, needs_context: bool, is_async: bool, source: Any, label: TimelineLabel) -> None:
        self.name = name
        self.op_type = op_type
        self.compute = compute
        self.in_slots = in_slots
        self.out_slot = out_slot
        self.num_outputs = num_outputs
        self.needs_context = needs_context
        self.is_async = is_async
        self.consumers: list[int] = []
        self.pending = 0
        self.source = source
        self.label = label
        self.preset = False
        self.gather = _gatherer(in_slots)
        self.compute_out: Callable[..., Any] | None = None  # compute(allocator, *inputs) (ctx first if needs_context)
        self.unread: tuple[int, ...] = ()  # output slots of an out= kernel that no node reads
        self.releases: tuple[int, ...] = ()  # the input slots it reads that may hold an allocator buffer
        self.reads_variable = False  # takes a variable reference: its outputs may be the variable's buffer
        self.small = False  # its outputs are statically too small to be (or view) a pooled buffer


class CompiledPartition:
    """A partition ready to run: nodes in a deterministic topological order, root indices,
    the initial value slots (constants already materialized, see the compiler), and its
    :class:`~dfcore.runtime.control_flow_info.ControlFlowInfo` if it holds control flow (None: straight line),
    and the :class:`~dfcore.runtime.device_context.DeviceContext` of a real device (None on the host)."""

    def __init__(self, device: str, nodes: list[CompiledNode], initial_values: list[Any], num_scheduled: int,
                 control_flow: Any = None, device_context: Any = None) -> None:
        self.device = device
        self.control_flow = control_flow  # a ControlFlowInfo when the partition has control-flow ops
        self.device_context = device_context
        self.nodes = nodes
        self.initial_values = initial_values
        self.num_slots = len(initial_values)
        self.num_scheduled = num_scheduled
        self.roots = [i for i, node in enumerate(nodes) if node.pending == 0 and not node.preset]
        self.pending_counts = [node.pending for node in nodes]  # each step's executor starts from a copy
        self._straight: StraightLine | None = None
        self._steps = 0  # steps that asked for the straight-line form (it is generated at STRAIGHT_LINE_STEP)
        # TF's executor knows how many edges read each output: a slot is dropped once they all ran. ``owned``
        # marks the slots that may hold an allocator buffer, given back then (see the Executor): an out=
        # kernel's or a _Recv's output, a variable's value (its buffer is retired at commit, if no slot holds
        # it) and the outputs of any node reading such a slot (a Reshape's view of it), unless the slot is
        # statically smaller than the allocator pools (a view is as large as its buffer, but for a slice)
        self.slot_uses = [0] * self.num_slots
        self.owned = [False] * self.num_slots
        for node in nodes:
            if not node.preset:
                for slot in node.in_slots:
                    self.slot_uses[slot] += 1
            if not node.small and (node.compute_out is not None or node.op_type == "_Recv" or node.reads_variable):
                self.owned[node.out_slot:node.out_slot + node.num_outputs] = [True] * node.num_outputs
        changed = True
        while changed:  # to a fixed point: a loop's NextIteration feeds a node listed before it
            changed = False
            for node in nodes:
                outputs = range(node.out_slot, node.out_slot + node.num_outputs)
                if not node.small and any(self.owned[s] for s in node.in_slots) \
                        and not all(self.owned[s] for s in outputs):
                    self.owned[node.out_slot:node.out_slot + node.num_outputs] = [True] * node.num_outputs
                    changed = True
        for node in nodes:
            node.releases = tuple(s for s in node.in_slots if self.owned[s])
            if node.compute_out is not None:
                node.unread = tuple(s for s in range(node.out_slot, node.out_slot + node.num_outputs)
                                    if self.slot_uses[s] == 0)


    def straight_line(self) -> StraightLine | None:
        """The partition as generated functions (:mod:`dfcore.runtime.straight_line`), or None: not
        qualifying, or asked fewer than :data:`STRAIGHT_LINE_STEP` times (generating costs ~30 loop steps
        of the partition, measured: a plan run a few times does not pay for it)."""
        if self._straight is None and self._steps < STRAIGHT_LINE_STEP:
            self._steps += 1
            if self._steps >= STRAIGHT_LINE_STEP:  # (two steps of the plan at once may both generate it)
                self._straight = straight_line(self)
        return self._straight


def _gatherer(slots):
    """A function returning the tuple of ``values[s]`` for ``s`` in ``slots`` (C-speed itemgetter)."""
    if not slots:
        return lambda values: ()
    if len(slots) == 1:
        slot = slots[0]
        return lambda values: (values[slot],)
    return operator.itemgetter(*slots)
