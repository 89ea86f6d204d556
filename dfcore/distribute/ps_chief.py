"""The chief's schedule in every parameter-server driver: evaluation, checkpoints, ps faults and the stop.

Source: TF1's chief duties in between-graph training (``mnist_replica.py``: the chief
evaluates and saves; ``tf.train.Saver`` with ``global_step``), run here by every driver
(simulated clock, threads, MPI) through one :class:`ChiefSchedule`. Rule: each time the
chief sees a new global step ``v`` it evaluates the test set when ``v`` has reached the next
multiple of ``eval_every`` (or the last update, ``steps``), saves a checkpoint (with the
driver's state beside it: :func:`save_sidecar`) when ``v`` reached the next multiple of
``checkpoint_every``, and stops the ps tasks of ``kill_ps`` whose version ``v`` reached
(fault injection). The run stops at ``steps`` updates.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import errors
from ..train.file_io import atomic_write
from .staleness import EvalPoint, FaultRecord

if TYPE_CHECKING:
    from .cluster import Server
    from .ps_data import ShardedDigits
    from .ps_model import WorkerModel


class ChiefSchedule:
    """See the module doc. ``chief``/``data`` may be None on ranks that are not the chief (then it does nothing)."""

    def __init__(self, chief: WorkerModel | None, data: ShardedDigits | None, steps: int, eval_every: int,
                 checkpoint_dir: str | None, checkpoint_every: int, kill_ps: Mapping[int, int] | None = None,
                 ps_servers: Sequence[Server] = (), start_version: int = 0) -> None:
        self.chief, self.data, self.steps = chief, data, steps
        self.eval_every, self.checkpoint_dir, self.checkpoint_every = eval_every, checkpoint_dir, checkpoint_every
        self.kill_ps, self.ps_servers = dict(kill_ps or {}), ps_servers
        self.evals: list[EvalPoint] = []
        self.faults: list[FaultRecord] = []
        self._next_eval = _next_multiple(start_version, eval_every)
        self._next_checkpoint = _next_multiple(start_version, checkpoint_every)

    def done(self, version: int) -> bool:
        """True once ``version`` reached the run's ``steps`` updates."""
        return version >= self.steps

    def after(self, version: int, time_s: float, clocks: Callable[[], Iterable[int]]) -> None:
        """The chief saw global step ``version`` at ``time_s``; ``clocks()`` gives the workers' clocks for a
        checkpoint's sidecar."""
        if self.chief is None:
            return
        if self.eval_every and (version >= self._next_eval or version == self.steps):
            self.evaluate(version, time_s)
            self._next_eval = _next_multiple(version, self.eval_every)
        if self.checkpoint_every and version >= self._next_checkpoint:
            path = self.chief.saver.save(self.chief.session, os.path.join(self.checkpoint_dir or ".", "model.ckpt"),
                                         global_step=version)
            save_sidecar(path, version, time_s, clocks())
            self._next_checkpoint = _next_multiple(version, self.checkpoint_every)
        for j, at in sorted(self.kill_ps.items()):
            if version >= at and self.ps_servers[j].is_running:
                self.ps_servers[j].stop(f"killed at version {version} (fault injection)")
                self.faults.append(FaultRecord(time_s, f"/job:ps/replica:0/task:{j}", "ps_died"))

    def evaluate(self, version: int, time_s: float) -> None:
        """Append the test loss and accuracy at ``version`` to :attr:`evals`."""
        loss, accuracy, accuracy_ema = self.metrics()
        self.evals.append(EvalPoint(version, time_s, loss, accuracy, accuracy_ema))

    def metrics(self) -> tuple[float, float, float | None]:
        """``(test loss, test accuracy, test accuracy of the moving averages or None)`` of the ps parameters."""
        chief, data = self.chief, self.data
        assert chief is not None and data is not None
        fetches = [chief.eval_loss, chief.eval_accuracy]
        if chief.eval_accuracy_ema is not None:
            fetches.append(chief.eval_accuracy_ema)
        values = chief.session.run(fetches, {chief.x_eval: data.x_test, chief.y_eval: data.y_test})
        return float(values[0]), float(values[1]), (float(values[2]) if len(values) > 2 else None)


def _next_multiple(version: int, every: int) -> int:
    return version - version % every + every if every else 0


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
