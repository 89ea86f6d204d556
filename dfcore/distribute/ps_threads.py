"""Free-running execution of a parameter-server run: one thread per worker, as TF1 runs it.

Source: TF1's between-graph training loop (each worker's client calls ``sess.run(train_op)``
in a loop; the chief also runs ``SyncReplicasOptimizer``'s queue runner). Times are wall
seconds since the start; the order of updates depends on thread scheduling, so two runs
differ (use ``execution="simulated"`` for reproducible numbers).

* ``sync``: each worker runs the optimizer's train op (push to the accumulators, then block
  on a token); the chief's ``QueueRunner`` thread runs the sync op. A record's
  ``version_applied_at`` is the update whose token released the worker (token − 1); it
  counts as applied when that is the version the gradient was computed on.
* ``async``: each worker's train op applies its gradient to the ps variables.
* ``ssp``: a worker waits (condition variable, with a deadline) until the version is at
  least ``clock - s``, then pushes to its clock's accumulator slot; a chief thread applies
  the clocks in order.

Every ``sess.run`` has a deadline; a worker that dies leaves the others blocked only
until it (``DeadlineExceededError``), and every thread is joined before :meth:`run` returns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..runtime.config import RunOptions
from ..train.coordinator import Coordinator
from . import cluster_runtime
from .staleness import FaultRecord, PhaseRecord, UpdateRecord

if TYPE_CHECKING:
    from .cluster import Server
    from .parameter_server import DriverOptions, ShardedDigits
    from .ps_model import ModelConfig, WorkerModel

_NORMAL_TIMEOUT_S = 60.0


class ThreadedRun:
    """Runs the worker threads (and the chief's) to ``options.steps`` updates; see the module doc."""

    def __init__(self, models: Sequence[WorkerModel], ps_servers: Sequence[Server], worker_servers: Sequence[Server],
                 config: ModelConfig, data: ShardedDigits, options: DriverOptions,
                 start: Mapping[str, Any]) -> None:
        self.models, self.ps_servers, self.worker_servers = models, ps_servers, worker_servers
        self.config, self.data, self.options = config, data, options
        self.version = start["version"]
        self.clocks = list(start["clocks"])
        faulty = bool(options.kill_worker or options.kill_ps)
        timeout_s = options.fault_timeout_s if faulty else _NORMAL_TIMEOUT_S
        self.run_options = RunOptions(timeout_in_ms=int(timeout_s * 1000))
        self.timeout_s = timeout_s
        self.cond = threading.Condition()
        self.lock = threading.Lock()
        self.updates: list[UpdateRecord] = []
        self.phases: list[PhaseRecord] = []
        self.faults: list[FaultRecord] = []
        self.pending: dict[int, Any] = {}
        self.failed: str | None = None
        self.stop = threading.Event()
        self.t0 = time.perf_counter()
        self.time_s = 0.0
        self._next_eval = self._next_checkpoint = self.version

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def run(self) -> ThreadedRun:
        coord = Coordinator()
        chief_threads = []
        if self.config.mode == "sync":
            runner = self.models[0].sync_opt.get_chief_queue_runner()
            chief_threads = runner.create_threads(self.models[0].session, coord=coord, daemon=True, start=True)
        elif self.config.mode == "ssp":
            chief_threads = [threading.Thread(target=self._guard, args=(self._ssp_chief, "chief"), daemon=True)]
            chief_threads[0].start()
        workers = [threading.Thread(target=self._guard, args=(self._worker, w), daemon=True,
                                    name=f"ps-worker-{w}") for w in range(self.config.num_workers)]
        for thread in workers:
            thread.start()
        while any(t.is_alive() for t in workers):
            workers[0].join(0.02) if workers[0].is_alive() else next(t for t in workers if t.is_alive()).join(0.02)
            if self._version() >= self.options.steps or self.stop.is_set():
                self._shut_down(coord)
        self._shut_down(coord)
        for thread in workers + chief_threads:
            thread.join(self.timeout_s + 5)
        self.time_s = self.now()
        return self

    def _shut_down(self, coord):
        """Stop every thread: blocked ops (tokens, take_grad) fail with CancelledError, which is ignored."""
        self.stop.set()
        coord.request_stop()
        for server in self.worker_servers + self.ps_servers:
            cluster = cluster_runtime.cluster_of(server)
            if cluster is not None:
                cluster.cancel_waiters(errors.CancelledError(None, None, "The training run ended."))
                break
        with self.cond:
            self.cond.notify_all()

    def _guard(self, fn, who):
        try:
            fn(who)
        except errors.OpError as error:
            if isinstance(error, errors.CancelledError) and self.stop.is_set():
                return  # woken by the shutdown
            task = "/job:worker/replica:0/task:0" if who == "chief" else f"/job:worker/replica:0/task:{who}"
            with self.lock:
                self.faults.append(FaultRecord(self.now(), task, "error", type(error).__name__, error.message))
                self.failed = self.failed or f"{type(error).__name__}: {error.message}"
            if self._version() < self.options.steps and not isinstance(error, errors.DeadlineExceededError):
                self.stop.set()  # a lost ps ends the run; a deadline only ends this worker

    # -- workers -------------------------------------------------------------------
    def _worker(self, w):
        model = self.models[w]
        while not self.stop.is_set() and self._version() < self.options.steps:
            clock = self.clocks[w]
            if self.options.kill_worker.get(w) == clock:
                self.worker_servers[w].stop(f"killed before its step {clock} (fault injection)")
                with self.lock:
                    self.faults.append(FaultRecord(self.now(), f"/job:worker/replica:0/task:{w}", "worker_died"))
                return
            xb, yb = self.data.batch(w, clock)
            feed = {model.x: xb, model.y: yb}
            started = time.perf_counter()
            getattr(self, "_step_" + self.config.mode)(w, model, feed, clock)
            slow = self.options.speed(w) - 1.0
            if slow > 0:  # a straggler: its steps take speed × as long
                self.stop.wait(slow * (time.perf_counter() - started))
            self.clocks[w] = clock + 1
            if w == 0:
                self._chief_duties()

    def _step_sync(self, w, model, feed, clock):
        local = int(model.session.run(model.local_step))
        token, loss = model.session.run([model.train_op, model.loss], feed, options=self.run_options)
        applied_at = int(token) - 1
        self._record(w, clock, local, applied_at, 0.0, applied_at == local, float(loss))
        with self.lock:
            self.version = max(self.version, int(token))

    def _step_async(self, w, model, feed, clock):
        new_version, loss, read = model.session.run([model.new_version, model.loss, model.global_step], feed,
                                                    options=self.run_options)
        self._record(w, clock, int(read), int(new_version) - 1, 0.0, True, float(loss))
        with self.lock:
            self.version = max(self.version, int(new_version))

    def _step_ssp(self, w, model, feed, clock):
        s = self.config.staleness
        waited = self._wait_for(lambda: self.version >= clock - s or self.stop.is_set())
        if self.stop.is_set():
            return
        feed[model.clock_round] = np.int64(clock // (s + 1))
        _, loss, read = model.session.run([model.ssp_push[clock % (s + 1)], model.loss, model.global_step], feed,
                                          options=self.run_options)
        with self.lock:
            self.pending.setdefault(clock, []).append((w, int(read), waited, float(loss)))

    def _wait_for(self, predicate):
        start = self.now()
        with self.cond:
            if not self.cond.wait_for(predicate, self.timeout_s):
                raise errors.DeadlineExceededError(
                    None, None, f"Timed out after {self.timeout_s} s waiting for the slowest worker (staleness bound "
                    f"{self.config.staleness}); a worker may be down.")
        return self.now() - start

    def _ssp_chief(self, _):
        chief = self.models[0]
        s = self.config.staleness
        while not self.stop.is_set() and self.version < self.options.steps:
            version = self.version
            chief.session.run(chief.ssp_apply[version % (s + 1)], options=self.run_options)
            if chief.ema_op is not None:  # decay from the step before the update, as in sync's sync op
                chief.session.run(chief.ema_op, {chief.global_step.value(): np.int64(version)},
                                  options=self.run_options)
            with self.lock:
                for w, read, waited, loss in self.pending.pop(version, []):
                    self.updates.append(UpdateRecord(w, version, read, version, version - read, waited, self.now(),
                                                     True, loss))
            with self.cond:
                self.version = version + 1
                self.cond.notify_all()

    # -- shared --------------------------------------------------------------------
    def _version(self):
        with self.lock:
            return self.version

    def _record(self, w, step, computed_on, applied_at, wait_s, applied, loss):
        with self.lock:
            self.updates.append(UpdateRecord(w, step, computed_on, applied_at, applied_at - computed_on, wait_s,
                                             self.now(), applied, loss))

    def _chief_duties(self):
        """Evaluate, checkpoint and inject ps faults when the version passes their marks (worker 0's thread)."""
        hooks, version = self.options.hooks, self._version()
        if hooks.eval_every and version >= self._next_eval:
            hooks.evaluate(version, self.now())
            self._next_eval = version - version % hooks.eval_every + hooks.eval_every
        if hooks.checkpoint_every and version >= self._next_checkpoint:
            hooks.checkpoint(version, self.now(), self.clocks)
            self._next_checkpoint = version - version % hooks.checkpoint_every + hooks.checkpoint_every
        for j, at in self.options.kill_ps.items():
            if version >= at and self.ps_servers[j].is_running:
                self.ps_servers[j].stop(f"killed at version {version} (fault injection)")
                with self.lock:
                    self.faults.append(FaultRecord(self.now(), f"/job:ps/replica:0/task:{j}", "ps_died"))
