"""Deterministic execution of a parameter-server run, ordered by a simulated clock.

Source: docs/architecture.md#the-simulated-clock (asynchronous training has a deterministic mode driven by the
simulated clock). The math runs in the real worker graphs and sessions, and every rule of the update
discipline is its :mod:`~dfcore.distribute.ps_modes` module's; this driver only decides
*when* each session call happens. A worker step is four events:

``start`` (the worker passed its discipline's gate; its session reads the ps variables and
computes its gradient at this instant) → ``push`` (after pull time + compute time × speed
factor) → ``arrive`` (the discipline's push: applied,
accumulated or dropped; then the chief applies every aggregated update that is complete) → the
worker waits at its gate again.
Every message holds both ends of its link (:func:`~dfcore.runtime.cost_model.nic_ports`), reserved in
request order on a :class:`~dfcore.runtime.sim_clock.PortBook`: a pull from ps task j holds j's outbound
interface and the worker's inbound one, so the pulls of many workers queue on a ps's outbound interface and
one worker's pulls from several ps tasks queue on its own; a push to ps task j holds the worker's outbound
interface and j's inbound one, so a worker's pushes go out one after another and many workers' pushes queue
at a ps. Waiting workers are re-checked, in the order they began to wait, whenever a gradient
arrives. Events are ordered by (time, kind: arrivals before pushes before starts, worker
index), never by thread timing, so a run is the same every time, bit for bit. Transfer time
= latency + bytes / bandwidth of the inter-task link (cost model); the ps's own apply time is
not modelled. The run stops at exactly ``steps`` updates.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import errors
from ..runtime import cost_model, sim_clock
from ..runtime.config import RunOptions
from .ps_modes import DISCIPLINES
from .staleness import FaultRecord, PhaseRecord, UpdateRecord

if TYPE_CHECKING:
    from .cluster import Server
    from .ps_chief import ChiefSchedule
    from .ps_data import ShardedDigits
    from .ps_model import ModelConfig, StepCosts, WorkerModel

_ARRIVE, _PUSH, _START = 0, 1, 2
_OK_OPTIONS = RunOptions(timeout_in_ms=120_000)
_PS0 = "/job:ps/replica:0/task:0"  # where the apply marks go (the global step lives on ps 0)


class SimulatedRun:
    """Runs the event loop; see the module doc. ``start`` holds the ``version``, ``time_s`` and worker
    ``clocks`` to start from (a restored run's); ``speed(worker, step)`` the factor on a step's compute time."""

    def __init__(self, models: Sequence[WorkerModel], worker_servers: Sequence[Server], config: ModelConfig,
                 costs: StepCosts, data: ShardedDigits, schedule: ChiefSchedule, speed: Callable[[int, int], float],
                 kill_worker: Mapping[int, int], fault_timeout_s: float, start: Mapping[str, Any]) -> None:
        self.models, self.worker_servers, self.config = models, worker_servers, config
        self.mode = DISCIPLINES[config.mode](config)
        self.costs, self.data, self.schedule = costs, data, schedule
        self.speed, self.kill_worker, self.fault_timeout_s = speed, dict(kill_worker), fault_timeout_s
        self.version, self.time_s = int(start["version"]), float(start["time_s"])
        n = config.num_workers
        self.clock = list(start["clocks"])
        self.first = [True] * n
        self.alive = [True] * n
        self.waiting: dict[int, float] = {}  # worker -> time it started waiting at its gate
        self.wait_s = [0.0] * n
        self.pending: dict[int, dict[str, Any]] = {}  # worker -> computed gradient awaiting its push
        self.to_apply: list[tuple[int, dict[str, Any]]] = []  # (worker, gradient) the chief applies later
        self.ports = sim_clock.PortBook()
        self.events: list[tuple[Any, ...]] = []  # heap
        self.seq = 0
        self.updates: list[UpdateRecord] = []
        self.phases: list[PhaseRecord] = []
        self.faults: list[FaultRecord] = schedule.faults
        self.failed: str | None = None

    # -- the loop ------------------------------------------------------------------
    def run(self) -> SimulatedRun:
        for w in range(self.config.num_workers):
            self.waiting[w] = self.time_s
        self._admit()
        while self.events and self.failed is None and not self.schedule.done(self.version):
            time_s, kind, w, _, _ = heapq.heappop(self.events)
            self.time_s = time_s
            try:
                (self._arrive, self._push, self._start)[kind](w)
            except errors.OpError as error:
                self._fail(_worker(w), error)
        if self.failed is None and not self.schedule.done(self.version):
            self._deadlock()
        return self

    def _schedule(self, time_s: float, kind: int, w: int) -> None:
        self.seq += 1
        heapq.heappush(self.events, (time_s, kind, w, self.seq, None))

    def _admit(self) -> None:
        """Let every waiting worker whose gate is open start (in the order they began to wait)."""
        for w in sorted(self.waiting, key=lambda v: (self.waiting[v], v)):
            if self.schedule.done(self.version):
                return
            model = self.models[w]
            if not self.mode.ready(model, self.clock[w], self.first[w]):
                continue
            self.mode.begin(model, self.clock[w], self.first[w], _OK_OPTIONS)
            since = self.waiting.pop(w)
            if self.time_s > since:
                self.wait_s[w] += self.time_s - since
                self.phases.append(PhaseRecord(_worker(w), "wait", since, self.time_s, self.clock[w]))
            self._schedule(self.time_s, _START, w)

    # -- events --------------------------------------------------------------------
    def _start(self, w: int) -> None:
        if self.kill_worker.get(w) == self.clock[w]:
            self._kill_worker(w)
            return
        model = self.models[w]
        xb, yb = self.data.batch(w, self.clock[w])
        extra = self.mode.pull_fetches(model)
        values = model.session.run([model.loss, model.global_step, *extra, *model.grads], {model.x: xb, model.y: yb},
                                   options=_OK_OPTIONS)
        t0 = self.time_s
        pull_end = t0
        for j, nbytes in enumerate(self.costs.bytes_per_ps):
            seconds = cost_model.transfer_time_s(nbytes, self.costs.link)
            pull_end = max(pull_end, self.ports.reserve(cost_model.nic_ports(_ps(j), _worker(w)), t0, seconds)[1])
        compute_end = pull_end + self.costs.compute_s * self.speed(w, self.clock[w])
        self.phases.append(PhaseRecord(_worker(w), "pull", t0, pull_end, self.clock[w]))
        self.phases.append(PhaseRecord(_worker(w), "compute", pull_end, compute_end, self.clock[w]))
        self.pending[w] = dict(loss=float(values[0]), version=int(values[1]), grads=values[2 + len(extra):],
                               step=self.clock[w], wait_s=self.wait_s[w],
                               slowest=self.mode.slowest_clock(values[2:2 + len(extra)]))
        self.wait_s[w] = 0.0
        self._schedule(compute_end, _PUSH, w)

    def _push(self, w: int) -> None:
        arrival = self.time_s
        for j, nbytes in enumerate(self.costs.bytes_per_ps):
            start, end = self.ports.reserve(cost_model.nic_ports(_worker(w), _ps(j)), self.time_s,
                                            cost_model.transfer_time_s(nbytes, self.costs.link))
            self.phases.append(PhaseRecord(_ps(j), "recv", start, end, self.pending[w]["step"], f"worker {w}"))
            arrival = max(arrival, end)
        self.phases.append(PhaseRecord(_worker(w), "push", self.time_s, arrival, self.pending[w]["step"]))
        self._schedule(arrival, _ARRIVE, w)

    def _arrive(self, w: int) -> None:
        grad = self.pending.pop(w)
        model = self.models[w]
        feed = dict(zip(model.grads, grad["grads"]))
        feed.update(self.mode.feed(model, grad["step"]))
        pushed = self.mode.push(model, feed, grad["step"], _OK_OPTIONS)
        self.clock[w] += 1
        self.first[w] = False
        if pushed.immediate:
            self._record(w, grad, pushed.applied_at, True)
            self._updated(pushed.applied_at + 1)
        elif not pushed.applied:
            self._record(w, grad, pushed.applied_at, False)
        else:
            grad["applied_at"] = pushed.applied_at
            self.to_apply.append((w, grad))
        while (self.mode.needs_chief and not self.schedule.done(self.version)
               and self.mode.chief_apply(self.models[0], self.version, _OK_OPTIONS)):
            self._updated(self.version + 1)
        self.waiting[w] = self.time_s
        self._admit()

    # -- updates -------------------------------------------------------------------
    def _updated(self, version: int) -> None:
        """The global step is now ``version``: record the gradients applied by this update and run the chief's
        schedule."""
        self.phases.append(PhaseRecord(_PS0, "apply", self.time_s, self.time_s, version - 1))
        kept = []
        for w, grad in self.to_apply:
            if grad["applied_at"] < version:
                self._record(w, grad, grad["applied_at"], True)
            else:
                kept.append((w, grad))
        self.to_apply = kept
        self.version = version
        self.schedule.after(version, self.time_s, lambda: self.clock)

    def _record(self, w: int, grad: Mapping[str, Any], applied_at: int, applied: bool) -> None:
        self.updates.append(UpdateRecord(w, grad["step"], grad["version"], applied_at, applied_at - grad["version"],
                                         grad["wait_s"], self.time_s, applied, grad["loss"], grad["slowest"]))

    # -- faults --------------------------------------------------------------------
    def _kill_worker(self, w: int) -> None:
        self.alive[w] = False
        self.worker_servers[w].stop(f"killed before its step {self.clock[w]} (fault injection)")
        self.faults.append(FaultRecord(self.time_s, _worker(w), "worker_died",
                                       message=f"worker {w} died before its step {self.clock[w]}"))

    def _fail(self, task: str, error: errors.OpError) -> None:
        self.faults.append(FaultRecord(self.time_s, task, "error", type(error).__name__, error.message))
        self.failed = f"{type(error).__name__}: {error.message}"

    def _deadlock(self) -> None:
        """No event can make progress: each waiting worker runs the op it would block on with a short deadline
        (:meth:`~dfcore.distribute.ps_modes.Discipline.block`) and fails with the engine's error, as it would in
        a real cluster."""
        blocked = sorted(w for w in self.waiting if self.alive[w])
        if not blocked:
            self.failed = "UnavailableError: every worker is down"
            return
        options = RunOptions(timeout_in_ms=int(self.fault_timeout_s * 1000))
        for w in blocked:
            try:
                self.mode.block(self.models[w], self.models[0], self.version, options)
            except errors.OpError as error:
                self.faults.append(FaultRecord(self.time_s, _worker(w), "error", type(error).__name__,
                                               error.message))
                if self.failed is None:
                    self.failed = f"{type(error).__name__}: {error.message}"
        if self.failed is None:
            self.failed = "AbortedError: no worker can make progress"


def _worker(w: int) -> str:
    return f"/job:worker/replica:0/task:{w}"


def _ps(j: int) -> str:
    return f"/job:ps/replica:0/task:{j}"
