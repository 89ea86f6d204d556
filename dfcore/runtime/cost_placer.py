"""The cost-model placer: the TF whitepaper's greedy placement by simulated execution.

Source: Abadi et al., "TensorFlow: Large-Scale Machine Learning on Heterogeneous Distributed Systems"
(2015), §3.2.1, in paraphrase: the placer simulates an execution of the graph from its sources, keeping
track of each device's activity; each node reached is considered on every feasible device (one with a
kernel for its op), and goes to the one where it would finish soonest, counting the cost model's estimated
(or measured) time of the op on that kind of device and the time to bring its inputs from other devices.
The cost model itself is the seed-quoted one of :mod:`dfcore.runtime.placement_costs`. TF never shipped
this placer (its placer is the rule-based one, :mod:`dfcore.runtime.placer`).

Algorithm (:func:`place`), in one pass over the ops in creation order (topological for a graph built through
the API; a loop's back edge, ``NextIteration`` → ``Merge``, is ignored):

1. the hard constraints are the rule placer's (:func:`~dfcore.runtime.placer.hard_constraints`): an
   assigned device, explicit requests merged over colocation groups (``_class``, reference edges), the device
   types with a kernel for every member, soft placement; they give each node its feasible devices;
2. a node whose group is already placed goes with it; otherwise, for each feasible device ``d``:
   ``ready = max over inputs (arrival on d)``, where an input on another device crosses its link in
   ``transfer_time_s(bytes, link(src, d))`` once its producer has finished and both ends of the link are
   free (the ports of :meth:`~dfcore.runtime.cost_model.MachineProfile.transfer_resources`, the simulated
   clock's one rule: two inputs into ``d`` over one bus queue, inputs over separate links cross in parallel;
   a tensor sent to ``d`` once is there for its later consumers); ``start = max(ready,
   available[d])``; ``finish = start + compute_s(node, d)``; a device without the memory the node (and its
   group) needs is not a candidate; control-flow ops are free here, as in TF: the partitioner moves a
   ``Switch``/``Exit`` to its data input's device and an ``Enter``/``NextIteration`` to its consumer's
   (:func:`~dfcore.runtime.partition_control_flow.colocate_control_flow`);
3. the node goes to the candidate with the earliest finish (ties: TF's device priority order, GPU before
   CPU, then by name); its device is then ``available`` from ``finish`` (a node that computes nothing does not
   occupy it) and holds the node's memory (:mod:`dfcore.runtime.placement_memory`).

Costs come from :class:`~dfcore.runtime.placement_costs.CostTable`: static (op cost registry and hardware
profiles) or measured (StepStats of earlier steps). Invariants: every hard constraint of the rule placer
holds; no device holds more than its memory limit; each decision's winner has the smallest finish among its
candidates that fit; the placement is deterministic (no dict or thread order); work is linear in
(nodes + edges) × devices.

Raises ``ResourceExhaustedError`` in TF's OOM wording when a node (or its colocation group) fits on none of its
feasible devices: a node forced on a device that is full, a tensor larger than every device.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from ..framework.operation import Operation
from . import cost_model, placer, sim_clock
from .device_set import DeviceSet
from .placement_costs import CostTable
from .placement_memory import MemoryLedger, memory_limits
from .placer import Placement, PlacementRecord
from .step_trace import machine_for

REASON_COST = "cost model: earliest estimated finish"


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One feasible device for one node, as the simulation saw it (times in s on the simulated clock).

    ``ready_s``: when the last input arrives; ``transfer_s``: the longest input transfer to this device;
    ``start_s = max(ready_s, device available)``; ``finish_s = start_s + compute_s``; ``free_bytes``: the
    device's free memory before the node, ``need_bytes`` what the node would add; ``fits``: need ≤ free.
    """

    device: str
    ready_s: float
    transfer_s: float
    start_s: float
    compute_s: float
    finish_s: float
    free_bytes: int
    need_bytes: int
    fits: bool


@dataclasses.dataclass(frozen=True)
class CostDecision:
    """The placement of one node: its candidates in priority order and the chosen ``device``.

    ``step``: the node's position in the simulation (0-based); ``cost_source``: ``"static"``,
    ``"measured"`` or ``"default"``; ``reason``: a ``placer.REASON_*`` string or :data:`REASON_COST`.
    """

    step: int
    node_name: str
    op_type: str
    cost_source: str
    output_bytes: int
    candidates: tuple[Candidate, ...]
    device: str
    reason: str

    @property
    def winner(self) -> Candidate:
        """The :class:`Candidate` of the chosen device."""
        return next(c for c in self.candidates if c.device == self.device)


class CostPlacement(Placement):
    """A :class:`~dfcore.runtime.placer.Placement` with the simulation behind it.

    Attributes:
        estimated_step_s: the simulated finish of the last node (s).
        memory_bytes: device → bytes the placement holds there; memory_limit_bytes: device → limit.
    """

    def __init__(self, devices: Mapping[Operation, str], records: Iterable[PlacementRecord],
                 decisions: Iterable[CostDecision], memory_bytes: Mapping[str, int],
                 memory_limit_bytes: Mapping[str, int]) -> None:
        super().__init__(devices, records)
        self._decisions = tuple(decisions)
        self.estimated_step_s = max((d.winner.finish_s for d in self._decisions), default=0.0)
        self.memory_bytes = dict(memory_bytes)
        self.memory_limit_bytes = dict(memory_limit_bytes)

    def decisions(self) -> list[CostDecision]:
        """One :class:`CostDecision` per node, in simulation order."""
        return list(self._decisions)


