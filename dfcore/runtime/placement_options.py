"""How a session places its graph: ``Session(placement="cost_model")`` or ``Session(placement=PlacementOptions(...))``.

dfcore's own option, not TF's: TF's ``ConfigProto`` (``core/protobuf/config.proto``) has no field choosing a
placement algorithm, because TF only ever shipped the rule-based placer (``common_runtime/placer.cc``); the
whitepaper's cost-model placer (§3.2.1) was never released. dfcore's ``ConfigProto`` is TF's real message, so
the choice is a keyword of ``Session`` instead of a field.

Strategies (a registry keyed by name, :func:`register_strategy`):

* ``"rules"`` (default): TF's placer, :func:`dfcore.runtime.placer.place`; with ``check_memory=True`` the
  placement's memory is then checked against the devices' limits (TF's allocator would fail in the step);
* ``"cost_model"``: the whitepaper's greedy simulation, :func:`dfcore.runtime.cost_placer.place`, with
  static costs, or measured ones from ``measured`` (the StepStats of earlier steps of the same graph); it always
  respects the memory limits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

from .. import errors
from ..framework.operation import Operation
from . import cost_placer, placer
from .cost_model import MachineProfile
from .device_set import DeviceSet
from .placement_costs import CostTable, Steps, measured_nodes
from .placement_memory import MemoryLedger, check_memory_limits, memory_limits
from .step_trace import machine_for

Strategy = Callable[["PlacementOptions", Iterable[Operation], DeviceSet, bool], placer.Placement]
_STRATEGIES: dict[str, Strategy] = {}


def register_strategy(name: str, fn: Strategy) -> None:
    """Make ``fn(options, ops, device_set, allow_soft_placement) -> Placement`` the strategy ``name``."""
    _STRATEGIES[name] = fn


def strategy_names() -> list[str]:
    """The registered strategy names, sorted."""
    return sorted(_STRATEGIES)


@dataclasses.dataclass(frozen=True)
class PlacementOptions:
    """A session's placement strategy and what it needs.

    Attributes:
        strategy: a registered name (``"rules"``, ``"cost_model"``).
        machine: hardware profiles of the devices (default: from the session's devices' profile names).
        memory_limit_bytes: device name → memory limit in bytes, overriding the profiles' ``memory_bytes``.
        measured: the ``RunMetadata`` of a FULL_TRACE run of the same graph, or its StepStats
            (``dfcore.step_records(run_metadata).step_stats``), or a sequence of them (later ones win), for
            measured costs (``"cost_model"``).
        measured_clock: ``"sim"`` (simulated-clock durations, deterministic) or ``"wall"``.
        check_memory: for ``"rules"``, check the placement against the memory limits (default False, as TF's
            placer); ``"cost_model"`` always does.

    Raises:
        InvalidArgumentError: an unknown strategy name (listing the known ones), or ``memory_limit_bytes`` that is
            not a mapping of device names to integers >= 0.
        ValueError: an unknown ``measured_clock``.
    """

    strategy: str = "rules"
    machine: MachineProfile | None = None
    memory_limit_bytes: Mapping[str, int] | None = None
    measured: Steps | None = None
    measured_clock: str = "sim"
    check_memory: bool = False

    def __post_init__(self) -> None:
        if self.strategy not in _STRATEGIES:
            raise errors.InvalidArgumentError(
                None, None, f"Unknown placement strategy '{self.strategy}'. Known strategies: "
                f"{', '.join(strategy_names())}")
        check_memory_limits(self.memory_limit_bytes)
        if self.measured_clock not in ("sim", "wall"):
            raise ValueError(f"measured_clock must be 'sim' or 'wall', got {self.measured_clock!r}")

    def place(self, ops: Iterable[Operation], device_set: DeviceSet,
              allow_soft_placement: bool = False) -> placer.Placement:
        """Place ``ops`` on ``device_set`` with this strategy."""
        return _STRATEGIES[self.strategy](self, ops, device_set, allow_soft_placement)

    def cost_table(self, device_set: DeviceSet) -> CostTable:
        """The :class:`~dfcore.runtime.placement_costs.CostTable` these options give on ``device_set``."""
        machine = self.machine if self.machine is not None else machine_for(device_set)
        measured = measured_nodes(self.measured, self.measured_clock) if self.measured is not None else None
        return CostTable(machine, measured)


PlacementArg = str | PlacementOptions | None


def placement_options(value: PlacementArg) -> PlacementOptions:
    """``Session``'s ``placement`` keyword as :class:`PlacementOptions` (None → the rules; a str → that strategy).

    Raises:
        InvalidArgumentError: an unknown strategy name. TypeError: neither a str nor PlacementOptions.
    """
    if value is None:
        return PlacementOptions()
    if isinstance(value, str):
        return PlacementOptions(value)
    if isinstance(value, PlacementOptions):
        return value
    raise TypeError(f"placement must be a strategy name or a PlacementOptions, got {type(value).__name__}")


def _place_rules(options, ops, device_set, soft):
    placement = placer.place(ops, device_set, soft)
    if options.check_memory:
        costs = options.cost_table(device_set)
        names = [d.name for d in device_set.prioritized_devices()]
        ledger = MemoryLedger(costs, memory_limits(costs, names, options.memory_limit_bytes))
        ops = sorted(placement, key=lambda op: op._id)
        devices = dict(placement.items())
        for op in ops:
            device = devices[op]
            pending = ledger.prepare(op, [op])
            need = ledger.need_on(pending, device, devices)
            if need > ledger.free(device):
                raise ledger.oom_error(op, [op], {device: need}, ops)
            ledger.commit(pending, device, devices)
    return placement


def _place_cost(options, ops, device_set, soft):
    return cost_placer.place(ops, device_set, soft, costs=options.cost_table(device_set),
                             memory_limit_bytes=options.memory_limit_bytes)


register_strategy("rules", _place_rules)
register_strategy("cost_model", _place_cost)
