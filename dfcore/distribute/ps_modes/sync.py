"""``sync``: TF1's ``SyncReplicasOptimizer`` — one averaged update per ``replicas_to_aggregate`` gradients.

Source: ``tensorflow/python/training/sync_replicas_optimizer.py`` (TF 1.x). Rule: a worker
pushes its gradient to one ``ConditionalAccumulator`` per variable, tagged with its local
step (the global step of the token it took); an accumulator silently drops a gradient whose
local step is older than the global step (stale). The chief's sync op waits for
``replicas_to_aggregate`` gradients, applies their average (global step + 1) and enqueues
``max(total_num_replicas, replicas_to_aggregate)`` tokens holding the new global step. A worker
needs a token before each step but its first. Fewer ``replicas_to_aggregate`` than workers
are backup workers: the late gradients are dropped. A gradient accepted at local step ``L``
is applied at version ``L``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import train as train_lib
from ...ops import control_flow_ops, state_ops
from ...runtime.config import RunOptions
from .base import Discipline, Pushed

if TYPE_CHECKING:
    from ..ps_model import WorkerModel


class Sync(Discipline):
    """See the module doc."""

    name = "sync"
    needs_chief = True
    blocking_gate = True  # the token dequeue: as TF's train op, which ends by taking a token
    waits_for = "a token (the other replicas' gradients)"

    def build(self, t: dict[str, Any], index: int, opt: Any, grads_and_vars: list[tuple[Any, Any]], gs: Any,
              ema: Any) -> None:
        config = self.config
        sync = train_lib.SyncReplicasOptimizer(opt, config.replicas_to_aggregate, config.num_workers,
                                               variable_averages=ema,
                                               variables_to_average=t["params"] if ema else None)
        t["train_op"] = sync.apply_gradients(grads_and_vars, gs)
        graph = gs.graph
        push = control_flow_ops.group(*sync.worker_push_ops, name="push_gradients")
        with graph.device(gs.device):
            t["token_op"] = state_ops.assign(sync.local_step, sync.sync_token_queue.dequeue(), name="take_token")
            t["tokens_left"] = sync.sync_token_queue.size()  # the drivers' one extra op: may a worker go on?
        t.update(sync_opt=sync, push_op=push, num_accumulated=sync.accumulators[0][0].num_accumulated(),
                 local_step=sync.local_step, chief_init=sync.chief_init_op, local_step_init=sync.local_step_init_op,
                 sync_op=sync.sync_op, init_tokens=sync.get_init_tokens_op(0))

    def initialize(self, model: WorkerModel, chief: bool) -> None:
        model.session.run(model.local_step_init)
        if chief:
            model.session.run([model.chief_init, model.init_tokens])

    def ready(self, model: WorkerModel, clock: int, first: bool) -> bool:
        return first or int(model.session.run(model.tokens_left)) > 0

    def begin(self, model: WorkerModel, clock: int, first: bool, options: RunOptions) -> None:
        if not first:
            model.session.run(model.token_op, options=options)

    def push(self, model: WorkerModel, feed: dict[Any, Any], clock: int, options: RunOptions) -> Pushed:
        _, local, version = model.session.run([model.push_op, model.local_step, model.global_step], feed,
                                              options=options)
        accepted = int(local) == int(version)  # the accumulators' step is the global step between sync ops
        return Pushed(int(local) if accepted else int(version), accepted, False)

    def chief_apply(self, chief: WorkerModel, version: int, options: RunOptions) -> bool:
        if int(chief.session.run(chief.num_accumulated, options=options)) < self.config.replicas_to_aggregate:
            return False
        chief.session.run(chief.sync_op, options=options)
        return True

    def block(self, model: WorkerModel, chief: WorkerModel, version: int, options: RunOptions) -> None:
        model.session.run(model.token_op, options=options)
