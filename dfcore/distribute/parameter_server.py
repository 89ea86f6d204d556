"""Parameter-server training of the digits MLP: ``sync``, ``async``, ``ssp`` and ``bounded_delay``.

Source: TF1's between-graph replication (``SyncReplicasOptimizer``, ``replica_device_setter``),
Dean et al. 2012 (Downpour: asynchronous updates), Ho et al. 2013 (stale synchronous parallel)
and bounded-delay SGD; each discipline's rule is its module in :mod:`dfcore.distribute.ps_modes`.

:func:`train` takes a :class:`~dfcore.distribute.ps_arguments.TrainConfig`, starts a cluster of
``num_ps`` ps tasks and ``num_workers`` worker tasks (:mod:`dfcore.distribute.cluster`), builds one
graph and session per worker (:mod:`dfcore.distribute.ps_model`) and runs them with a driver:
ordered by the simulated clock (``execution="simulated"``: :mod:`dfcore.distribute.ps_simulation`,
deterministic), as free-running threads (``"threads"``: :mod:`dfcore.distribute.ps_threads`) or as
the processes of an MPI job (``"mpi"``, registered by ``dfcore.mpi``). It returns a
:class:`~dfcore.distribute.staleness.RunRecord`.

``steps`` counts parameter updates (global steps): in ``sync`` one update averages
``replicas_to_aggregate`` gradients and in ``bounded_delay`` one per worker; in ``async`` and
``ssp`` every gradient is an update, so the same data needs ``num_workers`` times more steps.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Sequence
from typing import Any

from .. import errors
from ..runtime import cost_model
from .cluster import Server
from .ps_arguments import TrainConfig
from .ps_chief import ChiefSchedule, load_sidecar
from .ps_data import ShardedDigits
from .ps_executions import register_execution, runner_of
from .ps_model import ModelConfig, WorkerModel, build_worker, start_cluster, step_costs
from .ps_modes import DISCIPLINES, STALENESS_MODES
from .ps_simulation import SimulatedRun
from .staleness import RunRecord

#: Default updates and learning rates per update; with them every mode reaches ≥ 0.95 test accuracy.
DEFAULT_STEPS = {"sync": 300, "bounded_delay": 300, "async": 1200, "ssp": 1200}
DEFAULT_LEARNING_RATE = {"sync": 0.5, "bounded_delay": 0.5, "async": 0.15, "ssp": 0.15}


def train(config: TrainConfig | str | None = None, **fields: Any) -> RunRecord | None:
    """Train the digits MLP with a parameter server as ``config`` says; return a :class:`RunRecord`.

    Args:
        config: the run (None: ``TrainConfig()``'s defaults); a mode name is short for ``TrainConfig(mode=...)``,
            so ``train("async", steps=40)`` reads as before.
        **fields: :class:`~dfcore.distribute.ps_arguments.TrainConfig` fields that replace ``config``'s,
            e.g. ``train(mode="async", steps=40)``.
    Returns:
        The run's record; with ``execution="mpi"``, on the chief (worker 0) only, and None on every other rank.
    Raises:
        ArgumentRangeError (a ValueError): a field out of its range or choices, before anything starts
            (:meth:`TrainConfig.check`); ``.argument`` names it.
        TypeError: an unknown field, a count that is not an integer or a rate that is not a number.
    """
    if isinstance(config, str):
        config = TrainConfig(mode=config)
    config = dataclasses.replace(config or TrainConfig(), **fields)
    config.check()
    return runner_of(config.execution)(config)


def model_config(config: TrainConfig) -> ModelConfig:
    """What the graphs depend on, with the mode's defaults filled in."""
    mode = config.mode
    replicas = config.num_workers if config.replicas_to_aggregate is None or mode != "sync" \
        else config.replicas_to_aggregate
    learning_rate = DEFAULT_LEARNING_RATE[mode] if config.learning_rate is None else float(config.learning_rate)
    return ModelConfig(mode, config.num_ps, config.num_workers, replicas,
                       int(config.staleness or 0) if mode in STALENESS_MODES else 0, learning_rate, config.hidden,
                       config.batch_size, config.seed, config.ps_strategy, config.ema_decay, config.w1_shards)


def steps_of(config: TrainConfig) -> int:
    """The run's updates (the mode's default when ``config.steps`` is None)."""
    return DEFAULT_STEPS[config.mode] if config.steps is None else config.steps


def _train_in_process(config: TrainConfig) -> RunRecord:
    """``execution="simulated"`` or ``"threads"``: every task in this process."""
    from .ps_threads import ThreadedRun

    model = model_config(config)
    data = ShardedDigits(config.num_workers, config.batch_size, config.seed)
    spec, ps_servers, worker_servers = start_cluster(model)
    runner = "inline" if config.execution == "simulated" else "auto"
    models: list[WorkerModel] = []
    try:
        models += [build_worker(w, model, spec, worker_servers[w], runner) for w in range(config.num_workers)]
        start = initialize(models, model, config.checkpoint_dir if config.restore else None)
        schedule = ChiefSchedule(models[0], data, steps_of(config), config.eval_every, config.checkpoint_dir,
                                 config.checkpoint_every, config.kill_ps, ps_servers, start["version"])
        result: Any
        kill_worker = dict(config.kill_worker or {})
        if config.execution == "simulated":
            costs = step_costs(models[0], model, config.worker_profile or cost_model.NUMPY_CORE)
            result = SimulatedRun(models, worker_servers, model, costs, data, schedule, config.speed, kill_worker,
                                  config.fault_timeout_s, start).run()
        else:
            result = ThreadedRun(models, ps_servers, worker_servers, model, data, schedule, config.speed,
                                 kill_worker, config.fault_timeout_s, start).run()
        return run_record(config, model, models[0], schedule, result)
    finally:
        for worker in models:
            worker.session.close()
        for server in ps_servers + worker_servers:
            server.stop("the training run ended")


register_execution("simulated", _train_in_process)
register_execution("threads", _train_in_process)


def initialize(models: Sequence[WorkerModel], config: ModelConfig, restore_dir: str | None) -> dict[str, Any]:
    """Initialize (or restore) the ps variables from the chief, then each worker's local state; returns the
    driver's start state (``version``, ``time_s``, ``clocks``).

    Raises:
        ValueError: ``restore_dir`` holds no checkpoint.
    """
    chief = models[0]
    chief.session.run(chief.init)
    start: dict[str, Any] = {"version": 0, "time_s": 0.0, "clocks": [0] * config.num_workers}
    if restore_dir:
        from ..train.checkpoint_management import latest_checkpoint

        path = latest_checkpoint(restore_dir)
        if path is None:
            raise ValueError(f"No checkpoint found in {restore_dir!r}")
        chief.saver.restore(chief.session, path)
        version = int(chief.session.run(chief.global_step))
        start = load_sidecar(path, version, config.num_workers)
    discipline = DISCIPLINES[config.mode](config)
    for model in models:
        model.session.run(model.local_init)
        discipline.initialize(model, model.index == 0)
    return start


def run_record(config: TrainConfig, model: ModelConfig, chief: WorkerModel, schedule: ChiefSchedule,
               result: Any) -> RunRecord:
    """The :class:`RunRecord` of a finished run; ``result`` has the drivers' ``version``, ``time_s``,
    ``updates``, ``phases``, ``faults`` and ``failed``."""
    from ..train.device_setter import ps_load_table

    version = result.version
    try:
        loss, accuracy, _ = schedule.metrics()
        params = dict(zip([v.op.name for v in chief.params], chief.session.run(chief.params)))
        if not schedule.evals or schedule.evals[-1].version != version:
            schedule.evaluate(version, result.time_s)
    except errors.OpError:  # a ps task is down: nothing left to read
        loss = accuracy = float("nan")
        params = {}
    per_update = model.replicas_to_aggregate if model.mode in ("sync", "bounded_delay") else 1
    return RunRecord(
        mode=model.mode, staleness=model.staleness if model.mode in STALENESS_MODES else None, num_ps=model.num_ps,
        num_workers=model.num_workers, replicas_to_aggregate=model.replicas_to_aggregate,
        execution=config.execution, seed=model.seed, clock="simulated" if config.execution == "simulated" else "wall",
        updates=tuple(sorted(result.updates, key=lambda u: (u.sim_time_s, u.version_applied_at, u.worker))),
        evals=tuple(schedule.evals), phases=tuple(sorted(result.phases, key=lambda p: (p.start_s, p.task, p.kind))),
        faults=tuple(result.faults), ps_load=ps_load_table(chief.graph, num_tasks=model.num_ps),
        status="completed" if result.failed is None else "failed", error=result.failed, final_version=version,
        sim_time_s=result.time_s, test_accuracy=accuracy, test_loss=loss, params=types.MappingProxyType(params),
        learning_rate=model.learning_rate, examples_per_update=per_update * model.batch_size)


__all__ = ["DEFAULT_LEARNING_RATE", "DEFAULT_STEPS", "Server", "ShardedDigits", "TrainConfig", "initialize",
           "model_config", "run_record", "start_cluster", "steps_of", "train"]