def place(ops: Iterable[Operation], device_set: DeviceSet, allow_soft_placement: bool = False,
          machine: cost_model.MachineProfile | None = None, costs: CostTable | None = None,
          memory_limit_bytes: Mapping[str, int] | None = None) -> CostPlacement:
    """Place ``ops`` on ``device_set`` by the whitepaper's greedy simulation (module docstring).

    Args:
        machine: the hardware profiles of the devices (default: the session's, from their profile names).
        costs: a :class:`CostTable` (default: static costs on ``machine``; pass one with measured nodes).
        memory_limit_bytes: device name → limit, overriding the profiles' ``memory_bytes``.

    Returns:
        a :class:`CostPlacement`.
    Raises:
        InvalidArgumentError: as :func:`dfcore.runtime.placer.place` (an impossible request, a conflict).
        ResourceExhaustedError: a node or colocation group fits on none of its feasible devices (TF's OOM
            wording, naming the tensor, the devices' free memory, the group).
        ValueError: a memory limit for an unknown device or below zero.
    """
    if costs is None:
        costs = CostTable(machine if machine is not None else machine_for(device_set))
    ops, groups = placer.hard_constraints(ops, device_set, allow_soft_placement)
    names = [d.name for d in device_set.prioritized_devices()]
    ledger = MemoryLedger(costs, memory_limits(costs, names, memory_limit_bytes))
    sim = _Simulation(costs, ledger)
    chosen: dict[Operation, str] = {}
    decisions, records = [], []
    for step, op in enumerate(ops):
        group = groups[op]
        if op.assigned_device:
            feasible, reason = [group.device], placer.REASON_ASSIGNED
        elif group.device is not None:
            feasible, reason = [group.device], placer.REASON_COLOCATION
        else:
            feasible = placer.feasible_devices(op, group, device_set, allow_soft_placement)
            reason = _reason(op, group, feasible)
        members = group.members  # the first member placed holds the whole group's memory
        pending = ledger.prepare(op, members)
        candidates = sim.candidates(op, feasible, pending, chosen)
        fitting = [c for c in candidates if c.fits]
        if not fitting:
            raise ledger.oom_error(op, members, {c.device: c.need_bytes for c in candidates}, ops)
        winner = min(fitting, key=lambda c: c.finish_s)  # min keeps the first of equals: priority order
        sim.commit(op, winner, pending, chosen)
        group.device = chosen[op] = winner.device
        decisions.append(CostDecision(step, op.name, op.type, costs.source(op), sum(costs.output_bytes(op)),
                                      tuple(candidates), winner.device, reason))
        records.append(PlacementRecord(op.name, op.type, op.device, winner.device, placer.group_name(group), reason))
    costs.warn_defaults()
    return CostPlacement(chosen, records, decisions, ledger.used, ledger.limits)


def _reason(op, group, feasible):
    if group.soft:
        return placer.REASON_SOFT
    if len(feasible) == 1 and group.spec.to_string():
        return placer.REASON_REQUESTED if op.device else placer.REASON_COLOCATION
    return REASON_COST


class _Simulation:
    """Device availability, node finishes, tensor arrivals and busy link ports of the simulated execution so far."""

    def __init__(self, costs, ledger):
        self.costs, self.ledger = costs, ledger
        self.available: dict[str, float] = {}
        self.finish: dict[Operation, float] = {}
        self.arrival: dict[tuple[object, str], float] = {}
        self.ports = sim_clock.PortBook(costs.machine.capacities())

    def candidates(self, op, feasible, pending, chosen):
        """A :class:`Candidate` per device of ``feasible``."""
        after = max((self.finish.get(c, 0.0) for c in op.control_inputs), default=0.0)
        out = []
        for device in feasible:
            ready, transfer = after, 0.0
            for done, moved in self._arrivals(op, device, chosen, self.ports.copy()).values():
                transfer = max(transfer, moved)
                ready = max(ready, done)
            start = max(ready, self.available.get(device, 0.0))
            compute = self.costs.compute_s(op, device)
            need, free = self.ledger.need_on(pending, device, chosen), self.ledger.free(device)
            out.append(Candidate(device, ready, transfer, start, compute, start + compute, free, need, need <= free))
        return out

    def _arrivals(self, op, device, chosen, book):
        """``{tensor: (arrival on device, transfer time)}`` of ``op``'s placed inputs, reserving the transfers
        still to make on ``book`` in input order (inputs not yet placed — a loop's back edge, or outside the
        set — are left out)."""
        out = {}
        for t in op.inputs:
            src = chosen.get(t.op)
            if src is None or t in out:
                continue
            if src == device:
                out[t] = (self.finish[t.op], 0.0)
            elif (t, device) in self.arrival:
                out[t] = (self.arrival[(t, device)], 0.0)
            else:
                moved = cost_model.transfer_time_s(self.ledger.tensor_bytes(t), self.costs.machine.link(src, device))
                _, end = book.reserve(self.costs.machine.transfer_resources(src, device), self.finish[t.op], moved)
                out[t] = (end, moved)
        return out

    def commit(self, op, winner, pending, chosen):
        device = winner.device
        for t, (done, moved) in self._arrivals(op, device, chosen, self.ports).items():
            if moved > 0 or (chosen[t.op] != device and (t, device) not in self.arrival):
                self.arrival[(t, device)] = done
        self.ledger.commit(pending, device, chosen)
        self.finish[op] = winner.finish_s
        if winner.compute_s > 0:
            self.available[device] = winner.finish_s
