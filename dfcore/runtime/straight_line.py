"""A partition with a static schedule run as generated Python functions: one line per node, no queue.

Source: TF's executor runs expensive kernels through its ready queue and inexpensive ones inline
(``common_runtime/executor.cc``, ``inline_ready``); for a partition whose every node is synchronous, the
order is fixed before the step, so dfcore writes it down once: the order the executor's loop would take, as
straight-line code, each line calling the node's kernel on the step's value slots,

    v[7] = k3(v[2], v[5])

then checking the step's abort status (the executor's "stop before the next op"). The pending counts, the
ready queue and the per-node branches of :class:`~dfcore.runtime.executor.Executor` are gone; the values and
the kernels are the same, so the results are too.

A partition qualifies when it holds no control flow and no asynchronous node but ``_Recv`` nodes without
inputs (the feeds' receives at the start of a device's partition, the gradients a parameter device receives
from its towers). The executor starts those receives first, as its loop does, and the code is split into
*segments* at them: the nodes that need the same set of received values (their *mask*: one bit per receive
they depend on, through any path) form one segment, in the loop's order. A segment runs once the values of
its mask are in, on the thread that brought the last of them, as TF's executor runs the consumers of a
received value as it arrives: the segment of nodes that need no received value runs at once (a matmul on
``GPU:0`` overlaps the wait for ``GPU:1``'s control edge; a tower's variables are sent before the tower's
gradients come back), a ``_Send`` goes out as soon as what it needs is in, and two partitions that feed each
other both ways still finish. Segments whose masks are one inside the other run in that order (a node's mask
holds its inputs' masks); others run in the order their receives arrive.

The executor uses the functions only when the step is not traced, has no caller-set deadline (both are
checked per node by the executor's loop) and the device has an allocator (``out=`` kernels write into its
buffers, and a slot that may hold one is given back after its last reader, as the loop's use counts do: in
the last segment that reads it when every other reader's segment runs before that one, else once every
segment has run; see :mod:`dfcore.runtime.compiled_partition`); any other slot is cleared after its last
reader there too, as TF's executor clears an input entry after its last use (a chain of small ops then frees
each array as it goes and numpy hands the next op that memory again: the 1,000-add chain took 16% less CPU
time than with every value kept to the step's end, measured). A kernel's exception leaves the function;
its line number names the node that raised (:meth:`StraightLine.failed_node`). How the executor runs the
segments: :mod:`dfcore.runtime.straight_line_run`.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .compiled_partition import CompiledPartition


class StraightLine:
    """The generated functions (segments) of one partition and the node behind each of their lines.

    ``segments[s](values, ctx, rendezvous, allocator, deallocate)`` runs segment ``s``'s nodes in order and
    returns None, or the index of the node it stopped before when the step's rendezvous was aborted; ``out=``
    kernels take their buffers from ``allocator``, and slots go back through ``deallocate`` (module
    docstring). ``receives``: the node indices of the partition's ``_Recv`` nodes (bit ``k`` of a mask is
    ``receives[k]``), which the executor runs first, putting their values in their slots. ``masks[s]``: the
    receives segment ``s`` waits for; segments are listed so that one whose mask lies inside another's
    comes first. ``waiting[k]``: the segments whose mask holds bit ``k``. ``late``: the slots given back once
    every segment has run. ``counts[s]``: how many receives segment ``s`` waits for; ``ready``: the segments
    that wait for none.
    """

    __slots__ = ("segments", "receives", "masks", "waiting", "counts", "ready", "late", "_codes", "_node_at_line",
                 "_segment_of")

    def __init__(self, segments: list[Callable[..., int | None]], node_at_line: dict[int, int],
                 segment_of: dict[int, int], receives: tuple[int, ...] = (), masks: tuple[int, ...] = (0,),
                 late: tuple[int, ...] = ()) -> None:
        self.segments = segments
        self._segment_of = segment_of
        self.receives = receives
        self.masks = masks
        self.waiting = tuple(tuple(s for s, mask in enumerate(masks) if mask >> bit & 1)
                             for bit in range(len(receives)))
        self.counts = tuple(mask.bit_count() for mask in masks)  # per segment, how many receives it waits for
        self.ready = tuple(s for s, mask in enumerate(masks) if not mask)  # the segments waiting for none
        self.late = late
        self._codes = frozenset(segment.__code__ for segment in segments)
        self._node_at_line = node_at_line

    def failed_node(self, traceback: TracebackType | None) -> int | None:
        """The index of the node whose kernel raised, from the exception's ``traceback`` (None: not here)."""
        while traceback is not None:
            if traceback.tb_frame.f_code in self._codes:
                return self._node_at_line.get(traceback.tb_lineno)
            traceback = traceback.tb_next
        return None

    def waits_for(self, node: int) -> tuple[int, ...]:
        """The receives (node indices) whose values the segment of node ``node`` waits for.

        Raises:
            KeyError: ``node`` is not in a segment (a receive, or a preset constant).
        """
        mask = self.masks[self._segment_of[node]]
        return tuple(index for bit, index in enumerate(self.receives) if mask >> bit & 1)


