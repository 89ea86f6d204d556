"""A parameter-server run as an MPI job: each ps and worker task is its own OS process.

Source: TF1's between-graph training scripts (``mnist_replica.py``): every process builds
its own graph under ``replica_device_setter``; the ps processes only ``server.join()``;
worker 0 (the chief) initializes the variables, runs ``SyncReplicasOptimizer``'s sync op
and saves checkpoints; the others wait until the variables are initialized. Started by
``python -m dfcore.launch --ps 1 --workers 3 -m dfcore.examples.parameter_server --execution mpi``.

The disciplines, with what replaces the in-process driver's shared Python state
(:mod:`dfcore.distribute.ps_threads`) now that the workers share no memory:

* ``sync``: the chief's sync thread polls the accumulators' ``num_accumulated`` and runs the
  sync op once ``replicas_to_aggregate`` gradients are in (so it never blocks on the ps and
  can stop cleanly); workers block on their token.
* ``async``: each worker applies its own gradients.
* ``ssp``: worker ``w`` at clock ``c`` polls ``global_step`` until it is at least ``c - s``
  (the staleness bound), then pushes to slot ``c mod (s+1)``; the chief's thread applies
  slot after slot once every worker's gradient for that clock is in.

Times are wall seconds from a start the workers agree on (one broadcast). At the end the
workers gather their update records on the chief, which builds the :class:`RunRecord`
(``execution="mpi"``, ``clock="wall"``); the other ranks return None.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..mpi import MPIClusterResolver, world
from ..mpi.report import progress as report_progress
from ..runtime.config import ConfigProto, RunOptions
from .cluster import Server
from .ps_model import build_worker
from .staleness import PhaseRecord, UpdateRecord

if TYPE_CHECKING:
    from .parameter_server import DriverOptions, ShardedDigits
    from .ps_model import ModelConfig, WorkerModel

#: How long any wait of a worker or the chief may take before the run fails (seconds).
TIMEOUT_S = 60.0
_POLL_S = 0.002
PS_TASK = "/job:ps/replica:0/task:0"  # where the apply marks go (the global step lives on ps 0)


def start_task(timeout_s: float = TIMEOUT_S) -> tuple[MPIClusterResolver, Server]:
    """``(resolver, server)`` of this rank: a CPU-only task of the launcher's cluster.

    Raises:
        ValueError: not inside a ``dfcore.launch`` job.
    """
    resolver = MPIClusterResolver()
    server = Server(resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
                    config=ConfigProto(device_count={"CPU": 1, "GPU": 0}, operation_timeout_in_ms=int(timeout_s * 1e3)))
    return resolver, server


class MPIRun:
    """One worker's part of the run (see the module docstring); :meth:`run` returns its update and phase records."""

    def __init__(self, model: WorkerModel, config: ModelConfig, data: ShardedDigits | None, options: DriverOptions,
                 t0: float) -> None:
        self.model, self.config, self.data, self.options = model, config, data, options
        self.t0 = t0
        self.run_options = RunOptions(timeout_in_ms=int(TIMEOUT_S * 1000))
        self.updates: list[UpdateRecord] = []
        self.phases: list[PhaseRecord] = []
        self._next_eval = self._next_checkpoint = 0
        self.stop = threading.Event()
        self.chief_error: list[BaseException] = []

    def now(self) -> float:
        return time.time() - self.t0

    def initialize(self) -> None:
        """Chief: initialize the ps variables (and the sync tokens); others: wait for that, then local state."""
        model, session = self.model, self.model.session
        if model.index == 0:
            session.run(model.init)
        else:
            self._poll(lambda: _initialized(session, model.global_step), "the chief to initialize the variables")
        session.run(model.local_init)
        if self.config.mode == "sync":
            session.run(model.local_step_init)
            if model.index == 0:
                session.run([model.chief_init, model.init_tokens])

    def run(self) -> Any:
        chief = None
        if self.model.index == 0 and self.config.mode in ("sync", "ssp"):
            chief = threading.Thread(target=self._chief_loop, name="ps-chief-sync", daemon=True)
            chief.start()
        try:
            getattr(self, "_run_" + self.config.mode)()
            if chief is not None:  # the last updates may still be being applied
                chief.join(TIMEOUT_S)
        finally:
            self.stop.set()
            if chief is not None:
                chief.join(TIMEOUT_S)
        if self.chief_error:
            raise self.chief_error[0]
        return self.updates, self.phases

    # -- the workers' loops ----------------------------------------------------
    def _run_sync(self):
        model, session, w = self.model, self.model.session, self.model.index
        clock = 0
        version = int(session.run(model.global_step))
        while version < self.options.steps:
            local = int(session.run(model.local_step))
            feed = self._feed(clock)
            started = self.now()
            # the train op of SyncReplicasOptimizer is these two: push the gradients, then take a token
            _, loss = session.run([model.push_op, model.loss], feed, options=self.run_options)
            pushed = self.now()
            self._phase("compute", started, pushed, clock, "pull, compute and push the gradients")
            version = int(session.run(model.token_op, options=self.run_options))
            self._phase("wait", pushed, self.now(), clock, "for a token (the other replicas' gradients)")
            applied_at = version - 1
            self.updates.append(UpdateRecord(w, clock, local, applied_at, applied_at - local, self.now() - pushed,
                                             self.now(), applied_at == local, float(loss)))
            self._straggle(started)
            self._chief_duties(version)
            clock += 1

    def _run_async(self):
        model, session, w = self.model, self.model.session, self.model.index
        clock, version = 0, int(session.run(model.global_step))
        while version < self.options.steps:
            started = self.now()
            new, loss, read = session.run([model.new_version, model.loss, model.global_step], self._feed(clock),
                                          options=self.run_options)
            version = int(new)
            self._phase("compute", started, self.now(), clock, "pull, compute, push and apply")
            self._phase("apply", self.now(), self.now(), version - 1, f"from worker {w}", task=PS_TASK)
            computed_on = min(int(read), version - 1)  # the read may land after another worker's update
            self.updates.append(UpdateRecord(w, clock, computed_on, version - 1, version - 1 - computed_on, 0.0,
                                             self.now(), True, float(loss)))
            self._straggle(started)
            self._chief_duties(version)
            clock += 1

    def _run_ssp(self):
        model, session, w, s = self.model, self.model.session, self.model.index, self.config.staleness
        for clock in range(self.options.steps):
            waited_from = self.now()
            self._poll(lambda clock=clock: int(session.run(model.global_step)) >= clock - s,
                       f"the slowest worker (staleness bound {s})")
            waited = self.now() - waited_from
            started = self.now()
            if waited > 0.001:
                self._phase("wait", waited_from, started, clock, f"staleness bound {s}")
            feed = self._feed(clock)
            feed[model.clock_round] = np.int64(clock // (s + 1))
            _, loss, read = session.run([model.ssp_push[clock % (s + 1)], model.loss, model.global_step], feed,
                                        options=self.run_options)
            self._phase("compute", started, self.now(), clock, "pull, compute and push the gradients")
            self.updates.append(UpdateRecord(w, clock, int(read), clock, clock - int(read), waited, self.now(),
                                             True, float(loss)))
            self._straggle(started)
            self._chief_duties(int(read))

    # -- the chief's thread (sync op / ssp applies) -------------------------------
    def _chief_loop(self):
        model, session = self.model, self.model.session
        try:
            version = int(session.run(model.global_step))
            while version < self.options.steps and not self.stop.is_set():
                if self.config.mode == "sync":
                    count, needed, op = model.num_accumulated, self.config.replicas_to_aggregate, model.sync_op
                else:
                    slot = version % (self.config.staleness + 1)
                    count, needed, op = model.num_accumulated_slots[slot], self.config.num_workers, \
                        model.ssp_apply[slot]
                if int(session.run(count)) < needed:
                    self.stop.wait(_POLL_S)
                    continue
                session.run(op, options=self.run_options)
                self._phase("apply", self.now(), self.now(), version, "the averaged gradients", task=PS_TASK)
                version += 1
        except errors.OpError as error:
            self.chief_error.append(error)
            self.stop.set()

    # -- shared -----------------------------------------------------------------
    def _phase(self, kind, start_s, end_s, step, detail="", task=None):
        task = task or f"/job:worker/replica:0/task:{self.model.index}"
        self.phases.append(PhaseRecord(task, kind, start_s, end_s, step, detail))

    def _feed(self, clock):
        xb, yb = self.data.batch(self.model.index, clock)
        return {self.model.x: xb, self.model.y: yb}

    def _straggle(self, started):
        slow = self.options.speed(self.model.index) - 1.0
        if slow > 0:  # a straggler: its steps take speed × as long
            time.sleep(slow * (self.now() - started))

    def _chief_duties(self, version):
        """The chief's evaluation, checkpoint and progress report, when the version passes their marks."""
        if self.model.index != 0:
            return
        report_progress(min(version, self.options.steps), self.options.steps, "updates")
        hooks = self.options.hooks
        if hooks.eval_every and version >= self._next_eval:
            hooks.evaluate(version, self.now())
            self._next_eval = version - version % hooks.eval_every + hooks.eval_every
        if hooks.checkpoint_every and version >= self._next_checkpoint:
            hooks.checkpoint(version, self.now(), [])
            self._next_checkpoint = version - version % hooks.checkpoint_every + hooks.checkpoint_every

    def _poll(self, predicate, what):
        deadline = time.monotonic() + TIMEOUT_S
        while not predicate():
            if self.stop.is_set() and self.chief_error:
                raise self.chief_error[0]
            if time.monotonic() > deadline:
                raise errors.DeadlineExceededError(None, None, f"Worker {self.model.index} waited more than "
                                                   f"{TIMEOUT_S} s for {what}; is a task down?")
            time.sleep(_POLL_S)


def _initialized(session, variable):
    try:
        session.run(variable)
    except errors.FailedPreconditionError:
        return False
    return True


def train_rank(config: ModelConfig, make_data: Callable[[], ShardedDigits], options: DriverOptions) -> Any:
    """This rank's part of :func:`dfcore.distribute.parameter_server.train` with ``execution="mpi"``;
    the chief loads the data with ``make_data()`` and sends it to the other workers (a ps never loads it).

    Returns:
        On the chief, ``(model, result)`` where ``result`` has the attributes the in-process
        drivers' results have (``version``, ``updates``, ``phases``, ``faults``, ``failed``,
        ``time_s``); ``(None, None)`` on every other rank (a ps returns once the workers exited).
    """
    from .parameter_server import _Hooks

    resolver, server = start_task()
    if resolver.task_type == "ps":
        server.join(timeout_s=None)
        return None, None
    index = resolver.task_id
    workers = world.job_communicator("worker")
    data = world.bcast_polling(make_data() if index == 0 else None, workers, root=0, timeout_s=TIMEOUT_S)
    t0 = world.bcast_polling(time.time(), workers, root=0, timeout_s=TIMEOUT_S)
    model = build_worker(index, config, resolver.cluster_spec(), server, executor_runner="auto")
    options.hooks = _Hooks(model, data, options.hooks.eval_every, options.hooks.checkpoint_dir,
                           options.hooks.checkpoint_every) if index == 0 else options.hooks
    run = MPIRun(model, config, data, options, t0)
    run.initialize()
    gathered = world.gather_polling(run.run(), workers, root=0, timeout_s=TIMEOUT_S)
    if index != 0:
        model.session.close()
        return None, None
    result = _Result(int(model.session.run(model.global_step)), [u for part, _ in gathered for u in part],
                     [p for _, part in gathered for p in part], run.now())
    return model, result


class _Result:
    """What ``parameter_server._record`` reads of a finished run."""

    def __init__(self, version, updates, phases, time_s):
        self.version, self.updates, self.phases, self.time_s = version, updates, phases, time_s
        self.faults, self.failed = [], None
