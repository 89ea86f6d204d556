"""Deterministic execution of a parameter-server run, ordered by a simulated clock.

Source: DESIGN §4 (asynchronous training has a deterministic mode driven by the simulated
clock) and the disciplines of Ho et al. 2013 (SSP) and TF1's ``SyncReplicasOptimizer``.
The math runs in the real worker graphs and sessions; this module only decides *when*
each session call happens. A worker step is four events:

``start`` (gate, then pull: the worker's session reads the ps variables and computes its
gradient at this instant) → ``push`` (after pull time + compute time × speed factor; the
push waits for each ps task's inbound link, one message at a time, in request order) →
``arrive`` (the gradient reaches the ps: applied, accumulated or dropped) → the next
``start`` (at once in ``async``; after a token in ``sync``; once the version is at least
``clock - s`` in ``ssp``). Events are ordered by (time, kind: arrivals before starts,
worker index), never by thread timing, so a run is the same every time, bit for bit.
Transfer time = latency + bytes / bandwidth of the inter-task link (cost model); the
ps's own apply time is not modelled.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..runtime import cost_model
from ..runtime.config import RunOptions
from ..train.file_io import atomic_write
from .staleness import FaultRecord, PhaseRecord, UpdateRecord

if TYPE_CHECKING:
    from .cluster import Server
    from .parameter_server import DriverOptions, ShardedDigits
    from .ps_model import ModelConfig, StepCosts, WorkerModel

_ARRIVE, _PUSH, _START = 0, 1, 2
_OK_OPTIONS = RunOptions(timeout_in_ms=120_000)


class SimulatedRun:
    """Runs the event loop; see the module doc. ``hooks`` hold ``eval(version, t)`` and
    ``checkpoint(version, t, clocks)`` callbacks of the driver."""

    def __init__(self, models: Sequence[WorkerModel], ps_servers: Sequence[Server], worker_servers: Sequence[Server],
                 config: ModelConfig, costs: StepCosts, data: ShardedDigits, options: DriverOptions,
                 start: Mapping[str, Any]) -> None:
        self.models = models
        self.ps_servers = ps_servers
        self.worker_servers = worker_servers
        self.config = config
        self.costs = costs
        self.data = data
        self.options = options
        self.version, self.time_s = start["version"], start["time_s"]
        n = config.num_workers
        self.clock = list(start["clocks"])
        self.alive = [True] * n
        self.waiting: dict[int, float] = {}  # worker -> time it started waiting
        self.wait_s = [0.0] * n
        self.pending: dict[int, dict[str, Any]] = {}  # worker -> computed gradient awaiting its push
        self.contributions: list[Any] = []  # sync/ssp: records waiting for their update
        self.arrivals: dict[int, list[Any]] = {}  # ssp: clock -> gradients in
        self.accumulated = 0
        self.tokens = 0
        self.nic_free: dict[str, float] = {}
        self.start_queued = [False] * n
        self.events: list[tuple[Any, ...]] = []  # heap
        self.seq = 0
        self.updates: list[UpdateRecord] = []
        self.phases: list[PhaseRecord] = []
        self.faults: list[FaultRecord] = []
        self.failed: str | None = None

    # -- the loop ------------------------------------------------------------------
    def run(self) -> SimulatedRun:
        for w in range(self.config.num_workers):
            self._schedule_start(w)
        while self.events and self.failed is None and self.version < self.options.steps:
            time_s, kind, w, _, payload = heapq.heappop(self.events)
            self.time_s = time_s
            try:
                (self._arrive, self._push, self._start)[kind](w, payload)
            except errors.OpError as error:
                self._fail(f"/job:worker/replica:0/task:{w}", error)
        if self.failed is None and self.version < self.options.steps:
            self._deadlock()
        return self

    def _schedule(self, time_s, kind, w, payload=None):
        self.seq += 1
        heapq.heappush(self.events, (time_s, kind, w, self.seq, payload))

    def _schedule_start(self, w):
        """Queue one ``start`` of ``w`` now (at most one pending at a time)."""
        if not self.start_queued[w]:
            self.start_queued[w] = True
            self._schedule(self.time_s, _START, w)

    # -- events --------------------------------------------------------------------
    def _start(self, w, _):
        self.start_queued[w] = False
        if not self.alive[w]:
            return
        if self.options.kill_worker.get(w) == self.clock[w]:
            self._kill_worker(w)
            return
        mode, s = self.config.mode, self.config.staleness
        if mode == "ssp" and self.version < self.clock[w] - s:
            self.waiting.setdefault(w, self.time_s)
            return
        self._end_wait(w)
        model = self.models[w]
        xb, yb = self.data.batch(w, self.clock[w])
        fetches = [model.loss, model.global_step] + model.grads
        values = model.session.run(fetches, {model.x: xb, model.y: yb}, options=_OK_OPTIONS)
        t0 = self.time_s
        pull_end = t0
        link = self.costs.link
        for nbytes in self.costs.bytes_per_ps:
            pull_end += cost_model.transfer_time_s(nbytes, link)
        compute_end = pull_end + self.costs.compute_s * self.options.speed(w)
        task = _worker(w)
        self.phases.append(PhaseRecord(task, "pull", t0, pull_end, self.clock[w]))
        self.phases.append(PhaseRecord(task, "compute", pull_end, compute_end, self.clock[w]))
        self.pending[w] = dict(loss=float(values[0]), version=int(values[1]), grads=values[2:], step=self.clock[w],
                               wait_s=self.wait_s[w])
        self.wait_s[w] = 0.0
        self._schedule(compute_end, _PUSH, w)

    def _push(self, w, _):
        arrival = self.time_s
        for j, nbytes in enumerate(self.costs.bytes_per_ps):
            nic = f"/job:ps/replica:0/task:{j} NIC in"
            start = max(self.time_s, self.nic_free.get(nic, 0.0))
            end = start + cost_model.transfer_time_s(nbytes, self.costs.link)
            self.nic_free[nic] = end
            self.phases.append(PhaseRecord(f"/job:ps/replica:0/task:{j}", "recv", start, end,
                                           self.pending[w]["step"], f"worker {w}"))
            arrival = max(arrival, end)
        self.phases.append(PhaseRecord(_worker(w), "push", self.time_s, arrival, self.pending[w]["step"]))
        self._schedule(arrival, _ARRIVE, w)

    def _arrive(self, w, _):
        grad = self.pending.pop(w)
        model = self.models[w]
        feed = dict(zip(model.grads, grad["grads"]))
        getattr(self, "_arrive_" + self.config.mode)(w, model, feed, grad)

    def _arrive_async(self, w, model, feed, grad):
        new_version = int(model.session.run(model.new_version, feed, options=_OK_OPTIONS))
        self.clock[w] += 1
        self._record(w, grad, new_version - 1, True)
        self._updated(new_version)
        self._schedule_start(w)

    def _arrive_sync(self, w, model, feed, grad):
        model.session.run(model.push_op, feed, options=_OK_OPTIONS)
        self.clock[w] += 1
        count = int(model.session.run(model.num_accumulated, options=_OK_OPTIONS))
        if count == self.accumulated:
            self._record(w, grad, self.version, False)
        else:
            self.accumulated = count
            self.contributions.append((w, grad))
        if count >= self.config.replicas_to_aggregate:
            chief = self.models[0]
            chief.session.run(chief.sync_op, options=_OK_OPTIONS)
            self.accumulated = 0
            self.tokens += max(self.config.num_workers, self.config.replicas_to_aggregate)
            self._apply_contributions()
            for waiter in sorted(self.waiting, key=lambda v: (self.waiting[v], v)):
                self._take_token(waiter)
        self.waiting[w] = self.time_s
        self._take_token(w)

    def _take_token(self, w):
        if self.tokens <= 0 or not self.alive[w] or self.version >= self.options.steps:
            return
        model = self.models[w]
        model.session.run(model.token_op, options=_OK_OPTIONS)
        self.tokens -= 1
        self._schedule_start(w)
        self._end_wait(w)

    def _arrive_ssp(self, w, model, feed, grad):
        s = self.config.staleness
        c = grad["step"]
        feed[model.clock_round] = np.int64(c // (s + 1))
        model.session.run(model.ssp_push[c % (s + 1)], feed, options=_OK_OPTIONS)
        self.arrivals[c] = self.arrivals.get(c, 0) + 1
        self.contributions.append((w, grad))
        self.clock[w] += 1
        while self.arrivals.get(self.version, 0) == self.config.num_workers and self.version < self.options.steps:
            chief = self.models[0]
            chief.session.run(chief.ssp_apply[self.version % (s + 1)], options=_OK_OPTIONS)
            if chief.ema_op is not None:  # decay from the step before the update, as in sync's sync op
                chief.session.run(chief.ema_op, {chief.global_step.value(): np.int64(self.version)},
                                  options=_OK_OPTIONS)
            del self.arrivals[self.version]
            self._apply_contributions(lambda item: item[1]["step"] == self.version)
            for waiter in sorted(self.waiting, key=lambda v: (self.waiting[v], v)):
                self._schedule_start(waiter)
        self._schedule_start(w)

    # -- updates -------------------------------------------------------------------
    def _apply_contributions(self, belongs=lambda item: True):
        """Record the gradients of the update just applied (at ``self.version``), then advance it."""
        applied_at = self.version
        kept = []
        for item in self.contributions:
            if belongs(item):
                self._record(item[0], item[1], applied_at, True)
            else:
                kept.append(item)
        self.contributions = kept
        self.phases.append(PhaseRecord("/job:ps/replica:0/task:0", "apply", self.time_s, self.time_s, applied_at))
        self._updated(applied_at + 1)

    def _updated(self, version):
        self.version = version
        hooks = self.options.hooks
        if hooks.eval_every and (version % hooks.eval_every == 0 or version == self.options.steps):
            hooks.evaluate(version, self.time_s)
        if hooks.checkpoint_every and version % hooks.checkpoint_every == 0:
            hooks.checkpoint(version, self.time_s, self.clock)
        kill = [j for j, at in self.options.kill_ps.items() if at == version]
        for j in kill:
            self.ps_servers[j].stop(f"killed at version {version} (fault injection)")
            self.faults.append(FaultRecord(self.time_s, f"/job:ps/replica:0/task:{j}", "ps_died"))

    def _record(self, w, grad, applied_at, applied):
        self.updates.append(UpdateRecord(w, grad["step"], grad["version"], applied_at, applied_at - grad["version"],
                                         grad["wait_s"], self.time_s, applied, grad["loss"]))

    def _end_wait(self, w):
        since = self.waiting.pop(w, None)
        if since is not None and self.time_s > since:
            self.wait_s[w] += self.time_s - since
            self.phases.append(PhaseRecord(_worker(w), "wait", since, self.time_s, self.clock[w]))

    # -- faults --------------------------------------------------------------------
    def _kill_worker(self, w):
        self.alive[w] = False
        self.waiting.pop(w, None)
        self.worker_servers[w].stop(f"killed before its step {self.clock[w]} (fault injection)")
        self.faults.append(FaultRecord(self.time_s, _worker(w), "worker_died",
                                       message=f"worker {w} died before its step {self.clock[w]}"))

    def _fail(self, task, error):
        self.faults.append(FaultRecord(self.time_s, task, "error", type(error).__name__, error.message))
        self.failed = f"{type(error).__name__}: {error.message}"

    def _deadlock(self):
        """No event can make progress: each waiting worker's (or the chief's) blocking op runs with
        a short deadline and fails with the engine's error, as it would in a real cluster."""
        if self.config.mode == "async":
            self.failed = "UnavailableError: every worker is down"
            return
        options = RunOptions(timeout_in_ms=int(self.options.fault_timeout_s * 1000))
        blocked = sorted(w for w in self.waiting if self.alive[w])
        for w in blocked or [0]:
            model = self.models[w]
            try:
                if self.config.mode == "sync":
                    model.session.run(model.token_op, options=options)
                else:
                    chief = self.models[0]
                    slot = self.version % (self.config.staleness + 1)
                    chief.session.run(chief.ssp_apply[slot], options=options)
            except errors.OpError as error:
                self.faults.append(FaultRecord(self.time_s, _worker(w), "error", type(error).__name__,
                                               error.message))
                if self.failed is None:
                    self.failed = f"{type(error).__name__}: {error.message}"
        if self.failed is None:
            self.failed = "AbortedError: no worker can make progress"


