"""The graphs of a parameter-server run: one per worker (between-graph replication), on an in-process cluster.

Source: TF1's between-graph recipe (``replica_device_setter`` + ``SyncReplicasOptimizer``,
``tensorflow/tools/dist_test/python/mnist_replica.py``). Every worker builds the digits MLP
under ``replica_device_setter``: variables (and ``global_step``) on the ps tasks, the
rest on its own task; the update discipline adds its own ops
(:meth:`dfcore.distribute.ps_modes.Discipline.build`). With ``w1_shards`` > 1 the first layer's
weights are one partitioned variable (``tf.fixed_size_partitioner``) whose shards the setter
spreads over the ps tasks (:func:`dfcore.models.mlp.sharded_mlp_variables`).

Worker 0 is the chief: it also holds the evaluation ops and the ``Saver``.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import train as train_lib
from ..framework import dtypes
from ..framework.graph import Graph
from ..models.mlp import flat_variables, mlp_logits, mlp_variables, regroup, sharded_mlp_variables, tower_loss
from ..ops import array_ops, math_ops, nn_ops_xent, variables
from ..runtime import cost_model, prune
from ..runtime.config import ConfigProto
from ..runtime.session import Session
from ..train import device_setter
from ..train.cluster_spec import ClusterSpec
from .cluster import Server
from .ps_modes import DISCIPLINES

NUM_FEATURES, NUM_CLASSES = 64, 10
_RUNS = itertools.count()


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """What the graphs depend on (see :func:`dfcore.distribute.parameter_server.train`)."""

    mode: str
    num_ps: int
    num_workers: int
    replicas_to_aggregate: int
    staleness: int
    learning_rate: float
    hidden: int
    batch_size: int
    seed: int
    ps_strategy: str
    ema_decay: float | None
    w1_shards: int = 1


class WorkerModel:
    """One worker's graph, session and the tensors and ops the drivers run."""

    if TYPE_CHECKING:
        # The tensors and ops are attributes named by build_worker's table (loss, grads, train_op, ...).
        def __getattr__(self, name: str) -> Any: ...

    def __init__(self, index: int, graph: Graph, session: Session, tensors: Mapping[str, Any]) -> None:
        self.index = index
        self.graph = graph
        self.session = session
        self.__dict__.update(tensors)


def start_cluster(config: ModelConfig) -> tuple[ClusterSpec, list[Server], list[Server]]:
    """``(ClusterSpec, ps servers, worker servers)`` of a fresh in-process cluster (CPU-only tasks)."""
    run = next(_RUNS)
    spec = ClusterSpec({"ps": [f"ps{i}.run{run}.local:2222" for i in range(config.num_ps)],
                        "worker": [f"worker{i}.run{run}.local:2222" for i in range(config.num_workers)]})
    task_config = ConfigProto(device_count={"CPU": 1, "GPU": 0})
    ps = [Server(spec, "ps", i, config=task_config) for i in range(config.num_ps)]
    workers = [Server(spec, "worker", i, config=task_config) for i in range(config.num_workers)]
    return spec, ps, workers


def _strategy(config):
    if config.ps_strategy == "greedy":
        return train_lib.GreedyLoadBalancingStrategy(config.num_ps)
    if config.ps_strategy == "round_robin":
        return None
    raise ValueError(f"ps_strategy must be 'round_robin' or 'greedy', got {config.ps_strategy!r}")


def build_worker(index: int, config: ModelConfig, spec: ClusterSpec, server: Server,
                 executor_runner: str = "inline") -> WorkerModel:
    """The :class:`WorkerModel` of worker ``index`` (a session on its server's target)."""
    graph = Graph()
    t: dict[str, Any] = {}
    with graph.as_default():
        setter = train_lib.replica_device_setter(cluster=spec, worker_device=f"/job:worker/task:{index}",
                                                 ps_strategy=_strategy(config))
        with graph.device(setter):
            gs = train_lib.get_or_create_global_step()
            x = array_ops.placeholder(dtypes.float32, [config.batch_size, NUM_FEATURES], name="x")
            y = array_ops.placeholder(dtypes.int64, [config.batch_size], name="y")
            shape = (NUM_FEATURES, config.hidden, NUM_CLASSES, config.seed)
            weights = (sharded_mlp_variables(*shape, config.w1_shards) if config.w1_shards > 1
                       else mlp_variables(*shape))
            params = flat_variables(weights)
            loss = tower_loss(x, y, weights)
            opt = train_lib.GradientDescentOptimizer(config.learning_rate)
            grads_and_vars = opt.compute_gradients(loss, var_list=params)
            ema = (train_lib.ExponentialMovingAverage(config.ema_decay, num_updates=gs)
                   if config.ema_decay else None)
            t.update(global_step=gs, x=x, y=y, params=params, loss=loss, grads=[g for g, _ in grads_and_vars],
                     ema=ema)
            DISCIPLINES[config.mode](config).build(t, index, opt, grads_and_vars, gs, ema)
            if index == 0:
                _chief_extras(t, config, params, ema)
        t["init"] = variables.global_variables_initializer()
        t["local_init"] = variables.local_variables_initializer()
    session = Session(server.target, graph=graph, executor_runner=executor_runner)
    return WorkerModel(index, graph, session, t)


