"""What the cost-model placer knows about a node: its compute time per device, its tensors' sizes, its memory.

Source: TF whitepaper (Abadi et al. 2015) §3.2.1: "The cost model contains estimates of the sizes (in
bytes) of the input and output tensors for each graph node, along with estimates of the computation time
required for each node when presented with its input tensors. This cost model is either statically
estimated based on heuristics associated with different operation types, or is measured based on an actual
set of placement decisions for earlier executions of the graph."

* static: the op cost registry (:func:`dfcore.runtime.cost_model.op_cost`) on the ops' static shapes, timed
  by the roofline of the device's :class:`~dfcore.runtime.cost_model.DeviceProfile`; an unknown dimension
  counts as 1 (a placeholder's batch of ``None`` is one example). An op type with no cost function gets the
  cost model's default (one flop per output element), and the placer says so once per op type
  (:meth:`CostTable.warn_defaults`: one warning per placement naming the op types new to it).
* measured: from the :class:`~dfcore.runtime.step_stats.StepStats` (or traced ``RunMetadata``) of earlier
  steps of the same graph
  (:func:`measured_nodes`): a node's duration (summed over its executions in one step, the latest step
  winning) on the device it ran on, and the real bytes of its outputs. On a device with another profile the
  duration is scaled by the ratio of the two static estimates.
* memory: a node holds its outputs' bytes on its device for the whole step (nothing is freed: an upper
  bound, the activations of a training step are kept for its backward pass), except ops whose output is a
  view of their input (:data:`VIEW_OP_TYPES`, and what ``Assign`` and the training ops return: the variable); a
  variable's output is its storage.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TypeAlias

from .. import tf_logging
from ..framework import registry
from ..framework.operation import Operation
from ..ops import op_costs
from . import cost_model
from .config import RunMetadata, step_records
from .step_stats import StepStats

#: Op types whose output shares its input's buffer (TF forwards it): they allocate nothing.
VIEW_OP_TYPES = frozenset({"Identity", "Reshape", "StopGradient", "Snapshot", "Squeeze", "ExpandDims"})
#: What an unknown dimension counts as in a static estimate.
UNKNOWN_DIM = 1
#: The clocks a measured duration can come from.
CLOCKS = ("sim", "wall")

STATIC, MEASURED, DEFAULT = "static", "measured", "default"
_warned_op_types: set[str] = set()


@dataclasses.dataclass(frozen=True)
class MeasuredNode:
    """One node as an earlier step ran it: its device, duration (s) and output sizes (bytes)."""

    device: str
    duration_s: float
    output_bytes: tuple[int, ...]


Steps: TypeAlias = StepStats | RunMetadata | Iterable[StepStats | RunMetadata]


def measured_nodes(steps: Steps, clock: str = "sim") -> dict[str, MeasuredNode]:
    """Node name → :class:`MeasuredNode` from one or more traced steps (later steps win).

    A step is dfcore's StepStats (``dfcore.step_records(run_metadata).step_stats``) or the ``RunMetadata``
    of a ``Session.run`` with ``RunOptions(trace_level=FULL_TRACE)``. ``clock="sim"`` takes the
    simulated-clock durations (deterministic), ``"wall"`` the measured wall-clock ones.

    Raises:
        ValueError: an unknown clock, a RunMetadata of no traced run, or ``"sim"`` on StepStats without
            simulated times.
    """
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, got {clock!r}")
    found: dict[str, MeasuredNode] = {}
    listed = [steps] if isinstance(steps, (StepStats, RunMetadata)) else list(steps)
    for step in (step_records(s).step_stats if isinstance(s, RunMetadata) else s for s in listed):
        in_step: dict[str, MeasuredNode] = {}
        for dev in step.dev_stats:
            for ns in dev.node_stats:
                if clock == "wall":
                    duration_s = (ns.op_end_rel_micros - ns.op_start_rel_micros) / 1e6
                elif ns.sim_start_micros is None or ns.sim_end_micros is None:
                    raise ValueError(f"Node '{ns.node_name}' has no simulated times: pass the StepStats of "
                                     "dfcore.step_records(run_metadata), or clock='wall'")
                else:
                    duration_s = (ns.sim_end_micros - ns.sim_start_micros) / 1e6
                earlier = in_step.get(ns.node_name)
                total_s = duration_s + (earlier.duration_s if earlier is not None else 0.0)
                in_step[ns.node_name] = MeasuredNode(dev.device, total_s, ns.output_bytes)
        found.update(in_step)
    return found


class CostTable:
    """Compute times, output sizes and memory of the ops of one graph on the devices of ``machine``.

    Args:
        machine: a :class:`~dfcore.runtime.cost_model.MachineProfile` naming every device placed on.
        measured: node name → :class:`MeasuredNode` (:func:`measured_nodes`); None for static costs only.
    """

    def __init__(self, machine: cost_model.MachineProfile, measured: Mapping[str, MeasuredNode] | None = None):
        self.machine = machine
        self.measured = dict(measured or {})
        self._static: dict[tuple[Operation, int], float] = {}
        self._costs: dict[Operation, cost_model.OpCost] = {}
        self._bytes: dict[Operation, tuple[int, ...]] = {}
        self._profiles: dict[str, cost_model.DeviceProfile] = {}
        self._defaulted: dict[str, str] = {}  # op type with no cost function → its first node

    def source(self, op: Operation) -> str:
        """Where ``op``'s compute time comes from: ``"measured"``, ``"static"`` or ``"default"``."""
        if op.name in self.measured:
            return MEASURED
        return STATIC if registry.cost_function(op.type) is not None else DEFAULT

    def compute_s(self, op: Operation, device: str) -> float:
        """Estimated seconds ``op`` computes on ``device`` (a full name of the machine)."""
        profile = self._profiles.get(device)
        if profile is None:
            profile = self._profiles[device] = self.machine.device(device)
        seen = self.measured.get(op.name)
        if seen is None:
            return self._static_s(op, profile)
        if seen.device not in self.machine.devices or self.machine.devices[seen.device] == profile:
            return seen.duration_s
        here, there = self._static_s(op, profile), self._static_s(op, self.machine.devices[seen.device])
        return seen.duration_s * here / there if there > 0 else seen.duration_s

    def output_bytes(self, op: Operation) -> tuple[int, ...]:
        """Bytes of each output of ``op``: measured when known, else from its static shape and dtype."""
        found = self._bytes.get(op)
        if found is None:
            seen = self.measured.get(op.name)
            if seen is not None and len(seen.output_bytes) == len(op.outputs):
                found = seen.output_bytes
            else:
                found = tuple(_elements(t.shape) * t.dtype.base_dtype.size for t in op.outputs)
            self._bytes[op] = found
        return found

    def memory_bytes(self, op: Operation) -> int:
        """Bytes ``op`` allocates on its device for the step: its outputs, or 0 for a view (a
        :data:`VIEW_OP_TYPES` op, or an op taking a variable by reference, ``Assign``, ``ApplyAdam``, …: what
        it returns is the variable)."""
        if op.type in VIEW_OP_TYPES or registry.ref_inputs(op.type):
            return 0
        return sum(self.output_bytes(op))

    def warn_defaults(self) -> None:
        """Say once, in one warning (``tf_logging``), which op types seen so far got the default estimate; an op
        type is named only the first time in the process."""
        new = {t: n for t, n in self._defaulted.items() if t not in _warned_op_types}
        if new:
            _warned_op_types.update(new)
            tf_logging.warning(
                "The cost model has no estimate for op type%s %s; the placer used the default for %s: one flop per "
                "output element, each input and output accessed once.", "s" if len(new) > 1 else "",
                ", ".join(f"'{t}' (node '{n}')" for t, n in sorted(new.items())), "them" if len(new) > 1 else "it")

    def _static_s(self, op, profile):
        key = (op, id(profile))  # the machine keeps its profiles alive
        found = self._static.get(key)
        if found is None:
            found = self._static[key] = cost_model.op_time_s(self._cost(op), profile)
        return found

    def _cost(self, op):
        cost = self._costs.get(op)
        if cost is None:
            if registry.cost_function(op.type) is None:
                self._defaulted.setdefault(op.type, op.name)
            ins = [_dims(t.shape) for t in op.inputs]
            outs = [_dims(t.shape) for t in op.outputs]
            typed = op.outputs or op.inputs
            size = typed[0].dtype.base_dtype.size if typed else 4
            try:
                cost = cost_model.op_cost(op.type, ins, outs, size, op.attrs)
            except (ValueError, IndexError, TypeError):  # a rank the cost function cannot read (unknown rank)
                cost = cost_model.OpCost(sum(map(op_costs.num_elements, outs)),
                                         op_costs.io_elements(ins, outs) * size)
            self._costs[op] = cost
        return cost


def _dims(shape):
    dims = shape.as_tuple()
    return () if dims is None else tuple(UNKNOWN_DIM if d is None else d for d in dims)


def _elements(shape):
    n = 1
    for d in _dims(shape):
        n *= d
    return n