def _worker(w):
    return f"/job:worker/replica:0/task:{w}"


def save_sidecar(path: str, version: int, time_s: float, clocks: Iterable[int]) -> None:
    """Driver state saved next to a checkpoint: version, simulated time, worker clocks (JSON)."""
    state = {"version": int(version), "time_s": float(time_s), "clocks": [int(c) for c in clocks]}
    atomic_write(path + ".driver.json", lambda f: f.write(json.dumps(state).encode("utf-8")))


def load_sidecar(path: str, version: int, num_workers: int) -> dict[str, Any]:
    """The state :func:`save_sidecar` wrote, or one inferred from ``version`` if there is none.

    Raises:
        DataLossError: the sidecar is not the JSON :func:`save_sidecar` writes (truncated or corrupt).
    """
    sidecar = path + ".driver.json"
    if os.path.exists(sidecar):
        try:
            with open(sidecar, encoding="utf-8") as f:
                state = json.load(f)
            clocks = [int(c) for c in state["clocks"]]
            state = {"version": int(state["version"]), "time_s": float(state["time_s"]), "clocks": clocks}
        except (ValueError, KeyError, TypeError) as error:
            raise errors.DataLossError(None, None, f"Unable to read the training driver's state {sidecar} next to "
                                       f"checkpoint {path}: {error}. Delete it to restart the workers' clocks "
                                       "at the checkpoint's version.") from error
        if len(clocks) == num_workers:
            return state
    return {"version": version, "time_s": 0.0, "clocks": [version] * num_workers}
