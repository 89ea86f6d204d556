"""``ssp``: stale synchronous parallel, as Ho et al. define it.

Source: Ho et al., "More Effective Distributed ML via a Stale Synchronous Parallel Parameter
Server" (NIPS 2013), §2. Rule: worker ``w``'s update of its clock ``c`` is applied to the ps
variables as soon as it arrives (the same update op as ``async``), and then the ps counts it
in ``ssp_clocks[w]`` (the clocks of ``w`` whose update is in). A worker at clock ``c`` may read
the parameters only once every update of clocks ``≤ c - s - 1`` is in, i.e.
``min(ssp_clocks) ≥ c - s``; what it reads may hold newer updates too, and always holds its
own (a worker starts its next clock after its push is applied: read-my-writes). ``s = 0`` is
bulk-synchronous (every worker reads, at clock ``c``, after all updates of clock ``c - 1``);
an ``s`` as large as the run never closes the gate: ``async``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...framework import dtypes
from ...ops import array_ops, math_ops, state_ops, variables
from ...runtime.config import RunOptions
from .async_ import build_apply
from .base import Discipline, Pushed

if TYPE_CHECKING:
    from ..ps_model import WorkerModel


class SSP(Discipline):
    """See the module doc."""

    name = "ssp"

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self._floor = 0  # a slowest clock seen on the ps: clocks only grow, so the gate stays open below it

    @property
    def waits_for(self) -> str:  # type: ignore[override]
        return f"the slowest worker (SSP: every update of clocks <= c - {self.config.staleness} - 1 in)"

    def build(self, t: dict[str, Any], index: int, opt: Any, grads_and_vars: list[tuple[Any, Any]], gs: Any,
              ema: Any) -> None:
        graph, n = gs.graph, self.config.num_workers
        with graph.colocate_with(gs.op):
            clocks = variables.Variable(array_ops.zeros([n], dtype=dtypes.int64), trainable=False, name="ssp_clocks")
        last = build_apply(t, opt, grads_and_vars, gs, ema)
        mine = np.zeros(n, np.int64)
        mine[index] = 1
        with graph.control_dependencies([last]), graph.colocate_with(gs.op):
            counted = state_ops.assign_add(clocks, mine, name="count_clock")
        with graph.control_dependencies([counted.op]), graph.colocate_with(gs.op):
            t["new_version"] = gs.read_value()
        with graph.colocate_with(gs.op):
            t["min_clock"] = math_ops.reduce_min(clocks)
        t["ssp_clocks"] = clocks

    def ready(self, model: WorkerModel, clock: int, first: bool) -> bool:
        needed = clock - self.config.staleness
        if needed <= self._floor:
            return True
        self._floor = max(self._floor, int(model.session.run(model.min_clock)))
        return self._floor >= needed

    def pull_fetches(self, model: WorkerModel) -> list[Any]:
        return [model.min_clock]

    def slowest_clock(self, values: list[Any]) -> int:
        self._floor = max(self._floor, int(values[0]))
        return int(values[0])

    def push(self, model: WorkerModel, feed: dict[Any, Any], clock: int, options: RunOptions) -> Pushed:
        new_version = int(model.session.run(model.new_version, feed, options=options))
        return Pushed(new_version - 1, True, True)
