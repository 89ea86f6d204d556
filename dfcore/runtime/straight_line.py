"""A partition with a static schedule run as one generated Python function: one line per node, no queue.

Source: TF's executor runs expensive kernels through its ready queue and inexpensive ones inline
(``common_runtime/executor.cc``, ``inline_ready``); for a partition whose every node is synchronous, the
order is fixed before the step, so dfcore writes it down once: the order the executor's loop would take, as
straight-line code, each line calling the node's kernel on the step's value slots,

    v[7] = k3(v[2], v[5])

then checking the step's abort status (the executor's "stop before the next op"). The pending counts, the
ready queue and the per-node branches of :class:`~dfcore.runtime.executor.Executor` are gone; the values and
the kernels are the same, so the results are too.

A partition qualifies when it holds no control flow and no asynchronous node (collectives, queue waits) but
``_Recv`` nodes without inputs whose values every ``_Send`` of the partition needs: the executor then starts
those receives first, as its loop does, and runs the function once all their values are in (TF's executor
runs the consumers of a received value as it arrives; a ``_Send`` that needs every received value cannot go
out earlier in either form, so waiting for all of them delays nothing another partition waits for), and
whose nodes that need no received value are bookkeeping (:data:`_WHILE_RECEIVING`): other work
the loop runs while the values are on their way (a matmul on ``GPU:0`` that a control edge from ``GPU:1``
only has to finish before), and waiting first would serialize the two devices. The common case is the
feeds' receives at the start of a device's partition. The executor uses the function
only when the step is not traced, has no caller-set deadline (both are checked per node by the executor's
loop) and the device has an allocator (``out=`` kernels write into its buffers, and a slot that may hold
one is given back after its last reader, as the loop's use counts do; see
:mod:`dfcore.runtime.compiled_partition`). A kernel's exception leaves the function; its line number names
the node that raised (:func:`failed_node`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .cancellation import cancelled_error
from .kernel_errors import kernel_error

if TYPE_CHECKING:
    from .compiled_partition import CompiledPartition


class StraightLine:
    """The generated function of one partition and the node behind each of its lines.

    ``run(values, ctx, rendezvous, allocator, deallocate)`` runs every scheduled node but the leading
    ``receives`` (node indices of ``_Recv`` nodes, whose values the executor puts in their slots first) in
    order and returns None, or the index of the node it stopped before when the step's rendezvous was
    aborted; ``out=`` kernels take their buffers from ``allocator``, and each slot that may hold one of its
    buffers goes back through ``deallocate`` after its last reader in that order (as the executor's use
    counts do).
    """

    __slots__ = ("run", "receives", "_node_at_line")

    def __init__(self, run: Callable[..., int | None], node_at_line: dict[int, int],
                 receives: tuple[int, ...] = ()) -> None:
        self.run = run
        self.receives = receives
        self._node_at_line = node_at_line

    def failed_node(self, traceback: TracebackType | None) -> int | None:
        """The index of the node whose kernel raised, from the exception's ``traceback`` (None: not here)."""
        code = self.run.__code__
        while traceback is not None:
            if traceback.tb_frame.f_code is code:
                return self._node_at_line.get(traceback.tb_lineno)
            traceback = traceback.tb_next
        return None


class StraightLineRun:
    """How an :class:`~dfcore.runtime.executor.Executor` runs its partition's :class:`StraightLine`: the leading
    receives first (started as its loop starts async nodes; the last value to arrive wakes it), then the
    function, reporting as the loop does (the same ``done``, the same errors naming the same node)."""

    if TYPE_CHECKING:  # the Executor's state and steps this mixin runs on (runtime/executor.py)
        values: list[Any]
        _ctx: Any
        _allocator: Any
        _partition: CompiledPartition
        _lock: threading.Lock
        _running: bool
        _remaining: int
        _awaiting: int | None
        _receive_error: Any

        def _finish(self, error: Any) -> None: ...
        def _stop_error(self) -> Any: ...
        def _compute_async(self, node: Any, args: Any, completed: Callable[..., None]) -> None: ...
        def _wake(self) -> None: ...

    def _run_straight_line(self, straight):
        """Run the partition's generated function once its leading receives are in (no other async node:
        nothing else wakes this executor)."""
        values, ctx = self.values, self._ctx
        if straight.receives and not self._received(straight.receives):
            return  # the last value to arrive wakes the executor again
        try:
            allocator = self._allocator
            if ctx.rendezvous.abort_status is not None or straight.run(
                    values, ctx, ctx.rendezvous, allocator, allocator.deallocate) is not None:
                self._finish(self._stop_error())
                return
        except Exception as error:  # as in _loop
            node = self._partition.nodes[straight.failed_node(error.__traceback__)]
            self._finish(kernel_error(error, node, node.gather(values), self._partition.device))
            return
        except BaseException as interrupt:  # Ctrl-C on the calling thread, as in _loop
            self._finish(cancelled_error(interrupt))
            raise
        self._remaining = 0
        self._finish(None)

    def _received(self, receives):
        """Start the receives (first call), True once all are settled (the values in their slots, or the
        first error in ``_receive_error``); else the loop is idle until the last one arrives (it wakes it)."""
        if self._awaiting is None:
            self._awaiting = len(receives)
            nodes = self._partition.nodes
            for index in receives:
                self._compute_async(nodes[index], (), self._arrived(nodes[index]))
        with self._lock:
            if self._awaiting:
                self._running = False
                return False
        if self._receive_error is not None:
            self._finish(self._receive_error)
            return False
        return True

    def _arrived(self, node):
        """The completion of a leading receive: its value goes to its slot; the last one wakes the loop."""
        def completed(error, value):
            if error is None:
                self.values[node.out_slot] = value
            with self._lock:
                if error is not None and self._receive_error is None:
                    self._receive_error = error
                assert self._awaiting is not None, "_received counts the receives before starting them"
                self._awaiting -= 1
                last = not self._awaiting
            if last:
                self._wake()
        return completed


