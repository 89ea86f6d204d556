"""A rank whose program ends before the job does: the rank says so at exit, the launcher ends the job.

Source: dfcore's own protocol between the launchers (:mod:`dfcore.launch`, :func:`dfcore.mpi.job.run_job`)
and their ranks, for a fault MPI leaves silent: a rank that returns from its program, or calls
``sys.exit(0)``, while the others wait for it in a collective. Its process does not even exit (Open MPI's
``MPI_Finalize`` waits for every rank), and the others wait forever. Neither MPI nor the launcher can tell
a rank that waits for the departed one from a rank that is merely still working, so the rule is a grace
period:

* **Rank side** (:mod:`dfcore.mpi.departure_note`, installed by :mod:`dfcore.mpi.rank_main` before the
  program runs, or by :func:`install` when a rank started otherwise imports ``dfcore``): at exit — after
  the program ended normally and its ``atexit`` handlers ran, before ``MPI_Finalize`` — the rank writes
  ``rank<k>.left`` (JSON ``{"left_at": time.time(), "served": bool}``) into the launcher's directory
  ``DFCORE_JOB_DIR``. A rank that raised also writes it, but ``mpi4py``'s runner then aborts the whole
  job at once, well within the grace.
* **Launcher side** (:class:`DepartureWatch`): if the job still runs ``grace_s`` seconds after a rank
  left, and some ranks have not left, the job is killed and the error names the rank that left first.

Ranks that finish within ``grace_s`` of each other are never reported. A rank that ran a
``tf.train.Server`` (``"served": true``) is exempt: it said goodbye to the other tasks, and whatever
waits for it through dfcore (a step, a request) fails at once with ``UnavailableError`` naming it, while a
parameter server's ``join`` returns once the workers are gone — workers of asynchronous training may end
far apart. Programs that only talk raw MPI are covered too: the launchers start every rank through
:mod:`dfcore.mpi.rank_main`. One whose ranks legitimately end far apart ends them together (a final
``comm.Barrier()``) or widens the grace (``--exit-grace``, ``exit_grace_s``).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from .departure_note import JOB_DIR_ENV, departure_path, install as install_note
from .report import current_rank

if TYPE_CHECKING:
    from .world import Layout

__all__ = ["DEFAULT_GRACE_S", "JOB_DIR_ENV", "Departure", "DepartureWatch", "departure_path", "install"]

#: Seconds a job may go on after a rank's program ended before that rank counts as having left early.
DEFAULT_GRACE_S = 3.0


def install() -> None:
    """Rank side: note this rank's departure at exit (once per process; a no-op outside a launched job, and
    in a rank :mod:`dfcore.mpi.rank_main` started, which installed the note before the program ran)."""
    install_note(current_rank)


class Departure:
    """A rank that left while others ran on: ``rank``, ``task``, ``left_at`` (``time.time()``), ``running``
    (the ranks that had not left), ``grace_s``."""

    def __init__(self, rank: int, task: str, left_at: float, running: list[int], grace_s: float):
        self.rank, self.task, self.left_at, self.running, self.grace_s = rank, task, left_at, running, grace_s

    def describe(self) -> str:
        """One paragraph for the user: who left, who was still running, and what to do."""
        return (f"rank {self.rank} ({self.task}) ended its program while ranks {self.running} were still running "
                f"{self.grace_s:g} s later. A rank that leaves an MPI job early leaves the others waiting for it "
                "forever, so the job was ended. End every rank together (e.g. with a final comm.Barrier()), raise "
                "an exception to fail the job, or, if the other ranks only need longer, give a longer "
                "--exit-grace (run_job: exit_grace_s).")


class DepartureWatch:
    """Launcher side: which rank, if any, left ``grace_s`` or more seconds ago while others still run.

    Args:
        directory: the job's ``DFCORE_JOB_DIR``.
        layout: the job's :class:`~dfcore.mpi.world.Layout`.
        grace_s: seconds (> 0; ``math.inf`` never reports).
    """

    def __init__(self, directory: str, layout: Layout, grace_s: float = DEFAULT_GRACE_S):
        self.directory, self.layout, self.grace_s = directory, layout, grace_s

    def overdue(self, now: float | None = None) -> Departure | None:
        """The :class:`Departure` to report now, or None."""
        left = {}
        for rank in range(self.layout.size):
            try:
                with open(departure_path(self.directory, rank)) as f:
                    left[rank] = json.load(f)
            except (OSError, ValueError):
                continue
        first = min(((record["left_at"], rank) for rank, record in left.items() if not record["served"]),
                    default=None)
        now = time.time() if now is None else now
        if first is None or len(left) == self.layout.size or now - first[0] < self.grace_s:
            return None
        running = [rank for rank in range(self.layout.size) if rank not in left]
        return Departure(first[1], self.layout.task_name(first[1]), first[0], running, self.grace_s)
