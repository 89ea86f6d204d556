"""The worker's and the chief's loops of the wall-clock drivers (threads in one process, MPI processes).

Source: TF1's between-graph training loop (each worker's client runs its steps in a loop; the
chief also runs the aggregated updates and its schedule). The rules are the discipline's
(:mod:`~dfcore.distribute.ps_modes`) and the schedule's (:mod:`~dfcore.distribute.ps_chief`);
the drivers give these loops a clock, a stop event and the places records go. A wait at a gate
polls every ``poll_s`` (or blocks in the discipline's op, when its gate is one) and fails with
``DeadlineExceededError`` after ``timeout_s``; every ``session.run`` has that deadline too.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .. import errors
from ..runtime.config import RunOptions
from .staleness import PhaseRecord, UpdateRecord

if TYPE_CHECKING:
    from .ps_chief import ChiefSchedule
    from .ps_data import ShardedDigits
    from .ps_model import WorkerModel
    from .ps_modes import Discipline

PS0 = "/job:ps/replica:0/task:0"  # where the apply marks go (the global step lives on ps 0)


@dataclasses.dataclass
class WallContext:
    """What a wall-clock driver gives the loops: ``now()`` (seconds since the run's start), the ``stop`` event,
    the deadline ``timeout_s``, ``version()`` (the newest global step this process knows), and sinks for
    records (called from several threads: they must be thread-safe)."""

    now: Callable[[], float]
    stop: threading.Event
    timeout_s: float
    version: Callable[[], int]
    saw_version: Callable[[int], None]
    record: Callable[[UpdateRecord], None]
    phase: Callable[[PhaseRecord], None]
    poll_s: float = 0.002

    @property
    def options(self) -> RunOptions:
        return RunOptions(timeout_in_ms=int(self.timeout_s * 1000))


def run_worker(model: WorkerModel, mode: Discipline, data: ShardedDigits, ctx: WallContext, steps: int,
               speed: Callable[[int], float] = lambda clock: 1.0, start_clock: int = 0, kill_at: int | None = None,
               on_kill: Callable[[int], None] | None = None) -> None:
    """Worker ``model.index``'s steps until the discipline says its gradients can no longer be applied within
    ``steps`` updates, or ``ctx.stop``. A step ``c`` with ``speed(c)`` > 1 (a straggler) sleeps so that it takes
    ``speed(c)`` × as long.

    Raises:
        DeadlineExceededError: its gate stayed closed for ``ctx.timeout_s`` (a worker may be down).
        OpError: a step failed (e.g. ``UnavailableError``: a ps task is gone).
    """
    w, session, options = model.index, model.session, ctx.options
    task = f"/job:worker/replica:0/task:{w}"
    clock, first = start_clock, True
    while not ctx.stop.is_set() and not mode.done(clock, ctx.version(), steps):
        if kill_at == clock:
            if on_kill is not None:
                on_kill(clock)
            return
        waited_from = ctx.now()
        deadline = time.monotonic() + ctx.timeout_s
        while not mode.blocking_gate and not mode.ready(model, clock, first):
            if ctx.stop.is_set() or mode.done(clock, ctx.version(), steps):
                return
            if time.monotonic() > deadline:
                raise errors.DeadlineExceededError(
                    None, None, f"Timed out after {ctx.timeout_s:g} s: worker {w} waited for {mode.waits_for} "
                                f"before its step {clock}; a worker may be down.")
            ctx.stop.wait(ctx.poll_s)
        mode.begin(model, clock, first, options)
        started = ctx.now()
        if started - waited_from > 0.001:
            ctx.phase(PhaseRecord(task, "wait", waited_from, started, clock, mode.waits_for))
        xb, yb = data.batch(w, clock)
        extra = mode.pull_fetches(model)
        values = session.run([model.loss, model.global_step, *extra, *model.grads], {model.x: xb, model.y: yb},
                             options=options)
        read = int(values[1])
        if mode.done(clock, read, steps):
            return
        slow = speed(clock) - 1.0
        if slow > 0:
            ctx.stop.wait(slow * (ctx.now() - started))
        feed = dict(zip(model.grads, values[2 + len(extra):]))
        feed.update(mode.feed(model, clock))
        pushed = mode.push(model, feed, clock, options)
        end = ctx.now()
        ctx.phase(PhaseRecord(task, "compute", started, end, clock, "pull, compute and push the gradients"))
        if pushed.immediate:
            ctx.phase(PhaseRecord(PS0, "apply", end, end, pushed.applied_at, f"from worker {w}"))
        ctx.record(UpdateRecord(w, clock, read, pushed.applied_at, pushed.applied_at - read, started - waited_from,
                                end, pushed.applied, float(values[0]), mode.slowest_clock(values[2:2 + len(extra)])))
        ctx.saw_version(pushed.applied_at + 1 if pushed.immediate else read)
        clock, first = clock + 1, False


def run_chief(chief: WorkerModel, mode: Discipline, schedule: ChiefSchedule, ctx: WallContext,
              clocks: Callable[[], Iterable[int]]) -> None:
    """The chief's loop: apply the aggregated updates (if the discipline has them) and run the schedule at every
    global step it sees, until ``steps`` updates or ``ctx.stop``.

    Raises:
        DeadlineExceededError: an aggregated update's gradients did not come within ``ctx.timeout_s``.
        OpError: an update or the schedule's evaluation failed (e.g. a ps task is gone).
    """
    options = ctx.options
    version = ctx.version()
    schedule.after(version, ctx.now(), clocks)
    progress = time.monotonic()
    while not ctx.stop.is_set() and not schedule.done(version):
        if mode.needs_chief and mode.chief_apply(chief, version, options):
            now = ctx.now()
            ctx.phase(PhaseRecord(PS0, "apply", now, now, version, "the averaged gradients"))
            version += 1
            ctx.saw_version(version)
        else:
            seen = ctx.version()
            if seen == version:
                if mode.needs_chief and time.monotonic() - progress > ctx.timeout_s:
                    raise errors.DeadlineExceededError(
                        None, None, f"Timed out after {ctx.timeout_s:g} s: the chief waited for the gradients of "
                                    f"update {version}; a worker may be down.")
                ctx.stop.wait(ctx.poll_s)
                continue
            version = seen
        progress = time.monotonic()
        schedule.after(version, ctx.now(), clocks)
