"""Colocation groups: the ops a placement must put on one device (TF 1.x ``ColocationGraph``).

Source: ``tensorflow/core/common_runtime/placer.cc`` (``ColocationGraph``: ``ColocateAllNodes`` over the
``_class`` attr's ``loc:@name`` entries, then ``ColocateResourceOrRefEdge`` for reference inputs). The
placer (:mod:`dfcore.runtime.placer`) merges each group's requests and places it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..framework import registry
from ..framework.device import DeviceSpec
from ..framework.operation import Operation


class ColocationGroup:
    """A colocation group: its members, merged request, supported types, candidates and chosen
    ``device`` (None until placed; a placer sets it when it places the first member)."""

    __slots__ = ("members", "ref_readers", "spec", "origin", "types", "device", "candidates", "soft", "_shared")

    def __init__(self, members: list[Operation], ref_readers: list[Operation],
                 shared: dict[Any, Any] | None = None) -> None:
        self.members = members
        self.ref_readers = ref_readers
        self.spec = EMPTY_SPEC  # replaced, never changed in place
        self.origin: dict[str, Operation] = {}
        self.types: list[str] | None = None
        self.device: Any = None  # the full device name once placed
        self.candidates: Any = None  # the feasible device names once asked
        self.soft = False
        self._shared = {} if shared is None else shared  # what the groups of one placement compute alike


EMPTY_SPEC = DeviceSpec()


def colocation_groups(ops: Sequence[Operation]) -> dict[Operation, ColocationGroup]:
    """Each op's group (``ops`` in op-id order): union-find over ``_class`` names, then over reference edges
    (placer.cc steps 1-2); a group's members keep op order and its first member is its root. An op that names
    no other op's group, whose name no other op names, and that reads no reference is a group of its own
    without entering the union-find (most ops of a big graph)."""
    parent: dict[Operation, Operation] = {}  # a tied op -> its parent (a root has none)
    tied: set[Operation] = set()

    def root(op):
        top = op
        while top in parent:
            top = parent[top]
        while op in parent and parent[op] is not top:  # path compression
            parent[op], op = top, parent[op]
        return top

    def union(a, b):
        tied.update((a, b))
        ra, rb = root(a), root(b)
        if ra is not rb:
            parent[max(ra, rb, key=_op_id)] = min(ra, rb, key=_op_id)

    # every op joins the ops naming what it names: its _class entries, or else its own name
    named: dict[str, list[Operation]] = {}
    plain = []
    for op in ops:
        classes = [c[len("loc:@"):] for c in op.colocation_groups if c.startswith("loc:@")]
        if classes and classes != [op.name]:
            for name in classes:
                named.setdefault(name, []).append(op)
        else:
            plain.append(op)
    if named:
        for op in plain:
            if op.name in named:
                named[op.name].append(op)
        for members_of_name in named.values():
            for op in members_of_name:
                union(op, members_of_name[0])
    ref_readers = set()
    ref_indices: dict[str, list[int]] = {}
    in_run: set[Operation] | None = None
    for op in ops:
        indices = ref_indices.get(op.type)
        if indices is None:
            indices = ref_indices[op.type] = sorted(registry.ref_inputs(op.type))
        for index in indices:
            source = op.inputs[index] if index < len(op.inputs) else None
            if source is not None and source.dtype.is_ref:
                in_run = set(ops) if in_run is None else in_run
                if source.op in in_run:
                    ref_readers.add(op)
                    union(source.op, op)
    members: dict[Operation, list[Operation]] = {}
    for op in ops:
        if op in tied:
            members.setdefault(root(op), []).append(op)
    shared: dict[Any, Any] = {}
    tied_groups = {r: ColocationGroup(m, [op for op in m if op in ref_readers], shared) for r, m in members.items()}
    return {op: tied_groups[root(op)] if op in tied else ColocationGroup([op], [], shared) for op in ops}


def group_name(group: ColocationGroup) -> str | None:
    """``loc:@<first member>`` for a group of two or more ops, else None (as a placement record names it)."""
    return f"loc:@{group.members[0].name}" if len(group.members) > 1 else None


def _op_id(op: Operation) -> int:
    return op._id
