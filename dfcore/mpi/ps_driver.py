"""A parameter-server run as an MPI job: each ps and worker task is its own OS process.

Source: TF1's between-graph training scripts (``mnist_replica.py``): every process builds
its own graph under ``replica_device_setter``; the ps processes only ``server.join()``;
worker 0 (the chief) initializes the variables, runs the aggregated updates and its schedule
(evaluation, checkpoints) in a second thread; the others wait until the variables are
initialized. Started by ``python -m dfcore.launch --ps 1 --workers 3 -m
dfcore.examples.parameter_server --execution mpi``; registered as ``execution="mpi"`` of
:func:`dfcore.distribute.parameter_server.train` by ``dfcore.mpi``.

The worker's and the chief's loops are :mod:`dfcore.distribute.ps_loop`'s, the rules the
discipline's (:mod:`dfcore.distribute.ps_modes`), as in the threads driver; this module adds
the process boundaries: the workers share no memory, so every gate and every version is read
from the ps. Times are wall seconds from a start the workers agree on (one broadcast). At the
end the workers gather their records on the chief, which builds the :class:`RunRecord`
(``execution="mpi"``, ``clock="wall"``); the other ranks return None.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from .. import errors
from ..distribute.cluster import Server
from ..distribute.parameter_server import model_config, run_record, steps_of
from ..distribute.ps_chief import ChiefSchedule
from ..distribute.ps_data import ShardedDigits
from ..distribute.ps_loop import WallContext, run_chief, run_worker
from ..distribute.ps_model import build_worker
from ..distribute.ps_modes import DISCIPLINES
from ..runtime.config import ConfigProto, RunOptions
from . import world
from .report import progress as report_progress
from .world import MPIClusterResolver

if TYPE_CHECKING:
    from ..distribute.ps_arguments import TrainConfig
    from ..distribute.staleness import PhaseRecord, RunRecord, UpdateRecord

#: How long any wait of a worker or the chief may take before the run fails (seconds).
TIMEOUT_S = 60.0
_POLL_S = 0.002


def start_task(timeout_s: float = TIMEOUT_S) -> tuple[MPIClusterResolver, Server]:
    """``(resolver, server)`` of this rank: a CPU-only task of the launcher's cluster.

    Raises:
        ValueError: not inside a ``dfcore.launch`` job.
    """
    resolver = MPIClusterResolver()
    server = Server(resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
                    config=ConfigProto(device_count={"CPU": 1, "GPU": 0}, operation_timeout_in_ms=int(timeout_s * 1e3)))
    return resolver, server


def train(config: TrainConfig) -> RunRecord | None:
    """This rank's part of ``train(config)`` with ``execution="mpi"``: the chief loads the data and sends it to
    the other workers (a ps never loads it).

    Returns:
        The :class:`RunRecord` on the chief; None on every other rank (a ps returns once the workers exited).
    Raises:
        ValueError: ``restore``, ``kill_worker`` or ``kill_ps`` (in-process fault injection), or a job launched
            with other task counts than ``config``'s.
        DeadlineExceededError: a wait took more than :data:`TIMEOUT_S` (a task is down).
    """
    if config.restore or config.kill_worker or config.kill_ps:
        raise ValueError("execution='mpi' runs real processes: restore, kill_worker and kill_ps are for the "
                         "in-process executions (kill a rank with a signal instead)")
    launched = world.world()[1].jobs
    if launched != {"ps": config.num_ps, "worker": config.num_workers}:
        raise ValueError(f"{config.num_ps} ps and {config.num_workers} workers need a job launched with python -m "
                         f"dfcore.launch --ps {config.num_ps} --workers {config.num_workers}, but this one has "
                         f"{launched}")
    resolver, server = start_task()
    if resolver.task_type == "ps":
        server.join(timeout_s=None)
        return None
    index, steps = resolver.task_id, steps_of(config)
    workers = world.job_communicator("worker")
    data = world.bcast_polling(ShardedDigits(config.num_workers, config.batch_size, config.seed) if index == 0
                               else None, workers, root=0, timeout_s=TIMEOUT_S)
    t0 = world.bcast_polling(time.time(), workers, root=0, timeout_s=TIMEOUT_S)
    model_cfg = model_config(config)
    model = build_worker(index, model_cfg, resolver.cluster_spec(), server, executor_runner="auto")
    mode = DISCIPLINES[model_cfg.mode](model_cfg)
    try:
        _initialize(model, mode)
        updates: list[UpdateRecord] = []
        phases: list[PhaseRecord] = []
        lock = threading.Lock()
        stop = threading.Event()
        options = RunOptions(timeout_in_ms=int(TIMEOUT_S * 1000))

        def now() -> float:
            return time.time() - t0

        def version() -> int:
            return int(model.session.run(model.global_step, options=options))

        def locked(items: list[Any]) -> Any:
            def append(item: Any) -> None:
                with lock:
                    items.append(item)
            return append

        ctx = WallContext(now, stop, TIMEOUT_S, version, lambda v: None, locked(updates), locked(phases), _POLL_S)
        schedule = ChiefSchedule(model if index == 0 else None, data, steps, config.eval_every,
                                 config.checkpoint_dir, config.checkpoint_every)
        chief, chief_error = None, []
        if index == 0:
            def chief_version() -> int:
                seen = version()
                report_progress(min(seen, steps), steps, "updates")
                return seen

            def chief_loop() -> None:
                try:
                    run_chief(model, mode, schedule, WallContext(now, stop, TIMEOUT_S, chief_version, lambda v: None,
                                                                 ctx.record, ctx.phase, _POLL_S), lambda: [])
                except errors.OpError as error:
                    chief_error.append(error)
                    stop.set()

            chief = threading.Thread(target=chief_loop, name="ps-chief", daemon=True)
            chief.start()
        try:
            run_worker(model, mode, data, ctx, steps, lambda clock: config.speed(index, clock))
            if chief is not None:  # the last aggregated updates may still be being applied
                chief.join(TIMEOUT_S)
        finally:
            stop.set()
            if chief is not None:
                chief.join(TIMEOUT_S)
        if chief_error:
            raise chief_error[0]
        gathered = world.gather_polling((updates, phases), workers, root=0, timeout_s=TIMEOUT_S)
        if index != 0 or gathered is None:  # only the root gathers
            return None
        result = _Result(version(), [u for part, _ in gathered for u in part],
                         [p for _, part in gathered for p in part], now())
        return run_record(config, model_cfg, model, schedule, result)
    finally:
        model.session.close()


def _initialize(model: Any, mode: Any) -> None:
    """Chief: initialize the ps variables; others: wait for that. Then the worker's local and discipline state."""
    session = model.session
    if model.index == 0:
        session.run(model.init)
    else:
        deadline = time.monotonic() + TIMEOUT_S
        while not _initialized(session, model.global_step):
            if time.monotonic() > deadline:
                raise errors.DeadlineExceededError(None, None, f"Worker {model.index} waited more than {TIMEOUT_S} s "
                                                   "for the chief to initialize the variables; is a task down?")
            time.sleep(_POLL_S)
    session.run(model.local_init)
    mode.initialize(model, model.index == 0)


def _initialized(session: Any, variable: Any) -> bool:
    try:
        session.run(variable)
    except errors.FailedPreconditionError:
        return False
    return True


class _Result:
    """What ``run_record`` reads of a finished run."""

    def __init__(self, version: int, updates: list[Any], phases: list[Any], time_s: float) -> None:
        self.version, self.updates, self.phases, self.time_s = version, updates, phases, time_s
        self.faults: list[Any] = []
        self.failed = None
