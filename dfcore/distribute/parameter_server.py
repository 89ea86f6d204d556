"""Parameter-server training of the digits MLP on an in-process cluster: ``sync``, ``async`` and ``ssp``.

Source: TF1's between-graph replication (``SyncReplicasOptimizer``, ``replica_device_setter``),
Dean et al. 2012 (Downpour: asynchronous updates), Ho et al. 2013 (stale-synchronous
parallel: a worker may run at most ``s`` clocks ahead of the slowest; ``s = 0`` is BSP).

:func:`train` starts a cluster of ``num_ps`` ps tasks and ``num_workers`` worker tasks
(:mod:`dfcore.distribute.cluster`), builds one graph and session per worker
(:mod:`dfcore.distribute.ps_model`) and runs them either ordered by the simulated clock
(``execution="simulated"``: :mod:`dfcore.distribute.ps_simulation`, deterministic) or as
free-running threads (``execution="threads"``: :mod:`dfcore.distribute.ps_threads`).
It returns a :class:`~dfcore.distribute.staleness.RunRecord`.

``steps`` counts parameter updates (global steps): in ``sync`` and ``ssp`` one update
averages one gradient per worker (``replicas_to_aggregate`` in ``sync``); in ``async``
every gradient is an update, so the same data needs ``num_workers`` times more steps.
"""

from __future__ import annotations

import dataclasses
import os
import types
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import errors
from ..models.digits import load_digits_split
from ..runtime import cost_model
from .arguments import check_count
from .ps_arguments import check_train_arguments
from .ps_model import ModelConfig, build_worker, start_cluster, step_costs
from .ps_simulation import SimulatedRun, load_sidecar, save_sidecar
from .staleness import EvalPoint, RunRecord

#: Default updates and learning rates, chosen so ``sync`` and ``ssp`` reach ≥ 0.95 test accuracy.
DEFAULT_STEPS = {"sync": 300, "ssp": 300, "async": 1200}
DEFAULT_LEARNING_RATE = {"sync": 0.5, "ssp": 0.5, "async": 0.15}


class ShardedDigits:
    """The digits split, each worker reading its own shard (training examples ``w::num_workers``).

    ``batch(w, clock)`` is a function of ``(seed, w, clock)`` only, so a restored run reads
    the same batches as an uninterrupted one.

    Raises:
        ArgumentRangeError: ``batch_size`` larger than the smallest shard (batches are drawn
            without replacement).
    """

    def __init__(self, num_workers: int, batch_size: int, seed: int) -> None:
        split = load_digits_split(seed=seed)
        smallest_shard = len(range(num_workers - 1, len(split.x_train), num_workers))
        check_count("batch_size", batch_size, 1, smallest_shard,
                    f"(the examples of the smallest of {num_workers} worker shards)")
        self.x_train, self.y_train = split.x_train, split.y_train
        self.x_test, self.y_test = split.x_test, split.y_test
        self.num_workers, self.batch_size, self.seed = num_workers, batch_size, seed

    def batch(self, worker: int, clock: int) -> tuple[np.ndarray, np.ndarray]:
        shard = np.arange(worker, len(self.x_train), self.num_workers)
        rng = np.random.default_rng([self.seed, worker, clock])
        index = rng.choice(shard, self.batch_size, replace=False)
        return self.x_train[index], self.y_train[index]


@dataclasses.dataclass
class DriverOptions:
    """The driver's knobs the runners read (see :func:`train`)."""

    steps: int
    straggler: dict[int, float]  # worker -> speed factor
    kill_worker: dict[int, int]  # worker -> the step it dies at
    kill_ps: dict[int, int]  # ps task -> the version it dies at
    fault_timeout_s: float
    hooks: _Hooks

    def speed(self, worker: int) -> float:
        return float(self.straggler.get(worker, 1.0))


class _Hooks:
    """Evaluation and checkpoints, run by the chief between steps."""

    def __init__(self, chief, data, eval_every, checkpoint_dir, checkpoint_every):
        self.chief, self.data = chief, data
        self.eval_every = eval_every
        self.checkpoint_dir, self.checkpoint_every = checkpoint_dir, checkpoint_every
        self.evals = []

    def evaluate(self, version, time_s):
        loss, accuracy, accuracy_ema = self.metrics()
        self.evals.append(EvalPoint(version, time_s, loss, accuracy, accuracy_ema))

    def metrics(self):
        chief = self.chief
        fetches = [chief.eval_loss, chief.eval_accuracy]
        if chief.eval_accuracy_ema is not None:
            fetches.append(chief.eval_accuracy_ema)
        values = chief.session.run(fetches, {chief.x_eval: self.data.x_test, chief.y_eval: self.data.y_test})
        return float(values[0]), float(values[1]), (float(values[2]) if len(values) > 2 else None)

    def checkpoint(self, version, time_s, clocks):
        path = self.chief.saver.save(self.chief.session, os.path.join(self.checkpoint_dir, "model.ckpt"),
                                     global_step=version)
        save_sidecar(path, version, time_s, clocks)