def straight_line(partition: CompiledPartition) -> StraightLine | None:
    """The generated function of ``partition``, or None when it does not qualify (module docstring)."""
    if partition.control_flow is not None or partition.device_context is not None:
        return None
    receives = _leading_receives(partition)
    if receives is None:
        return None
    scheduled = [(i, partition.nodes[i]) for i in _topological(partition, receives)]
    if not scheduled:
        return None
    last_reader = {}  # slot -> position of the last node reading it: the slot is given back after that node
    for position, (_, node) in enumerate(scheduled):
        for slot in node.releases:
            last_reader[slot] = position
    lines = ["def run(v, ctx, rendezvous, allocator, deallocate):"]
    kernels: dict[str, Any] = {}
    node_at_line = {}
    for position, (i, node) in enumerate(scheduled):
        inputs = [f"v[{s}]" for s in node.in_slots]
        if node.compute_out is not None:
            kernels[f"k{i}"] = node.compute_out
            args = ["ctx"] * node.needs_context + ["allocator"] + inputs
        else:
            kernels[f"k{i}"] = node.compute
            args = ["ctx"] * node.needs_context + inputs
        call = f"k{i}({', '.join(args)})"
        if node.num_outputs == 1:
            call = f"v[{node.out_slot}] = {call}"
        elif node.num_outputs:
            call = f"v[{node.out_slot}:{node.out_slot + node.num_outputs}] = {call}"
        node_at_line[len(lines) + 1] = i
        lines.append("    " + call)
        for slot in sorted({s for s in node.releases if last_reader[s] == position} | set(node.unread)):
            lines.append(f"    t = v[{slot}]; v[{slot}] = None; deallocate(t); t = None")
        if position + 1 < len(scheduled):
            lines.append(f"    if rendezvous.abort_status is not None: return {scheduled[position + 1][0]}")
    namespace: dict[str, Any] = dict(kernels)
    exec(compile("\n".join(lines) + "\n", f"<straight line of {partition.device}>", "exec"), namespace)
    return StraightLine(namespace["run"], node_at_line, receives)


def _leading_receives(partition: CompiledPartition) -> tuple[int, ...] | None:
    """The ``_Recv`` nodes the executor runs before the function (module docstring), or None when the
    partition does not qualify: another asynchronous node, a ``_Recv`` with inputs, or a ``_Send`` that some
    received value does not reach (the loop sends it before that value arrives: another partition may need
    it to send that very value)."""
    nodes = partition.nodes
    receives = tuple(i for i, node in enumerate(nodes) if node.is_async)
    if any(nodes[i].op_type != "_Recv" or nodes[i].in_slots or nodes[i].pending for i in receives):
        return None
    if receives:
        reached = _receives_reaching(nodes, receives)
        everything = (1 << len(receives)) - 1
        if any((node.op_type == "_Send" and reached[i] != everything)
               or (not reached[i] and node.op_type not in _WHILE_RECEIVING) for i, node in enumerate(nodes)):
            return None
    return receives


#: Op types that may sit in a straight line needing none of its receives: bookkeeping the function runs
#: after them at no cost. Any other such node is work the loop overlaps with the wait (a matmul on GPU:0 while
#: GPU:1's control edge is on its way): waiting for every receive first would serialize two devices' work.
_WHILE_RECEIVING = frozenset({"Const", "VariableV2", "VarHandleOp", "Identity", "ReadVariableOp", "NoOp", "_Arg"})


def _receives_reaching(nodes: list[Any], receives: tuple[int, ...]) -> list[int]:
    """Per node, the receives it depends on, as a bit mask (bit ``k``: ``receives[k]``): masks flow along the
    edges in a topological order (Kahn's), one OR per edge, so the pass is linear in the partition's size."""
    reached = [0] * len(nodes)
    for bit, i in enumerate(receives):
        reached[i] = 1 << bit
    pending = [node.pending for node in nodes]
    ready = [i for i, node in enumerate(nodes) if node.pending == 0]
    while ready:
        i = ready.pop()
        mask = reached[i]
        for consumer in nodes[i].consumers:
            reached[consumer] |= mask
            pending[consumer] -= 1
            if pending[consumer] == 0:
                ready.append(consumer)
    return reached


def _topological(partition: CompiledPartition, receives: tuple[int, ...]) -> list[int]:
    """The order the executor's loop runs the scheduled nodes of a partition, ``receives`` (run before,
    not listed) done first (its ready stack, the first consumer made ready run next): the same order, so
    stateful ops without a dependency between them (a read and an update of one variable) meet as they do
    in the loop, step after step."""
    nodes = partition.nodes
    pending = [node.pending for node in nodes]
    for i in receives:
        for consumer in nodes[i].consumers:
            pending[consumer] -= 1
    ready = [i for i in partition.roots if i not in receives]
    ready += [i for i in range(len(nodes)) if pending[i] == 0 and nodes[i].pending and not nodes[i].preset]
    order: list[int] = []
    index = None
    while index is not None or ready:
        if index is None:
            index = ready.pop()
        order.append(index)
        consumers, index = nodes[index].consumers, None
        for consumer in consumers:
            pending[consumer] -= 1
            if pending[consumer] == 0:
                if index is None:
                    index = consumer
                else:
                    ready.append(consumer)
    return order
