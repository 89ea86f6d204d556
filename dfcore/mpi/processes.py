"""Ending an ``mpiexec`` job for good: every process it started, not only its process group.

Source: what the launchers do with the processes they start, seen on this project's machine:
Open MPI 5's ``prterun`` puts each rank in a process group of its own (in ``prterun``'s
session), so a SIGKILL to the launcher's process group leaves the ranks running
(:func:`kill_job` kills the whole session); MPICH's Hydra starts its proxy and each rank in a
session of their own, so they are found as the launcher's descendants while the job runs
(:func:`find_descendants`) and killed by pid (:func:`kill_found`). A job started by
:func:`start_job` dies with the thread that started it (Linux's ``prctl(PR_SET_PDEATHSIG)``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .env import RANK_VARIABLES

if TYPE_CHECKING:
    from .departures import Departure, DepartureWatch

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def start_job(command: Sequence[str], **popen_kwargs: Any) -> subprocess.Popen:
    """Start ``mpiexec`` (``command``) in a session of its own; on Linux it dies with the calling thread.

    When the thread that called this exits (the launcher or the ``run_job`` caller is killed, even with
    SIGKILL), the kernel sends ``mpiexec`` SIGTERM (``PR_SET_PDEATHSIG``, which survives ``exec``), and
    ``mpiexec`` ends its ranks (Open MPI's ``prterun`` and MPICH's Hydra both do on SIGTERM; SIGKILL would
    leave them orphaned). Elsewhere the job outlives a killed launcher. Returns the ``subprocess.Popen``;
    ``popen_kwargs`` go to it (``env``, ``stdout``, ...).
    """
    # preexec_fn runs between fork and exec; it only calls prctl and getppid (no lock, no import).
    return subprocess.Popen(command, start_new_session=True, preexec_fn=_terminated_with_parent(),  # see above
                            **popen_kwargs)


def _terminated_with_parent():
    """A ``preexec_fn`` that asks for SIGTERM when the parent thread dies, or None where Linux's prctl is missing."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec():
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: nobody will send the signal
            os._exit(1)

    return preexec


def kill_job(process: subprocess.Popen, known: dict[int, tuple[int | None, str]] | None = None,
             grace_s: float = 2.0) -> None:
    """SIGKILL ``process`` (started with ``start_new_session=True``), every process of its session and
    every process descended from it.

    Killing ``mpiexec``'s process group is not enough: Open MPI's ``prterun`` puts each rank in
    a process group of its own (same session), and MPICH's Hydra starts its proxy and ranks in
    sessions of their own. The descendants are looked up before anything is killed (a killed
    parent's children lose their link to it); ``known`` (``{pid: (rank, start time)}``, as
    :func:`find_descendants` fills it while the job runs) adds those found earlier, so ranks
    orphaned before the kill are killed too. Returns once ``process`` is reaped and none of these
    is left running (at most ``grace_s`` later: SIGKILL cannot be caught, but takes a few
    milliseconds to land).
    """
    descendants = dict(known or {})
    find_descendants(process.pid, descendants)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _kill_until_gone(lambda: session_members(process.pid), grace_s)
    kill_found(descendants, grace_s)
    process.wait()


def _kill_until_gone(alive, grace_s):
    """SIGKILL the pids ``alive()`` lists until it lists none, or ``grace_s`` has passed."""
    give_up = time.monotonic() + grace_s
    while (pids := alive()) and time.monotonic() < give_up:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)


def session_members(session: int) -> list[int]:
    """Pids of the live (not zombie) processes whose session id is ``session`` (``/proc``, else ``ps``)."""
    if not os.path.isdir("/proc"):
        listing = subprocess.run(["ps", "-A", "-o", "pid=,sess=,stat="], capture_output=True, text=True, timeout=10)
        rows = [line.split() for line in listing.stdout.splitlines()]
        return [int(pid) for pid, sess, stat in rows if int(sess) == session and not stat.startswith("Z")]
    return [int(name) for name in filter(str.isdigit, os.listdir("/proc"))
            if (fields := proc_stat(name)) is not None and fields[0] != "Z" and int(fields[3]) == session
            and int(name) != os.getpid()]


