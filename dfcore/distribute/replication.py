"""In-graph vs between-graph replication of the same model, and what each costs in graph size.

Source: TF whitepaper §7 / Fig. 7 and TF's distributed guide: *in-graph* replication has
one client build one graph holding every worker's tower (variables and ``global_step`` on the ps,
the towers' gradients averaged and applied once, incrementing ``global_step``); *between-graph*
replication has one client per worker, each building its own copy of the model under
``replica_device_setter``, sharing the variables through the ps tasks (here synchronised by
``SyncReplicasOptimizer``).

:func:`compare_replication` builds both on one in-process cluster, counts their ops per
task, and runs one synchronous step of each from the same initial values: with equal
batches both apply the same averaged gradient (checked to ``atol``).
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import numpy as np

from .. import train as train_lib
from ..framework import dtypes
from ..framework.device import DeviceSpec
from ..framework.graph import Graph
from ..models.mlp import average_gradients, mlp_variables, tower_loss
from ..ops import array_ops, variables
from ..runtime.session import Session
from ..train.cluster_spec import ClusterSpec
from .ps_data import ShardedDigits
from .ps_model import NUM_FEATURES, ModelConfig, build_worker, start_cluster


@dataclasses.dataclass(frozen=True)
class GraphSize:
    """Ops of one client's graph: the total and per task (``/job:ps/replica:0/task:0`` → count)."""

    num_ops: int
    ops_per_task: types.MappingProxyType[str, int]


@dataclasses.dataclass(frozen=True)
class ReplicationComparison:
    """``in_graph``: the one client's graph; ``between_graph``: one :class:`GraphSize` per worker
    client; ``max_abs_difference``: between the parameters after one step of each."""

    in_graph: GraphSize
    between_graph: tuple[GraphSize, ...]
    max_abs_difference: float

    @property
    def between_graph_total_ops(self) -> int:
        return sum(g.num_ops for g in self.between_graph)


def graph_size(graph: Graph) -> GraphSize:
    """A :class:`GraphSize` from the requested devices of ``graph``'s ops (unplaced ops: ``"(any)"``)."""
    counts: dict[str, int] = {}
    for op in graph.get_operations():
        spec = DeviceSpec.from_string(op.device or "")
        task = "(any)" if spec.job is None else f"/job:{spec.job}/replica:0/task:{spec.task or 0}"
        counts[task] = counts.get(task, 0) + 1
    return GraphSize(len(graph.get_operations()), types.MappingProxyType(dict(sorted(counts.items()))))


def build_in_graph(spec: ClusterSpec, config: ModelConfig) -> tuple[Graph, dict[str, Any]]:
    """One graph with a tower per worker task and a ``global_step`` its train op increments, as the
    between-graph workers' graphs have; returns ``(graph, handles)``."""
    graph = Graph()
    with graph.as_default():
        with graph.device(train_lib.replica_device_setter(cluster=spec, worker_device="/job:worker/task:0")):
            global_step = train_lib.get_or_create_global_step()
            params = list(mlp_variables(NUM_FEATURES, config.hidden, 10, config.seed))
            opt = train_lib.GradientDescentOptimizer(config.learning_rate)
        xs, ys, tower_grads = [], [], []
        for w in range(config.num_workers):
            with graph.device(f"/job:worker/task:{w}"), graph.name_scope(f"tower_{w}"):
                xs.append(array_ops.placeholder(dtypes.float32, [config.batch_size, NUM_FEATURES], name="x"))
                ys.append(array_ops.placeholder(dtypes.int64, [config.batch_size], name="y"))
                tower_grads.append(opt.compute_gradients(tower_loss(xs[-1], ys[-1], params), var_list=params))
        with graph.device("/job:worker/task:0"):
            train_op = opt.apply_gradients(average_gradients(tower_grads), global_step=global_step)
        init = variables.global_variables_initializer()
    return graph, dict(params=params, xs=xs, ys=ys, train_op=train_op, init=init, global_step=global_step)


def compare_replication(num_workers: int = 4, num_ps: int = 1, batch_size: int = 32, hidden: int = 64,
                        learning_rate: float = 0.5, seed: int = 0, atol: float = 1e-6) -> ReplicationComparison:
    """Build both replication styles on one cluster and run one step of each; see the module doc."""
    config = ModelConfig("sync", num_ps, num_workers, num_workers, 0, learning_rate, hidden, batch_size, seed,
                         "round_robin", None)
    data = ShardedDigits(num_workers, batch_size, seed)
    batches = [data.batch(w, 0) for w in range(num_workers)]
    spec, ps_servers, worker_servers = start_cluster(config)
    sessions = []
    try:
        graph, h = build_in_graph(spec, config)
        in_sess = Session(worker_servers[0].target, graph=graph)
        sessions.append(in_sess)
        in_sess.run(h["init"])
        initial = in_sess.run(h["params"])
        feed = {x: b[0] for x, b in zip(h["xs"], batches)}
        feed.update({y: b[1] for y, b in zip(h["ys"], batches)})
        in_sess.run(h["train_op"], feed)
        after_in_graph = in_sess.run(h["params"])
        models = [build_worker(w, config, spec, worker_servers[w]) for w in range(num_workers)]
        sessions += [m.session for m in models]
        chief = models[0]
        chief.session.run(chief.init)
        for var, value in zip(chief.params, initial):
            var.load(value, chief.session)
        for model in models:
            model.session.run([model.local_init])
            model.session.run(model.local_step_init)
        chief.session.run(chief.chief_init)
        for model, (xb, yb) in zip(models, batches):
            grads = model.session.run(model.grads, {model.x: xb, model.y: yb})
            model.session.run(model.push_op, dict(zip(model.grads, grads)))
        chief.session.run(chief.sync_op)
        after_between = chief.session.run(chief.params)
        difference = max(float(np.max(np.abs(a - b))) for a, b in zip(after_in_graph, after_between))
        return ReplicationComparison(graph_size(graph), tuple(graph_size(m.graph) for m in models), difference)
    finally:
        for sess in sessions:
            sess.close()
        for server in ps_servers + worker_servers:
            server.stop("comparison done")
