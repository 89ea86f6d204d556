"""In-graph collectives on a traced step's simulated clock.

Source: dfcore's simulated clock (:mod:`dfcore.runtime.sim_clock`) and the α-β model of a collective's
messages (Thakur, Rabenseifner & Gropp, IJHPCA 2005). A collective op (``CollectiveAllReduce``) computes
nothing of its own: its time is the schedule's messages and reductions, which the step replays on the
session's machine with the instance's own tasks (``instance.replay(machine)``, duck-typed: the runtime does
not import the distribute layer). Each instance adds, named ``<instance>/<task>``:

* ``<instance>/inputs``: a zero-length task after every participant's inputs, so every rank's first message
  waits for every rank's input (the participants meet before the algorithm runs);
* the schedule's tasks (messages holding both ends of their links, reductions on the devices);
* ``<instance>/done``: after all of them; each participant's node waits for it.

A step with control flow is replayed without its collectives' messages (the op is then free).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from . import cost_model, sim_clock


@dataclasses.dataclass(frozen=True)
class CollectiveMessage:
    """One message of a collective on the step's clock: its task's name, its ends (full device names) and bytes."""

    task: str
    src_device: str
    dst_device: str
    nbytes: int


def add_collectives(plan: Any, collectives: dict[Any, Any], machine: cost_model.MachineProfile,
                    records: Sequence[sim_clock.NodeRecord]
                    ) -> tuple[list[sim_clock.NodeRecord], list[sim_clock.SimTask], list[CollectiveMessage]]:
    """``(records, extra tasks, messages)``: ``records`` with each participant waiting for its collective's
    ``done``, the collectives' tasks (module doc), and their messages in schedule order.

    Args:
        plan: the step's plan (its partitions' nodes name the participants by their ``group_key``,
            ``instance_key`` and ``rank`` attrs).
        collectives: the step's instances (``StepResult.collectives``), ``{(group_key, instance_key): instance}``.
        machine: the session's :class:`~dfcore.runtime.cost_model.MachineProfile`.
        records: the step's :class:`~dfcore.runtime.sim_clock.NodeRecord` list, one per node name.
    """
    participants = _participants(plan)
    by_name = {r.name: r for r in records}
    extra: list[sim_clock.SimTask] = []
    messages: list[CollectiveMessage] = []
    for key in sorted(collectives):
        instance = collectives[key]
        replay = getattr(instance, "replay", None)
        names = [n for n in participants.get(key, ()) if n in by_name]
        tasks, sent = replay(machine) if replay is not None and names else ([], [])
        if not tasks:
            continue
        prefix = f"{instance.name}/"
        inputs = sorted({d for n in names for d in by_name[n].deps})
        extra.append(sim_clock.SimTask(prefix + "inputs", prefix + "inputs", 0.0, inputs, -1))
        extra += [sim_clock.SimTask(prefix + t.name, t.resource, t.duration_s,
                                    [prefix + d for d in t.deps] or [prefix + "inputs"], t.priority) for t in tasks]
        extra.append(sim_clock.SimTask(prefix + "done", prefix + "done", 0.0, [prefix + t.name for t in tasks]))
        for n in names:
            by_name[n] = dataclasses.replace(by_name[n], deps=(*by_name[n].deps, prefix + "done"))
        messages += [CollectiveMessage(prefix + task, src, dst, nbytes) for task, src, dst, nbytes in sent]
    return [by_name[r.name] for r in records], extra, messages


def _participants(plan):
    """``{(group_key, instance_key): [node names by rank]}`` of the plan's collective nodes."""
    found: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for partition in plan.partitions:
        for node in partition.nodes:
            attrs = getattr(node.source, "attrs", None) or {}
            if "group_key" in attrs and "instance_key" in attrs and "rank" in attrs:
                found.setdefault((attrs["group_key"], attrs["instance_key"]), []).append((attrs["rank"], node.name))
    return {key: [name for _, name in sorted(members)] for key, members in found.items()}
