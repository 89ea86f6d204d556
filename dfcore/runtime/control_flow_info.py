"""The static control-flow structure of a compiled partition: which frame each node runs in.

Source: TF's ``core/graph/control_flow.cc`` (``BuildControlFlowInfo``) and
``common_runtime/executor.cc`` (``ExecutorImpl::Initialize``). Walking the graph from its
roots (nodes without inputs, in the root frame ``""``): an ``Enter``'s consumers are in
the child frame its ``frame_name`` names (whose parent is the ``Enter``'s frame), an
``Exit``'s consumers in the parent of its frame, every other node's consumers in its own
frame. A node reached from two different frames makes the graph invalid (TF's message).

A ``Merge`` fed by a ``NextIteration`` is a *loop merge*: in each iteration exactly one of
its data inputs arrives (the ``Enter`` in iteration 0, the back edge after), so it waits for
one; any other ``Merge`` waits for one live input or for all of them dead.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence

from .. import errors
from ..framework import registry


@dataclasses.dataclass(frozen=True)
class ControlFlowInfo:
    """Per-node control-flow facts of one partition (indices are the partition's node indices).

    Attributes:
        kinds: the control-flow kind of each node (``"merge"``, ``"enter"`` …) or None.
        runs_dead: nodes whose kernel runs even when they are dead (``_Send``).
        out_edges: per node, ``(consumer, output port)`` per edge; port -1 for a control edge.
        pending: per node, the inputs it waits for: all edges, but only control edges for a Merge.
        merge_inputs: per Merge, how many dead data inputs make it run dead (1 for a loop merge).
        frames: the static frame name of each node (``""``: the root frame).
        frame_parent: frame name → its parent frame's name.
        frame_enters: frame name → how many ``Enter`` nodes of this partition feed it.
        frame_exits: frame name → its ``Exit`` nodes.
        roots: nodes without inputs (ready when the step starts).
    """

    kinds: tuple[str | None, ...]
    runs_dead: frozenset[int]
    out_edges: tuple[tuple[tuple[int, int], ...], ...]
    pending: tuple[int, ...]
    merge_inputs: dict[int, int]
    frames: tuple[str, ...]
    frame_parent: dict[str, str]
    frame_enters: dict[str, int]
    frame_exits: dict[str, tuple[int, ...]]
    roots: tuple[int, ...]


def has_control_flow(op_types: Sequence[str]) -> bool:
    """True if any of ``op_types`` is a control-flow primitive (the executor then tracks frames)."""
    return any(registry.control_flow_kind(t) is not None for t in op_types)


def build_control_flow_info(nodes: Sequence, edges: Sequence[tuple[int, int, int]]) -> ControlFlowInfo:
    """The :class:`ControlFlowInfo` of compiled ``nodes`` joined by ``edges`` ``(src, port, dst)``
    (port -1: control).

    Raises:
        InvalidArgumentError: a node has inputs from different frames, or an ``Exit`` is outside
            any loop (TF's wording names the nodes and frames).
    """
    n = len(nodes)
    kinds = tuple(registry.control_flow_kind(node.op_type) for node in nodes)
    out_edges: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    controls, datas = [0] * n, [0] * n
    loop_merges = set()
    for src, port, dst in edges:
        out_edges[src].append((dst, port))
        if port < 0:
            controls[dst] += 1
        else:
            datas[dst] += 1
            if kinds[dst] == "merge" and kinds[src] == "next_iteration":
                loop_merges.add(dst)
    pending = tuple(controls[i] if kinds[i] == "merge" else controls[i] + datas[i] for i in range(n))
    merge_inputs = {i: (1 if i in loop_merges else datas[i]) for i in range(n) if kinds[i] == "merge"}
    roots = tuple(i for i in range(n) if controls[i] + datas[i] == 0)
    enter_frames = {i: nodes[i].source.get_attr("frame_name") for i in range(n) if kinds[i] == "enter"}
    frames, parent, enters, exits = assign_frames([node.name for node in nodes], kinds, enter_frames, out_edges, roots)
    runs_dead = frozenset(i for i, node in enumerate(nodes) if registry.runs_when_dead(node.op_type))
    return ControlFlowInfo(kinds, runs_dead, tuple(tuple(e) for e in out_edges), pending, merge_inputs, tuple(frames),
                           parent, enters, {f: tuple(v) for f, v in exits.items()}, roots)


def assign_frames(names: Sequence[str], kinds: Sequence[str | None], enter_frames: dict[int, str],
                  out_edges: Sequence[Sequence[tuple[int, int]]],
                  roots: Sequence[int]) -> tuple[list[str], dict, dict, dict]:
    """The static frame of each node (see the module docstring).

    Args:
        names, kinds: per node, its name and control-flow kind.
        enter_frames: per ``Enter`` node index, its ``frame_name``.
        out_edges: per node, ``(consumer, port)`` pairs; roots: nodes without inputs.
    Returns:
        ``(frames, frame_parent, frame_enters, frame_exits)`` as in :class:`ControlFlowInfo`.
    Raises:
        InvalidArgumentError: a node with inputs from two frames, a frame entered from two frames, an
            ``Exit`` in the root frame.
    """
    frames: list[str | None] = [None] * len(names)  # None: not reached yet
    source = [-1] * len(names)  # the node that first reached each node
    parent: dict[str, str] = {}
    enters: dict[str, int] = collections.Counter()
    exits: dict[str, list[int]] = collections.defaultdict(list)
    queue = collections.deque(roots)
    for root in roots:
        frames[root] = ""
    while queue:
        i = queue.popleft()
        frame = frames[i] or ""
        out_frame = frame
        if kinds[i] == "enter":
            out_frame = enter_frames[i]
            if parent.setdefault(out_frame, frame) != frame:
                raise errors.InvalidArgumentError(
                    None, None, f"Frame '{out_frame}' is entered from frame '{frame}' by '{names[i]}' and from frame "
                    f"'{parent[out_frame]}' by another Enter")
            enters[out_frame] += 1
        elif kinds[i] == "exit":
            if frame == "":
                raise errors.InvalidArgumentError(None, None, f"Exit node '{names[i]}' is not inside a loop "
                                                  "(its input is in the root frame)")
            out_frame = parent[frame]
            exits[frame].append(i)
        for dst, _ in out_edges[i]:
            if frames[dst] is None:
                frames[dst], source[dst] = out_frame, i
                queue.append(dst)
            elif frames[dst] != out_frame:
                raise errors.InvalidArgumentError(
                    None, None, f"The node '{names[dst]}' has inputs from different frames. The input '{names[i]}' is "
                    f"in frame '{out_frame}'. The input '{names[source[dst]]}' is in frame '{frames[dst]}'.")
    return [f if f is not None else "" for f in frames], parent, dict(enters), exits
