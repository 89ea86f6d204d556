"""Records of a parameter-server training run, for lessons and widgets (plain frozen dataclasses).

A run (:func:`dfcore.distribute.parameter_server.train`) returns a :class:`RunRecord`:
one :class:`UpdateRecord` per gradient a worker pushed, :class:`EvalPoint` s of test loss
and accuracy against time, :class:`PhaseRecord` s for the per-task lanes (pull, compute,
push, wait; the ps's inbound link and its updates), :class:`FaultRecord` s, and the ps
load table. Times are simulated seconds (``execution="simulated"``) or wall seconds since
the run started (``execution="threads"``); :attr:`RunRecord.clock` says which.

Staleness of a gradient = the parameter version (global step) it was applied at minus
the version it was computed on; 0 means it was computed on the parameters it updated.
"""

from __future__ import annotations

import collections
import dataclasses
import types
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..train.device_setter import PsLoad
from collections.abc import Mapping
from typing import Any

PHASES = ("pull", "compute", "push", "wait", "recv", "apply")


@dataclasses.dataclass(frozen=True)
class UpdateRecord:
    """One pushed gradient.

    Attributes:
        worker: the worker task index.
        step: the worker's own step count (its clock) when it computed the gradient.
        version_computed_on: the global step of the parameters it read.
        version_applied_at: the global step of the parameters it was applied to (for a dropped
            gradient: the global step when it was dropped).
        staleness: ``version_applied_at - version_computed_on``.
        wait_s: how long the worker waited (barrier, token or staleness bound) before this step.
        sim_time_s: when it was applied or dropped.
        applied: False when the ps dropped it as stale (sync) or it missed its update.
        loss: the worker's mini-batch loss for it.
        slowest_clock: ``ssp``: the clocks of the slowest worker whose updates were in when the parameters were
            read (Ho et al.'s guarantee: ≥ ``step - s``); -1 in the other modes.
    """

    worker: int
    step: int
    version_computed_on: int
    version_applied_at: int
    staleness: int
    wait_s: float
    sim_time_s: float
    applied: bool = True
    loss: float = float("nan")
    slowest_clock: int = -1


@dataclasses.dataclass(frozen=True)
class EvalPoint:
    """Test loss and accuracy of the ps parameters at one version; ``accuracy_ema`` uses the
    moving averages (None without EMA)."""

    version: int
    sim_time_s: float
    loss: float
    accuracy: float
    accuracy_ema: float | None = None


