"""The simulated clock: a deterministic discrete-event replay of one step.

Source: docs/architecture.md#the-simulated-clock and the TF whitepaper (2015) §3.2.1, whose placer simulates the
graph's execution with a cost model. The replay is a non-preemptive list scheduler:

* every :class:`SimTask` runs on one resource — a device name (one op at a time per
  device) or a link channel name (one transfer at a time per channel);
* a task is *ready* when all its ``deps`` have ended; it starts at
  ``max(end of its deps, time its resource is free)``;
* whenever a resource is free and several tasks are ready for it, the smallest
  ``(priority, name)`` starts first — the result depends only on the task list, never
  on thread timing or list order; a task that becomes ready later never preempts;
* all completions at one instant are applied before anything starts at that instant;
* a task of zero duration (graph plumbing, a ``_Send``/``_Recv`` node: the transfer
  itself is a separate link task) occupies no resource: it starts and ends as soon as
  its deps have ended, so a receive never waits behind unrelated compute.

``simulate`` runs in O((tasks + deps) · log tasks): each task enters and leaves one
ready heap and the event heap once.

The executor feeds it through :func:`build_tasks`: one :class:`NodeRecord` per executed
node (its device, its :class:`~dfcore.runtime.cost_model.OpCost` from
:func:`~dfcore.runtime.cost_model.op_cost` with the shapes it ran with, and the nodes it
waited for directly) and one :class:`TransferRecord` per tensor that crossed devices
(producer, consumer, bytes — e.g. one per ``_Send``/``_Recv`` pair, from the ``_Send``
node to the ``_Recv`` node). A transfer becomes a task on the machine's link channel
between the two nodes: op time and transfer time are those of
:mod:`dfcore.runtime.cost_model`.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import types
from collections.abc import Iterable, Sequence

from ..framework.device import canonical_name
from .cost_model import LinkProfile, MachineProfile, OpCost, op_time_s, transfer_time_s


@dataclasses.dataclass(frozen=True)
class SimTask:
    """A unit of simulated work: ``duration_s`` on ``resource`` once ``deps`` (task
    names) have ended; among ready tasks a smaller ``priority`` goes first, then the
    smaller ``name``."""

    name: str
    resource: str
    duration_s: float
    deps: Sequence[str] = ()  # stored as a tuple
    priority: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "deps", tuple(self.deps))


@dataclasses.dataclass(frozen=True)
class SimResult:
    """The replay's schedule.

    Attributes:
        start_s, end_s: task name → simulated start / end (s), in the order tasks started.
        makespan_s: the last end (0.0 with no tasks).
        busy_s: resource → total duration of its tasks, by resource name.
        utilization: resource → ``busy_s / makespan_s`` (0.0 when the makespan is 0).
        order: task names in the order they started.
    """

    start_s: types.MappingProxyType[str, float]
    end_s: types.MappingProxyType[str, float]
    makespan_s: float
    busy_s: types.MappingProxyType[str, float]
    utilization: types.MappingProxyType[str, float]
    order: tuple[str, ...]


def simulate(tasks: Iterable[SimTask]) -> SimResult:
    """Schedule ``tasks`` (an iterable of :class:`SimTask`) by the rules in the module doc.

    Returns:
        :class:`SimResult`.

    Raises:
        ValueError: duplicate task names, a duration that is negative or not finite, a
            dependency on an unknown task, or a dependency cycle (the cycle is named).
    """
    by_name = _index(tasks)
    dependents: dict[str, list[str]] = {name: [] for name in by_name}
    pending: dict[str, int] = {}
    for name in sorted(by_name):
        deps = sorted(set(by_name[name].deps))
        for dep in deps:
            if dep not in by_name:
                raise ValueError(f"SimTask '{name}' depends on unknown task '{dep}'")
            dependents[dep].append(name)
        pending[name] = len(deps)

    ready: dict[str, list[tuple[int, str]]] = {}  # resource -> heap of (priority, name)
    busy: set[str] = set()
    dirty: set[str] = set()
    events: list[tuple[float, str]] = []  # heap of (end_s, name)
    start_s: dict[str, float] = {}
    end_s: dict[str, float] = {}
    busy_s: dict[str, float] = {}

    now = 0.0

    def release(name):
        task = by_name[name]
        if task.duration_s == 0:
            busy_s.setdefault(task.resource, 0.0)
            start_s[name] = end_s[name] = now
            heapq.heappush(events, (now, name))
            return
        heapq.heappush(ready.setdefault(task.resource, []), (task.priority, name))
        dirty.add(task.resource)

    for name in sorted(n for n, count in pending.items() if count == 0):
        release(name)
    while True:
        for resource in sorted(dirty):
            queue = ready.get(resource)
            if resource not in busy and queue:
                _, name = heapq.heappop(queue)
                start_s[name] = now
                end_s[name] = now + by_name[name].duration_s
                busy.add(resource)
                heapq.heappush(events, (end_s[name], name))
        dirty.clear()
        if not events:
            break
        now = events[0][0]
        while events and events[0][0] == now:
            _, name = heapq.heappop(events)
            task = by_name[name]
            if task.duration_s > 0:
                busy.discard(task.resource)
                dirty.add(task.resource)
                busy_s[task.resource] = busy_s.get(task.resource, 0.0) + task.duration_s
            for waiter in dependents[name]:
                pending[waiter] -= 1
                if pending[waiter] == 0:
                    release(waiter)

    if len(start_s) < len(by_name):
        raise ValueError(f"SimTask dependencies form a cycle: {_find_cycle(by_name, start_s)}")
    makespan = max(end_s.values(), default=0.0)
    busy_s = {r: busy_s[r] for r in sorted(busy_s)}
    utilization = {r: (b / makespan if makespan > 0 else 0.0) for r, b in busy_s.items()}
    return SimResult(
        start_s=types.MappingProxyType(start_s),
        end_s=types.MappingProxyType({n: end_s[n] for n in start_s}),
        makespan_s=makespan,
        busy_s=types.MappingProxyType(busy_s),
        utilization=types.MappingProxyType(utilization),
        order=tuple(start_s),
    )


@dataclasses.dataclass(frozen=True)
class NodeRecord:
    """One executed node: its name, full device name, :class:`OpCost`, the names of the
    nodes it waited for without a transfer (same-device data inputs, control inputs),
    and its scheduling priority (e.g. its index in the executor's topological order)."""

    name: str
    device: str
    cost: OpCost
    deps: Sequence[str] = ()  # stored as a tuple
    priority: int = 0

    def __post_init__(self):
        object.__setattr__(self, "deps", tuple(self.deps))


@dataclasses.dataclass(frozen=True)
class TransferRecord:
    """A tensor of ``nbytes`` sent from node ``src`` to node ``dst``; ``link`` (a
    :class:`LinkProfile`) overrides the machine's link between their devices."""

    src: str
    dst: str
    nbytes: int
    link: LinkProfile | None = None


def transfer_task_name(src: str, dst: str) -> str:
    """Name of the task carrying ``src``'s tensor to ``dst``: ``"<src> -> <dst>"`` (op
    names have no spaces, so it never collides with a node's name)."""
    return f"{src} -> {dst}"


def build_tasks(nodes: Iterable[NodeRecord], transfers: Iterable[TransferRecord],
                machine: MachineProfile) -> list[SimTask]:
    """:class:`SimTask` list for one step's records.

    Each :class:`NodeRecord` becomes a task named after the node, on its (canonical)
    device, lasting ``op_time_s(cost, machine.device(device))``. Each
    :class:`TransferRecord` between two devices becomes a task
    :func:`transfer_task_name` on ``machine.link_resource(src_device, dst_device)``,
    lasting ``transfer_time_s(nbytes, link)``, after ``src`` and before ``dst``, with
    ``dst``'s priority; one between nodes of the same device is free and just orders
    the two nodes.

    Args:
        nodes: iterable of :class:`NodeRecord`.
        transfers: iterable of :class:`TransferRecord`.
        machine: a :class:`~dfcore.runtime.cost_model.MachineProfile`.

    Raises:
        ValueError: duplicate node names, a transfer naming an unknown node, or two
            transfers between the same pair of nodes.
        KeyError: a device the machine does not have.
    """
    by_name = {}
    for node in nodes:
        if node.name in by_name:
            raise ValueError(f"Two NodeRecords are named '{node.name}'")
        by_name[node.name] = node
    extra_deps: dict[str, list[str]] = {name: [] for name in by_name}
    tasks = []
    for tr in transfers:
        for end in (tr.src, tr.dst):
            if end not in by_name:
                raise ValueError(f"TransferRecord {tr.src!r} -> {tr.dst!r} names unknown node '{end}'")
        src_device = canonical_name(by_name[tr.src].device)
        dst_device = canonical_name(by_name[tr.dst].device)
        if src_device == dst_device:
            extra_deps[tr.dst].append(tr.src)
            continue
        name = transfer_task_name(tr.src, tr.dst)
        if name in extra_deps[tr.dst]:
            raise ValueError(f"Two TransferRecords from '{tr.src}' to '{tr.dst}'; merge their bytes into one")
        link = tr.link if tr.link is not None else machine.link(src_device, dst_device)
        tasks.append(SimTask(name, machine.link_resource(src_device, dst_device),
                             transfer_time_s(tr.nbytes, link), (tr.src,), by_name[tr.dst].priority))
        extra_deps[tr.dst].append(name)
    for node in by_name.values():
        duration = op_time_s(node.cost, machine.device(node.device))
        tasks.append(SimTask(node.name, canonical_name(node.device), duration,
                             tuple(dict.fromkeys((*node.deps, *extra_deps[node.name]))), node.priority))
    return tasks


def simulate_step(nodes: Iterable[NodeRecord], transfers: Iterable[TransferRecord],
                  machine: MachineProfile) -> SimResult:
    """``simulate(build_tasks(nodes, transfers, machine))``."""
    return simulate(build_tasks(nodes, transfers, machine))


def _index(tasks):
    by_name = {}
    for task in tasks:
        if task.name in by_name:
            raise ValueError(f"Two SimTasks are named '{task.name}'")
        if not (math.isfinite(task.duration_s) and task.duration_s >= 0):
            raise ValueError(f"SimTask '{task.name}' has duration_s={task.duration_s!r}; it must be finite and >= 0")
        by_name[task.name] = task
    return by_name


def _find_cycle(by_name, started):
    """Follow unfinished dependencies from the smallest stuck task until one repeats."""
    stuck = sorted(set(by_name) - set(started))
    path, seen = [], {}
    name = stuck[0]
    while name not in seen:
        seen[name] = len(path)
        path.append(name)
        name = min(d for d in by_name[name].deps if d not in started)
    cycle = path[seen[name]:] + [name]
    return " depends on ".join(f"'{n}'" for n in cycle)
