"""``async``: Downpour SGD — every gradient is applied to the ps variables as soon as it arrives.

Source: Dean et al., "Large Scale Distributed Deep Networks" (NIPS 2012), and TF1's
between-graph training without ``SyncReplicasOptimizer`` (each worker's ``apply_gradients``
on the ps variables). Rule: no gate; the push applies the gradient and increments the global
step (and the moving averages, if any): it is applied at the global step it finds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...ops import state_ops
from ...runtime.config import RunOptions
from .base import Discipline, Pushed

if TYPE_CHECKING:
    from ..ps_model import WorkerModel


def build_apply(t: dict[str, Any], opt: Any, grads_and_vars: list[tuple[Any, Any]], gs: Any, ema: Any) -> Any:
    """The immediate update (``async`` and ``ssp`` share it, so their arithmetic is the same): apply the
    gradients, increment the global step, then the moving averages; returns the last op. Sets
    ``t["apply_op"]``."""
    graph = gs.graph
    applied = opt.apply_gradients(grads_and_vars)
    with graph.control_dependencies([applied]), graph.colocate_with(gs.op):
        step = state_ops.assign_add(gs, 1, name="increment_global_step").op
    last = step
    if ema is not None:
        with graph.control_dependencies([step]):
            last = ema.apply(t["params"])
    t["apply_op"] = last
    return last


class Async(Discipline):
    """See the module doc."""

    name = "async"

    def build(self, t: dict[str, Any], index: int, opt: Any, grads_and_vars: list[tuple[Any, Any]], gs: Any,
              ema: Any) -> None:
        graph = gs.graph
        last = build_apply(t, opt, grads_and_vars, gs, ema)
        with graph.control_dependencies([last]), graph.colocate_with(gs.op):
            t["new_version"] = gs.read_value()  # on the ps: read after the update

    def push(self, model: WorkerModel, feed: dict[Any, Any], clock: int, options: RunOptions) -> Pushed:
        new_version = int(model.session.run(model.new_version, feed, options=options))
        return Pushed(new_version - 1, True, True)