@dataclasses.dataclass(frozen=True)
class PhaseRecord:
    """One interval on a task's lane: ``kind`` in :data:`PHASES` (``recv``: the task's inbound
    link carrying a push; ``apply``: a parameter update, zero length), ``detail`` free text."""

    task: str
    kind: str
    start_s: float
    end_s: float
    step: int = -1
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class FaultRecord:
    """A fault seen during the run: ``kind`` is ``worker_died``, ``ps_died`` or ``error``; ``error_type``
    the error class seen by ``task`` (``UnavailableError``, ``DeadlineExceededError``), if any."""

    sim_time_s: float
    task: str
    kind: str
    error_type: str = ""
    message: str = ""


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """Everything a run produced.

    Attributes:
        mode, staleness, num_ps, num_workers, replicas_to_aggregate, execution, seed: the setup
            (``staleness`` is None outside ``ssp``).
        clock: ``"simulated"`` or ``"wall"`` (what the ``*_s`` times are).
        updates, evals, phases, faults: the records above, in time order.
        ps_load: a :class:`~dfcore.train.device_setter.PsLoad` per ps task.
        status: ``"completed"`` or ``"failed"``; ``error``: ``"<ErrorType>: <message>"`` or None.
        final_version: the global step reached; ``sim_time_s``: when the run ended.
        test_accuracy, test_loss: of the final parameters (nan if the run failed before).
        params: the final ps parameters, name → array (read-only mapping).
        learning_rate: the SGD rate per update; examples_per_update: the examples whose mean gradient one
            update applies (batch size × gradients per update).
    """

    mode: str
    staleness: int | None
    num_ps: int
    num_workers: int
    replicas_to_aggregate: int
    execution: str
    seed: int
    clock: str
    updates: tuple[UpdateRecord, ...]
    evals: tuple[EvalPoint, ...]
    phases: tuple[PhaseRecord, ...]
    faults: tuple[FaultRecord, ...]
    ps_load: tuple[PsLoad, ...]
    status: str
    error: str | None
    final_version: int
    sim_time_s: float
    test_accuracy: float
    test_loss: float
    params: types.MappingProxyType[str, np.ndarray]
    learning_rate: float = float("nan")
    examples_per_update: int = 0

    @property
    def learning_rate_per_example(self) -> float:
        """The effective SGD rate per training example: ``learning_rate / examples_per_update`` (an update
        applies the mean gradient of ``examples_per_update`` examples), the rate to match across modes."""
        return self.learning_rate / self.examples_per_update if self.examples_per_update else float("nan")

    @property
    def updates_applied(self) -> int:
        return sum(1 for u in self.updates if u.applied)

    @property
    def updates_dropped(self) -> int:
        return sum(1 for u in self.updates if not u.applied)

    def staleness_histogram(self) -> dict[int, int]:
        """``{staleness: number of applied gradients}``, sorted by staleness."""
        return dict(sorted(collections.Counter(u.staleness for u in self.updates if u.applied).items()))

    def ps_traffic(self) -> dict[str, tuple[int, float]]:
        """Each ps task's inbound load, ``{task: (pushes received, seconds its inbound link was busy)}``, from
        the ``recv`` phases (the simulated driver records them; empty for the wall-clock drivers). The task
        with the most busy seconds is the hot ps."""
        traffic: dict[str, tuple[int, float]] = {load.task: (0, 0.0) for load in self.ps_load}
        for p in self.phases:
            if p.kind == "recv":
                count, busy = traffic.get(p.task, (0, 0.0))
                traffic[p.task] = (count + 1, busy + p.end_s - p.start_s)
        return traffic if any(count for count, _ in traffic.values()) else {}

    def wait_s_by_worker(self) -> dict[int, float]:
        """Total waiting time of each worker, ``{worker: seconds}``."""
        totals = {w: 0.0 for w in range(self.num_workers)}
        for u in self.updates:
            totals[u.worker] += u.wait_s
        return totals


def format_histogram(histogram: Mapping[Any, int], width: int = 40) -> str:
    """A text bar chart of ``{value: count}``, one line per value: ``  2 | ##### 12``."""
    if not histogram:
        return "(no updates)"
    top = max(histogram.values())
    lines = []
    for value, count in histogram.items():
        bar = "#" * max(1, round(width * count / top)) if count else ""
        lines.append(f"{value:>3} | {bar} {count}")
    return "\n".join(lines)


def summary_lines(record: RunRecord) -> list[str]:
    """The example's report: accuracy, times, updates applied/dropped, waits and the staleness histogram."""
    unit = "simulated" if record.clock == "simulated" else "wall"
    lines = [f"test_accuracy={record.test_accuracy:.4f}",
             f"test_loss={record.test_loss:.4f}",
             f"{unit}_time_s={record.sim_time_s:.6f}",
             f"updates_applied={record.updates_applied} updates_dropped={record.updates_dropped} "
             f"final_version={record.final_version}",
             "wait_s_by_worker=" + ", ".join(f"{w}:{s:.6f}" for w, s in record.wait_s_by_worker().items()),
             f"status={record.status}" + (f" error={record.error}" if record.error else "")]
    lines += [f"fault: {f.task} {f.kind} {f.error_type} at {f.sim_time_s:.6f}s" for f in record.faults]
    lines += ["staleness histogram (staleness | applied gradients):", format_histogram(record.staleness_histogram())]
    return lines