def train(mode: str = "sync", staleness: int = 0, num_ps: int = 1, num_workers: int = 4,
          replicas_to_aggregate: int | None = None, straggler: Mapping[int, float] | None = None,
          steps: int | None = None, execution: str = "simulated", seed: int = 0, learning_rate: float | None = None,
          batch_size: int = 32, hidden: int = 64, ps_strategy: str = "round_robin", ema_decay: float | None = None,
          eval_every: int = 25, worker_profile: cost_model.DeviceProfile | None = None,
          checkpoint_dir: str | None = None, checkpoint_every: int = 0, restore: bool = False,
          kill_worker: Mapping[int, int] | None = None, kill_ps: Mapping[int, int] | None = None,
          fault_timeout_s: float = 0.5) -> RunRecord:
    """Train the digits MLP with a parameter server; return a :class:`RunRecord`.

    Args:
        mode: ``"sync"`` (SyncReplicasOptimizer), ``"async"`` or ``"ssp"``.
        staleness: the SSP bound ``s`` (clocks a worker may run ahead of the slowest).
        num_ps, num_workers: the cluster's tasks.
        replicas_to_aggregate: ``sync`` only; fewer than ``num_workers`` adds backup workers.
        straggler: ``{worker: speed factor}``, e.g. ``{3: 4.0}`` makes worker 3's compute 4× slower.
        steps: parameter updates to run, ≥ 1 (None: :data:`DEFAULT_STEPS`).
        execution: ``"simulated"`` (deterministic), ``"threads"`` (free-running) or ``"mpi"`` (this
            process is one rank of ``python -m dfcore.launch --ps P --workers W``; returns the
            record on the chief, worker 0, and None on every other rank).
        learning_rate: SGD rate > 0 (None: :data:`DEFAULT_LEARNING_RATE`); batch_size, hidden: per worker.
        ps_strategy: ``"round_robin"`` or ``"greedy"`` (by bytes) placement of the variables.
        ema_decay: keep ExponentialMovingAverage shadows (on the ps) with this decay.
        eval_every: evaluate the test set every this many updates (and at the end).
        worker_profile: the ``DeviceProfile`` a worker's compute is timed on (default
            ``cost_model.NUMPY_CORE``); links are 10 GbE (``cost_model.ETHERNET_10G``).
        checkpoint_dir, checkpoint_every: the chief saves a checkpoint every this many updates.
        restore: continue from the latest checkpoint in ``checkpoint_dir``.
        kill_worker: ``{worker: step}``: that worker dies before its step (fault injection).
        kill_ps: ``{ps task: version}``: that ps task dies once the global step reaches it.
        fault_timeout_s: the deadline of the blocking ops that find a peer gone.
    Raises:
        ArgumentRangeError (a ValueError): an argument out of its range or choices, before anything
            starts (:func:`~dfcore.distribute.ps_arguments.check_train_arguments`: e.g. ``steps`` ≥ 1,
            stragglers and killed tasks that exist, speed factors and ``learning_rate`` > 0,
            ``batch_size`` in ``[1, smallest shard]``, a ``checkpoint_dir`` for ``checkpoint_every``
            and ``restore``); ``.argument`` names it.
        TypeError: a count that is not an integer or a rate that is not a number.
    """
    check_train_arguments(
        mode=mode, execution=execution, num_ps=num_ps, num_workers=num_workers,
        replicas_to_aggregate=replicas_to_aggregate, staleness=staleness, steps=steps, learning_rate=learning_rate,
        batch_size=batch_size, hidden=hidden, ps_strategy=ps_strategy, seed=seed, eval_every=eval_every,
        checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every, restore=restore, straggler=straggler,
        kill_worker=kill_worker, kill_ps=kill_ps, fault_timeout_s=fault_timeout_s)
    replicas = num_workers if replicas_to_aggregate is None or mode != "sync" else replicas_to_aggregate
    steps = DEFAULT_STEPS[mode] if steps is None else steps
    learning_rate = DEFAULT_LEARNING_RATE[mode] if learning_rate is None else float(learning_rate)
    config = ModelConfig(mode, num_ps, num_workers, replicas, staleness if mode == "ssp" else 0,
                         learning_rate, hidden, batch_size, seed, ps_strategy, ema_decay)
    if execution == "mpi":
        return _train_mpi(config, steps, straggler, eval_every, checkpoint_dir, checkpoint_every,
                          restore or kill_worker or kill_ps)
    data = ShardedDigits(num_workers, batch_size, seed)
    spec, ps_servers, worker_servers = start_cluster(config)
    runner = "inline" if execution == "simulated" else "auto"
    try:
        models = [build_worker(w, config, spec, worker_servers[w], runner) for w in range(num_workers)]
        hooks = _Hooks(models[0], data, eval_every, checkpoint_dir, checkpoint_every)
        options = DriverOptions(steps, dict(straggler or {}), dict(kill_worker or {}),
                             dict(kill_ps or {}), fault_timeout_s, hooks)
        start = _initialize(models, config, checkpoint_dir if restore else None)
        if execution == "simulated":
            costs = step_costs(models[0], config, worker_profile or cost_model.NUMPY_CORE)
            result: Any = SimulatedRun(models, ps_servers, worker_servers, config, costs, data, options, start).run()
        else:
            from .ps_threads import ThreadedRun

            result = ThreadedRun(models, ps_servers, worker_servers, config, data, options, start).run()
        return _record(config, execution, models, hooks, result, spec)
    finally:
        for model in locals().get("models", ()):
            model.session.close()
        for server in ps_servers + worker_servers:
            server.stop("the training run ended")


