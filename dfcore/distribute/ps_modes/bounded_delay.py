"""``bounded_delay``: synchronous SGD whose per-clock averaged updates may be applied up to ``s`` clocks late.

Source: bounded-delay SGD (Li et al., "Scaling Distributed Machine Learning with the Parameter
Server", OSDI 2014, "Flexible Consistency": bounded delay τ), built from TF1's ``SyncReplicasOptimizer`` pieces.
Rule: the gradients of clock ``c`` go to accumulator slot ``c mod (s+1)`` (shared names
``<var>/ssp_accum_<k>``); the chief applies update ``c`` — the average of the ``num_workers``
gradients of clock ``c``, with the same ``take_grad`` + ``apply_gradients`` ops as ``sync`` —
clock after clock; a worker may start clock ``c`` once the global step is at least ``c - s``.
``s = 0`` gives exactly ``sync``'s arithmetic. (Not Ho et al.'s SSP, :mod:`.ssp`: here
no update is applied before its clock's average is complete.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...framework import dtypes
from ...ops import array_ops, control_flow_ops, data_flow_ops
from ...runtime.config import RunOptions
from .base import Discipline, Pushed

if TYPE_CHECKING:
    from ..ps_model import WorkerModel


class BoundedDelay(Discipline):
    """See the module doc."""

    name = "bounded_delay"
    needs_chief = True

    @property
    def waits_for(self) -> str:  # type: ignore[override]
        return f"the slowest worker (bounded delay {self.config.staleness})"

    def build(self, t: dict[str, Any], index: int, opt: Any, grads_and_vars: list[tuple[Any, Any]], gs: Any,
              ema: Any) -> None:
        graph, s = gs.graph, self.config.staleness
        t["clock_round"] = array_ops.placeholder(dtypes.int64, [], name="clock_round")
        pushes, applies, counts = [], [], []
        for slot in range(s + 1):
            accumulators = []
            with graph.name_scope(f"ssp_slot_{slot}"):
                for grad, var in grads_and_vars:
                    with graph.device(var.device):
                        accumulators.append(data_flow_ops.ConditionalAccumulator(
                            grad.dtype, shape=var.shape, shared_name=f"{var.name}/ssp_accum_{slot}"))
                pushes.append(control_flow_ops.group(*[a.apply_grad(g, local_step=t["clock_round"])
                                                       for a, (g, _) in zip(accumulators, grads_and_vars)]))
                averaged = [a.take_grad(self.config.num_workers) for a in accumulators]
                counts.append(accumulators[0].num_accumulated())
            with graph.device(gs.device):
                applies.append(opt.apply_gradients(list(zip(averaged, t["params"])), global_step=gs))
        t.update(slot_push=pushes, slot_apply=applies, slot_count=counts,
                 ema_op=ema.apply(t["params"]) if ema is not None else None)

    def gradients_per_update(self) -> int:
        """``num_workers``: update ``c`` averages every worker's gradient of clock ``c``."""
        return self.config.num_workers

    def ready(self, model: WorkerModel, clock: int, first: bool) -> bool:
        needed = clock - self.config.staleness
        return needed <= 0 or int(model.session.run(model.global_step)) >= needed

    def feed(self, model: WorkerModel, clock: int) -> dict[Any, Any]:
        return {model.clock_round: np.int64(clock // (self.config.staleness + 1))}

    def push(self, model: WorkerModel, feed: dict[Any, Any], clock: int, options: RunOptions) -> Pushed:
        model.session.run(model.slot_push[clock % (self.config.staleness + 1)], feed, options=options)
        return Pushed(clock, True, False)

    def chief_apply(self, chief: WorkerModel, version: int, options: RunOptions) -> bool:
        slot = version % (self.config.staleness + 1)
        if int(chief.session.run(chief.slot_count[slot], options=options)) < self.config.num_workers:
            return False
        chief.session.run(chief.slot_apply[slot], options=options)
        if chief.ema_op is not None:  # decay from the step before the update, as in sync's sync op
            chief.session.run(chief.ema_op, {chief.global_step.value(): np.int64(version)}, options=options)
        return True

    def done(self, clock: int, version: int, steps: int) -> bool:
        return clock >= steps  # update c is clock c's average

    def block(self, model: WorkerModel, chief: WorkerModel, version: int, options: RunOptions) -> None:
        chief.session.run(chief.slot_apply[version % (self.config.staleness + 1)], options=options)