def proc_stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, ppid, ...), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def find_descendants(leader: int, found: dict[int, tuple[int | None, str]]) -> None:
    """Add to ``found`` ``{pid: (rank, start time)}`` of the processes descended from the ``mpiexec``
    ``leader``: MPICH's Hydra starts its proxy, and the proxy each rank, in a session of its own.
    The rank is the one its launcher gave it (:func:`launched_rank`; None for a proxy or ``prterun``).
    Read from ``/proc`` (elsewhere: nothing)."""
    if not os.path.isdir("/proc"):
        return
    parents = {int(name): (int(fields[1]), fields[19]) for name in filter(str.isdigit, os.listdir("/proc"))
               if (fields := proc_stat(name)) is not None and fields[0] != "Z"}
    tree, grown = set(), {leader}
    while grown:
        tree |= grown
        grown = {pid for pid, (ppid, _) in parents.items() if ppid in grown} - tree
    for pid in tree - {leader}:
        if found.get(pid, (None,))[0] is None:  # a forked rank gets its PMI_RANK when it execs
            found[pid] = (launched_rank(pid), parents[pid][1])


def launched_rank(pid: int) -> int | None:
    """The rank in ``pid``'s environment (:data:`~dfcore.mpi.env.RANK_VARIABLES`: Hydra's ``PMI_RANK``, Open
    MPI's ``OMPI_COMM_WORLD_RANK``), or None."""
    prefixes = tuple(f"{name}=".encode() for name in RANK_VARIABLES)
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return next((int(v.split(b"=", 1)[1]) for v in f.read().split(b"\0") if v.startswith(prefixes)), None)
    except (OSError, ValueError):
        return None


def live_ranks(leader: int) -> set[int]:
    """The ranks of the live processes descended from the ``mpiexec`` ``leader`` (from ``/proc``; else empty)."""
    found: dict[int, tuple[int | None, str]] = {}
    find_descendants(leader, found)
    return {rank for rank, _ in found.values() if rank is not None}


def kill_found(pids: dict[int, tuple[int | None, str]], grace_s: float = 2.0) -> None:
    """SIGKILL the live processes of ``pids`` that are still those found (same start time), and
    return once none is left running (at most ``grace_s`` later)."""
    _kill_until_gone(lambda: [pid for pid, (_, started) in pids.items()
                              if (fields := proc_stat(pid)) is not None and fields[0] != "Z" and fields[19] == started],
                     grace_s)


class MPIJob:
    """An ``mpiexec`` job as the launchers watch it (:func:`dfcore.launch.supervise`, ``run_job``): the
    same methods as :class:`dfcore.task_processes.TaskJob`.

    Args:
        process: ``mpiexec``'s ``Popen`` (from :func:`start_job`).
        departures: the job's :class:`~dfcore.mpi.departures.DepartureWatch`.
        known: ``{pid: (rank, start time)}`` to fill while the job runs (MPICH: :func:`find_descendants`), or None.
    """

    def __init__(self, process: subprocess.Popen, departures: DepartureWatch,
                 known: dict[int, tuple[int | None, str]] | None = None):
        self.process, self.departures, self.known = process, departures, known

    def poll(self) -> int | None:
        """``mpiexec``'s exit status, or None while it runs."""
        return self.process.poll()

    def overdue(self) -> Departure | None:
        """Why the job must end now (a rank left early: :mod:`dfcore.mpi.departures`), or None."""
        return self.departures.overdue()

    def alive(self) -> int:
        """The number of ranks still running (from ``/proc``)."""
        return len(live_ranks(self.process.pid))

    def kill(self) -> None:
        """End every process of the job that still runs, orphans included (:func:`kill_job`)."""
        kill_job(self.process, self.known)