def _train_mpi(config, steps, straggler, eval_every, checkpoint_dir, checkpoint_every, unsupported):
    """This rank's part of an MPI run (:mod:`dfcore.distribute.ps_mpi`): the RunRecord on the chief, else None."""
    from ..mpi.world import world
    from .ps_mpi import train_rank

    if unsupported:
        raise ValueError("execution='mpi' runs real processes: restore, kill_worker and kill_ps are for the "
                         "in-process executions (kill a rank with a signal instead)")
    launched = world()[1].jobs
    if launched != {"ps": config.num_ps, "worker": config.num_workers}:
        raise ValueError(f"{config.num_ps} ps and {config.num_workers} workers need a job launched with python -m "
                         f"dfcore.launch --ps {config.num_ps} --workers {config.num_workers}, but this one has "
                         f"{launched}")
    hooks = _Hooks(None, None, eval_every, checkpoint_dir, checkpoint_every)
    options = DriverOptions(steps, dict(straggler or {}), {}, {}, 0.0, hooks)
    model, result = train_rank(config, lambda: ShardedDigits(config.num_workers, config.batch_size, config.seed),
                               options)
    if model is None:
        return None
    try:
        return _record(config, "mpi", [model], options.hooks, result, None)
    finally:
        model.session.close()


def _initialize(models, config, restore_dir):
    """Initialize (or restore) the ps variables from the chief, then each worker's local state."""
    chief = models[0]
    chief.session.run(chief.init)
    start = {"version": 0, "time_s": 0.0, "clocks": [0] * config.num_workers}
    if restore_dir:
        from ..train.checkpoint_management import latest_checkpoint

        path = latest_checkpoint(restore_dir)
        if path is None:
            raise ValueError(f"No checkpoint found in {restore_dir!r}")
        chief.saver.restore(chief.session, path)
        version = int(chief.session.run(chief.global_step))
        start = load_sidecar(path, version, config.num_workers)
    for model in models:
        model.session.run(model.local_init)
        if config.mode == "sync":
            model.session.run(model.local_step_init)
    if config.mode == "sync":
        chief.session.run([chief.chief_init, chief.init_tokens])
    return start


def _record(config, execution, models, hooks, result, spec):
    chief = models[0]
    version = result.version
    try:
        loss, accuracy, _ = hooks.metrics()
        params = dict(zip([v.op.name for v in chief.params], chief.session.run(chief.params)))
        if not hooks.evals or hooks.evals[-1].version != version:
            hooks.evaluate(version, result.time_s)
    except errors.OpError:  # a ps task is down: nothing left to read
        loss = accuracy = float("nan")
        params = {}
    from ..train.device_setter import ps_load_table

    return RunRecord(
        mode=config.mode, staleness=config.staleness if config.mode == "ssp" else None, num_ps=config.num_ps,
        num_workers=config.num_workers, replicas_to_aggregate=config.replicas_to_aggregate, execution=execution,
        seed=config.seed, clock="simulated" if execution == "simulated" else "wall",
        updates=tuple(sorted(result.updates, key=lambda u: (u.sim_time_s, u.version_applied_at, u.worker))),
        evals=tuple(hooks.evals), phases=tuple(sorted(result.phases, key=lambda p: (p.start_s, p.task, p.kind))),
        faults=tuple(result.faults), ps_load=ps_load_table(chief.graph, num_tasks=config.num_ps),
        status="completed" if result.failed is None else "failed", error=result.failed, final_version=version,
        sim_time_s=result.time_s, test_accuracy=accuracy, test_loss=loss,
        params=types.MappingProxyType(params))
