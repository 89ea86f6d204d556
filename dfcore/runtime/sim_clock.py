"""The simulated clock: a deterministic discrete-event replay of one step.

Source: docs/architecture.md#the-simulated-clock and the TF whitepaper (2015) §3.2.1, whose placer simulates the
graph's execution with a cost model. The replay is a non-preemptive list scheduler:

* every :class:`SimTask` holds one resource or several at once while it runs — a device
  name (one op at a time per device) or the ports a transfer occupies (the sender's
  outbound port and the receiver's inbound port, as
  :meth:`~dfcore.runtime.cost_model.MachineProfile.transfer_resources` defines them);
  a resource has a capacity (1 unless ``simulate`` is told more: a host's memory takes
  a few bus copies at once), and a task starts only when every resource it holds has a
  free slot;
* a task is *ready* when all its ``deps`` have ended; it starts at
  ``max(end of its deps, time its resources are free)``;
* whenever resources are free, the ready tasks start greedily in ``(priority, name)``
  order, each one whose resources all have a free slot: the result depends only on the
  task list, never on thread timing or list order; a task that becomes ready later
  never preempts (a task waiting for one busy port lets later tasks use its other
  ports meanwhile);
* all completions at one instant are applied before anything starts at that instant;
* a task of zero duration (graph plumbing, a ``_Send``/``_Recv`` node: the transfer
  itself is a separate link task) occupies no resource: it starts and ends as soon as
  its deps have ended, so a receive never waits behind unrelated compute.

``simulate`` runs in O((tasks + deps) · log tasks + starts · busy resources): each task
enters the ready heap of each of its resources and the event heap once.

The executor feeds it through :func:`build_tasks`: one :class:`NodeRecord` per executed
node (its device, its :class:`~dfcore.runtime.cost_model.OpCost` from
:func:`~dfcore.runtime.cost_model.op_cost` with the shapes it ran with, and the nodes it
waited for directly) and one :class:`TransferRecord` per tensor that crossed devices
(producer, consumer, bytes — e.g. one per ``_Send``/``_Recv`` pair, from the ``_Send``
node to the ``_Recv`` node). A transfer becomes a task holding the ports the machine
says it occupies between the two nodes' devices; extra tasks (a collective's messages
and reductions) join the replay as given: op time and transfer time are those of
:mod:`dfcore.runtime.cost_model`.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import types
from collections.abc import Iterable, Mapping, Sequence

from ..framework.device import canonical_name
from .cost_model import LinkProfile, MachineProfile, OpCost, op_time_s, transfer_time_s


@dataclasses.dataclass(frozen=True)
class SimTask:
    """A unit of simulated work: ``duration_s`` holding ``resource`` (a name, or a tuple of
    names held together: a transfer's ports) once ``deps`` (task names) have ended; among
    ready tasks a smaller ``priority`` goes first, then the smaller ``name``."""

    name: str
    resource: str | tuple[str, ...]
    duration_s: float
    deps: Sequence[str] = ()  # stored as a tuple
    priority: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "deps", tuple(self.deps))
        if not isinstance(self.resource, str):
            object.__setattr__(self, "resource", tuple(dict.fromkeys(self.resource)))

    @property
    def resources(self) -> tuple[str, ...]:
        """The names of the resources the task holds (one or more)."""
        return (self.resource,) if isinstance(self.resource, str) else self.resource


@dataclasses.dataclass(frozen=True)
class SimResult:
    """The replay's schedule.

    Attributes:
        start_s, end_s: task name → simulated start / end (s), in the order tasks started.
        makespan_s: the last end (0.0 with no tasks).
        busy_s: resource → total duration of the tasks holding it, by resource name.
        utilization: resource → ``busy_s / (makespan_s · capacity)`` (0.0 when the makespan is 0).
        order: task names in the order they started.
    """

    start_s: types.MappingProxyType[str, float]
    end_s: types.MappingProxyType[str, float]
    makespan_s: float
    busy_s: types.MappingProxyType[str, float]
    utilization: types.MappingProxyType[str, float]
    order: tuple[str, ...]


def simulate(tasks: Iterable[SimTask], capacities: Mapping[str, int] | None = None) -> SimResult:
    """Schedule ``tasks`` (an iterable of :class:`SimTask`) by the rules in the module doc.

    Args:
        capacities: resource name → how many tasks may hold it at once (default 1 each).

    Returns:
        :class:`SimResult`.

    Raises:
        ValueError: duplicate task names, a duration that is negative or not finite, a task
            holding no resource, a dependency on an unknown task, a dependency cycle (the
            cycle is named), or a capacity below 1.
    """
    by_name = _index(tasks)
    capacity = dict(capacities or {})
    if any(int(c) < 1 for c in capacity.values()):
        raise ValueError(f"Resource capacities must be >= 1, got {capacity}")
    dependents: dict[str, list[str]] = {name: [] for name in by_name}
    pending: dict[str, int] = {}
    for name in sorted(by_name):
        deps = sorted(set(by_name[name].deps))
        for dep in deps:
            if dep not in by_name:
                raise ValueError(f"SimTask '{name}' depends on unknown task '{dep}'")
            dependents[dep].append(name)
        pending[name] = len(deps)

    ready: dict[str, list[tuple[int, str]]] = {}  # resource -> heap of (priority, name); a task is in each of its
    in_use: dict[str, int] = {}
    dirty: set[str] = set()  # resources freed or given a ready task since the last start pass
    events: list[tuple[float, str]] = []  # heap of (end_s, name)
    start_s: dict[str, float] = {}
    end_s: dict[str, float] = {}
    busy_s: dict[str, float] = {}

    now = 0.0

    def free(resource):
        return in_use.get(resource, 0) < capacity.get(resource, 1)

    def release(name):
        task = by_name[name]
        if task.duration_s == 0:
            for resource in task.resources:
                busy_s.setdefault(resource, 0.0)
            start_s[name] = end_s[name] = now
            heapq.heappush(events, (now, name))
            return
        for resource in task.resources:
            heapq.heappush(ready.setdefault(resource, []), (task.priority, name))
            dirty.add(resource)

    def first_startable(resource):
        """The smallest ready task on ``resource`` whose resources are all free (None if none); drops
        entries of tasks already started through another resource."""
        queue = ready[resource]
        while queue and queue[0][1] in start_s:
            heapq.heappop(queue)
        if not queue or all(free(r) for r in by_name[queue[0][1]].resources):
            return queue[0] if queue else None
        skipped, found = [], None  # the smallest waits for another resource: look further
        while queue:
            entry = heapq.heappop(queue)
            if entry[1] in start_s:
                continue
            skipped.append(entry)
            if all(free(r) for r in by_name[entry[1]].resources):
                found = entry
                break
        for entry in skipped:
            heapq.heappush(queue, entry)
        return found

    def start_ready():
        """Start ready tasks, smallest first, until none can: a task that can start now holds a resource that was
        freed or given a ready task since the last pass (else it could have started then), so only those resources
        offer candidates; a candidate is re-checked when popped (starts only take slots away)."""
        candidates: list[tuple[tuple[int, str], str]] = []

        def offer(resource):
            if ready.get(resource) and free(resource):
                entry = first_startable(resource)
                if entry is not None:
                    heapq.heappush(candidates, (entry, resource))

        for resource in sorted(dirty):
            offer(resource)
        dirty.clear()
        while candidates:
            (_, name), resource = heapq.heappop(candidates)
            task = by_name[name]
            if name in start_s or not all(free(r) for r in task.resources):
                offer(resource)
                continue
            start_s[name] = now
            end_s[name] = now + task.duration_s
            for r in task.resources:
                in_use[r] = in_use.get(r, 0) + 1
            heapq.heappush(events, (end_s[name], name))
            for r in task.resources:
                offer(r)

    for name in sorted(n for n, count in pending.items() if count == 0):
        release(name)
    while True:
        start_ready()
        for resource in [r for r, q in ready.items() if not q]:
            del ready[resource]
        if not events:
            break
        now = events[0][0]
        while events and events[0][0] == now:
            _, name = heapq.heappop(events)
            task = by_name[name]
            if task.duration_s > 0:
                for resource in task.resources:
                    in_use[resource] -= 1
                    dirty.add(resource)
                    busy_s[resource] = busy_s.get(resource, 0.0) + task.duration_s
            for waiter in dependents[name]:
                pending[waiter] -= 1
                if pending[waiter] == 0:
                    release(waiter)

    if len(start_s) < len(by_name):
        raise ValueError(f"SimTask dependencies form a cycle: {_find_cycle(by_name, start_s)}")
    makespan = max(end_s.values(), default=0.0)
    busy_s = {r: busy_s[r] for r in sorted(busy_s)}
    utilization = {r: (b / (makespan * capacity.get(r, 1)) if makespan > 0 else 0.0) for r, b in busy_s.items()}
    return SimResult(
        start_s=types.MappingProxyType(start_s),
        end_s=types.MappingProxyType({n: end_s[n] for n in start_s}),
        makespan_s=makespan,
        busy_s=types.MappingProxyType(busy_s),
        utilization=types.MappingProxyType(utilization),
        order=tuple(start_s),
    )


class PortBook:
    """When each resource is next free, for simulations that reserve their transfers one at a time in their
    own event order (the parameter-server driver, the cost-model placer) rather than through
    :func:`simulate`: a reservation of ``resources`` starts when every one has a free slot and holds one slot
    of each until it ends. ``capacities`` as :func:`simulate`'s (default 1 each)."""

    def __init__(self, capacities: Mapping[str, int] | None = None) -> None:
        self._capacity = dict(capacities or {})
        self._slots: dict[str, list[float]] = {}  # resource -> end of the last reservation in each slot

    def earliest(self, resources: Sequence[str], at_s: float) -> float:
        """When a reservation of ``resources`` asked for at ``at_s`` (s) would start."""
        return max([at_s] + [min(self._slot_ends(r)) for r in resources])

    def reserve(self, resources: Sequence[str], at_s: float, duration_s: float) -> tuple[float, float]:
        """Hold ``resources`` for ``duration_s`` from :meth:`earliest`; returns ``(start_s, end_s)``."""
        start = self.earliest(resources, at_s)
        for resource in dict.fromkeys(resources):
            slots = self._slot_ends(resource)
            slots[slots.index(min(slots))] = start + duration_s
        return start, start + duration_s

    def copy(self) -> PortBook:
        """An independent copy (to try reservations without making them)."""
        book = PortBook(self._capacity)
        book._slots = {r: list(s) for r, s in self._slots.items()}
        return book

    def _slot_ends(self, resource):
        slots = self._slots.get(resource)
        if slots is None:
            slots = self._slots[resource] = [0.0] * int(self._capacity.get(resource, 1))
        return slots


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
    :func:`transfer_task_name` holding ``machine.transfer_resources(src_device,
    dst_device)`` (both ends of the link), lasting ``transfer_time_s(nbytes, link)``,
    after ``src`` and before ``dst``, with ``dst``'s priority; one between nodes of the
    same device is free and just orders the two nodes.

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
        tasks.append(SimTask(name, machine.transfer_resources(src_device, dst_device),
                             transfer_time_s(tr.nbytes, link), (tr.src,), by_name[tr.dst].priority))
        extra_deps[tr.dst].append(name)
    for node in by_name.values():
        duration = op_time_s(node.cost, machine.device(node.device))
        tasks.append(SimTask(node.name, canonical_name(node.device), duration,
                             tuple(dict.fromkeys((*node.deps, *extra_deps[node.name]))), node.priority))
    return tasks


def simulate_step(nodes: Iterable[NodeRecord], transfers: Iterable[TransferRecord],
                  machine: MachineProfile, extra: Iterable[SimTask] = ()) -> SimResult:
    """``simulate(build_tasks(nodes, transfers, machine) + extra, machine.capacities())``: ``extra`` tasks
    (a collective's messages and reductions) may be named in the nodes' ``deps``."""
    return simulate([*build_tasks(nodes, transfers, machine), *extra], machine.capacities())


def _index(tasks):
    by_name = {}
    for task in tasks:
        if task.name in by_name:
            raise ValueError(f"Two SimTasks are named '{task.name}'")
        if not (math.isfinite(task.duration_s) and task.duration_s >= 0):
            raise ValueError(f"SimTask '{task.name}' has duration_s={task.duration_s!r}; it must be finite and >= 0")
        if not task.resources:
            raise ValueError(f"SimTask '{task.name}' holds no resource; give it at least one")
        by_name[task.name] = task
    return by_name


def _find_cycle(by_name, started):
    """Follow unfinished dependencies from the smallest stuck task until one repeats."""
    stuck = sorted(set(by_name) - set(started))
    path: list[str] = []
    seen: dict[str, int] = {}
    name = stuck[0]
    while name not in seen:
        seen[name] = len(path)
        path.append(name)
        name = min(d for d in by_name[name].deps if d not in started)
    cycle = path[seen[name]:] + [name]
    return " depends on ".join(f"'{n}'" for n in cycle)