def _chief_extras(t, config, params, ema):
    """Evaluation on the test set (with and without the moving averages) and the Saver."""
    x_eval = array_ops.placeholder(dtypes.float32, [None, NUM_FEATURES], name="x_eval")
    y_eval = array_ops.placeholder(dtypes.int64, [None], name="y_eval")

    def metrics(weights):
        logits = mlp_logits(x_eval, weights)
        loss = math_ops.reduce_mean(nn_ops_xent.sparse_softmax_cross_entropy_with_logits(labels=y_eval, logits=logits))
        correct = math_ops.equal(math_ops.argmax(logits, 1), y_eval)
        return loss, math_ops.reduce_mean(math_ops.cast(correct, dtypes.float32))

    t["x_eval"], t["y_eval"] = x_eval, y_eval
    t["eval_loss"], t["eval_accuracy"] = metrics(regroup(params, config.w1_shards))
    t["eval_accuracy_ema"] = (metrics(regroup([ema.average(v) for v in params], config.w1_shards))[1]
                              if ema is not None else None)
    t["saver"] = train_lib.Saver(max_to_keep=3)


@dataclasses.dataclass(frozen=True)
class StepCosts:
    """Simulated costs of one worker step: compute time of its gradient ops on its CPU, and
    the bytes pulled from / pushed to each ps task, with the link between them."""

    compute_s: float
    bytes_per_ps: tuple[int, ...]
    link: cost_model.LinkProfile

    @property
    def pull_s(self) -> float:
        """One uncontended pull: a message from every ps task, one after another through the worker's inbound
        interface (:func:`~dfcore.runtime.cost_model.nic_ports`), so one latency per ps task plus all the bytes
        over the bandwidth; contention with other workers is the simulation's
        (:mod:`~dfcore.distribute.ps_simulation`)."""
        return sum(cost_model.transfer_time_s(nbytes, self.link) for nbytes in self.bytes_per_ps)


def step_costs(model: WorkerModel, config: ModelConfig,
               worker_profile: cost_model.DeviceProfile = cost_model.NUMPY_CORE) -> StepCosts:
    """:class:`StepCosts` from the cost model (static shapes, ops on ``worker_profile``) and the ps load table."""
    ops = prune.prune([model.loss] + model.grads, [], [model.x, model.y])
    compute_s = 0.0
    for op in sorted(ops, key=lambda o: o._id):
        if "/job:ps" in (op.device or "") or op.type in device_setter.STANDARD_PS_OPS:
            continue
        shapes_in = [s.shape for s in op.inputs]
        shapes_out = [s.shape for s in op.outputs]
        if not all(s.is_fully_defined() for s in shapes_in + shapes_out):
            continue
        size = op.outputs[0].dtype.base_dtype.size if op.outputs else 4
        cost = cost_model.op_cost(op.type, [s.as_list() for s in shapes_in], [s.as_list() for s in shapes_out],
                                  size, op.attrs)
        compute_s += cost_model.op_time_s(cost, worker_profile)
    loads = device_setter.ps_load_table(model.graph, num_tasks=config.num_ps)
    trainable = {v.op.name for v in model.params}
    per_ps = []
    for load in loads:
        names = [n for n in load.variables if n in trainable]
        per_ps.append(sum(v.shape.num_elements() * 4 for v in model.params if v.op.name in names))
    return StepCosts(compute_s, tuple(per_ps), cost_model.ETHERNET_10G)