def straight_line(partition: CompiledPartition) -> StraightLine | None:
    """The generated functions of ``partition``, or None when it does not qualify (module docstring)."""
    if partition.control_flow is not None or partition.device_context is not None:
        return None
    nodes = partition.nodes
    receives = tuple(i for i, node in enumerate(nodes) if node.is_async)
    if any(nodes[i].op_type != "_Recv" or nodes[i].in_slots or nodes[i].pending for i in receives):
        return None
    reached = _receives_reaching(nodes, receives)
    order = _topological(partition, receives)
    if not order:
        return None
    masks = sorted(dict.fromkeys(reached[i] for i in order), key=lambda mask: mask.bit_count())
    segment_of = {mask: s for s, mask in enumerate(masks)}
    scheduled: list[list[int]] = [[] for _ in masks]
    for i in order:
        scheduled[segment_of[reached[i]]].append(i)
    releases, late = _last_reads(scheduled, masks, lambda i: nodes[i].releases)
    preset = {node.out_slot for node in nodes if node.preset}
    drops = _last_reads(scheduled, masks, lambda i: [slot for slot in nodes[i].in_slots if slot not in preset
                                                     and slot not in nodes[i].releases])[0]
    lines: list[str] = []
    kernels: dict[str, Any] = {}
    node_at_line = {}
    for s, segment in enumerate(scheduled):
        lines.append(f"def s{s}(v, ctx, rendezvous, allocator, deallocate):")
        for position, i in enumerate(segment):
            node = nodes[i]
            inputs = [f"v[{slot}]" for slot in node.in_slots]
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
            for slot in sorted(releases.get(i, set()) | set(node.unread)):
                lines.append(f"    t = v[{slot}]; v[{slot}] = None; deallocate(t); t = None")
            if i in drops:
                lines.append("    " + " = ".join(f"v[{slot}]" for slot in sorted(drops[i])) + " = None")
            if position + 1 < len(segment):
                lines.append(f"    if rendezvous.abort_status is not None: return {segment[position + 1]}")
    namespace: dict[str, Any] = dict(kernels)
    exec(compile("\n".join(lines) + "\n", f"<straight line of {partition.device}>", "exec"), namespace)
    return StraightLine([namespace[f"s{s}"] for s in range(len(scheduled))], node_at_line,
                        {i: s for s, segment in enumerate(scheduled) for i in segment}, receives, tuple(masks), late)


def _last_reads(scheduled: list[list[int]], masks: list[int],
                slots_read: Callable[[int], Any]) -> tuple[dict[int, set[int]], tuple[int, ...]]:
    """Where each slot ``slots_read(node)`` names is read for the last time: ``({node: slots after it}, late
    slots)``. A slot's last read is its last reader in a segment every other reader's segment runs before
    (its mask lies inside this one's); else it is late (the order of its readers is known only in the step)."""
    readers: dict[int, list[tuple[int, int]]] = {}  # slot -> [(segment, node)] in order
    for s, segment in enumerate(scheduled):
        for i in segment:
            for slot in slots_read(i):
                readers.setdefault(slot, []).append((s, i))
    after: dict[int, set[int]] = {}
    late = []
    for slot, where in readers.items():
        last_segment, last_node = where[-1]
        mask = masks[last_segment]
        if all(masks[s] & ~mask == 0 for s, _ in where):
            after.setdefault(last_node, set()).add(slot)
        else:
            late.append(slot)
    return after, tuple(sorted(late))


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
