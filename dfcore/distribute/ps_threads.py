"""Free-running execution of a parameter-server run: one thread per worker and one for the chief, as TF1 runs it.

Source: TF1's between-graph training loop (each worker's client calls ``sess.run`` in a loop;
the chief also runs the aggregated updates). The loops are :mod:`~dfcore.distribute.ps_loop`'s,
the rules the discipline's; this driver supplies threads, the wall clock (seconds since the
start) and shared record lists. The order of updates depends on thread scheduling, so two runs
differ (use ``execution="simulated"`` for reproducible numbers). A record's time is when its
push returned.

Every ``sess.run`` and every wait at a gate has a deadline; a worker that dies leaves the others
blocked only until it (``DeadlineExceededError``), a lost ps task ends the run, and every thread
is joined before :meth:`ThreadedRun.run` returns (blocked ops are cancelled at the end).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import errors
from . import cluster_runtime
from .ps_loop import WallContext, run_chief, run_worker
from .ps_modes import DISCIPLINES
from .staleness import FaultRecord, PhaseRecord, UpdateRecord

if TYPE_CHECKING:
    from .cluster import Server
    from .ps_chief import ChiefSchedule
    from .ps_data import ShardedDigits
    from .ps_model import ModelConfig, WorkerModel

_NORMAL_TIMEOUT_S = 60.0


class ThreadedRun:
    """Runs the worker threads and the chief's thread to ``schedule.steps`` updates; see the module doc."""

    def __init__(self, models: Sequence[WorkerModel], ps_servers: Sequence[Server], worker_servers: Sequence[Server],
                 config: ModelConfig, data: ShardedDigits, schedule: ChiefSchedule,
                 speed: Callable[[int, int], float], kill_worker: Mapping[int, int], fault_timeout_s: float,
                 start: Mapping[str, Any]) -> None:
        self.models, self.ps_servers, self.worker_servers = models, ps_servers, worker_servers
        self.config, self.data, self.schedule = config, data, schedule
        self.mode = DISCIPLINES[config.mode](config)
        self.speed, self.kill_worker = speed, dict(kill_worker)
        faulty = bool(kill_worker or schedule.kill_ps)
        self.clocks = list(start["clocks"])
        self.version = int(start["version"])
        self.lock = threading.Lock()
        self.updates: list[UpdateRecord] = []
        self.phases: list[PhaseRecord] = []
        self.faults: list[FaultRecord] = schedule.faults
        self.failed: str | None = None
        self.stop = threading.Event()
        self.t0 = time.perf_counter()
        self.time_s = 0.0
        self.ctx = WallContext(self.now, self.stop, fault_timeout_s if faulty else _NORMAL_TIMEOUT_S,
                               self._version, self._saw_version, self._locked(self.updates.append),
                               self._locked(self.phases.append))

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def run(self) -> ThreadedRun:
        chief = threading.Thread(target=self._guard, args=(self._chief, "chief"), daemon=True, name="ps-chief")
        workers = [threading.Thread(target=self._guard, args=(self._worker, w), daemon=True,
                                    name=f"ps-worker-{w}") for w in range(self.config.num_workers)]
        for thread in [chief, *workers]:
            thread.start()
        while any(t.is_alive() for t in workers) or (chief.is_alive() and self.mode.needs_chief):
            (next((t for t in workers if t.is_alive()), chief)).join(0.02)
            if self.schedule.done(self._version()) or self.stop.is_set():
                break
        self._shut_down()
        for thread in [chief, *workers]:
            thread.join(self.ctx.timeout_s + 5)
        self.time_s = self.now()
        try:  # the global step the ps holds (what the records must add up to)
            self.version = int(self.models[0].session.run(self.models[0].global_step))
        except errors.OpError:
            pass  # a ps task is down: keep the newest version seen
        return self

    def _shut_down(self) -> None:
        """Stop every thread: blocked ops (tokens, take_grad) fail with CancelledError, which is ignored."""
        self.stop.set()
        for server in list(self.worker_servers) + list(self.ps_servers):
            cluster = cluster_runtime.cluster_of(server)
            if cluster is not None:
                cluster.cancel_waiters(errors.CancelledError(None, None, "The training run ended."))
                break

    def _guard(self, fn: Callable[[Any], None], who: Any) -> None:
        try:
            fn(who)
        except errors.OpError as error:
            if isinstance(error, errors.CancelledError) and self.stop.is_set():
                return  # woken by the shutdown
            if who == "chief" and not self.worker_servers[0].is_running:
                return  # the chief's task, worker 0, was killed: the chief died with it
            task = "/job:worker/replica:0/task:0" if who == "chief" else f"/job:worker/replica:0/task:{who}"
            with self.lock:
                self.faults.append(FaultRecord(self.now(), task, "error", type(error).__name__, error.message))
                self.failed = self.failed or f"{type(error).__name__}: {error.message}"
            if not isinstance(error, errors.DeadlineExceededError) or who == "chief":
                self.stop.set()  # a lost ps ends the run; a deadline only ends this worker

    def _worker(self, w: int) -> None:
        def killed(clock: int) -> None:
            self.worker_servers[w].stop(f"killed before its step {clock} (fault injection)")
            with self.lock:
                self.faults.append(FaultRecord(self.now(), f"/job:worker/replica:0/task:{w}", "worker_died"))

        def counted(record: UpdateRecord) -> None:
            with self.lock:
                self.updates.append(record)
                self.clocks[w] = record.step + 1

        ctx = WallContext(self.ctx.now, self.stop, self.ctx.timeout_s, self._version, self._saw_version, counted,
                          self.ctx.phase)
        run_worker(self.models[w], self.mode, self.data, ctx, self.schedule.steps,
                   lambda clock: self.speed(w, clock), self.clocks[w], self.kill_worker.get(w), killed)

    def _chief(self, _: Any) -> None:
        run_chief(self.models[0], self.mode, self.schedule, self.ctx, lambda: list(self.clocks))

    def _version(self) -> int:
        with self.lock:
            return self.version

    def _saw_version(self, version: int) -> None:
        with self.lock:
            self.version = max(self.version, version)

    def _locked(self, append: Callable[[Any], None]) -> Callable[[Any], None]:
        def locked(item: Any) -> None:
            with self.lock:
                append(item)
        return locked
