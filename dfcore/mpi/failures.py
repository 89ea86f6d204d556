"""What a failed MPI job's output says: which rank failed, how, and its traceback (:class:`MPIJobError`).

Source: the launchers' own reports, as seen on this project's machine — Open MPI 5's ``prterun``
(``--output tag`` lines, its ``MPI_ABORT was invoked on rank N``, ``exited on signal`` and
``exited with non-zero status ... Process name: [prterun-host-pid@1,N]`` boxes) and MPICH's Hydra
(``-prepend-rank`` lines, its ``Abort(...)`` line and ``BAD TERMINATION`` box).

Why :class:`MPIJobError` is an :class:`~dfcore.errors.UnknownError`: TF reports an
arbitrary Python exception raised inside a step (``py_func``) as ``UNKNOWN``; a job can
fail of anything (an exception of any type, a signal, ``sys.exit``), and neither
``ABORTED`` nor ``UNAVAILABLE`` fits (both tell the caller that retrying may succeed).
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import errors

if TYPE_CHECKING:
    from .job import RankReports
    from .world import Layout

#: A rank-tagged output line: (rank, text).
_TAG = {"openmpi": re.compile(r"^\[\d+,(\d+)\]<(?:stdout|stderr)>: ?(.*)$"), "mpich": re.compile(r"^\[(\d+)\] ?(.*)$")}
#: The launcher's report of ``MPI_Abort``: (rank,).
_ABORTED = {"openmpi": re.compile(r"MPI_ABORT was invoked on rank (\d+)"),
            "mpich": re.compile(r"^Abort\(\d+\) on node \d+ .*called MPI_Abort\(.*\) - process (\d+)", re.MULTILINE)}
#: The launcher's report of a rank killed by a signal: (rank — Hydra: a pid —, signal number).
_SIGNALED = {"openmpi": re.compile(r"process rank (\d+) with PID \d+ on node \S+ exited on\s+signal (\d+)"),
             "mpich": re.compile(r"PID (\d+) RUNNING AT .*?EXIT STRING: [^\n]*\(signal (\d+)\)", re.DOTALL)}
#: Open MPI's report of a rank that exited with a non-zero status outside MPI (``os._exit(1)``): (rank, status).
_EXITED = {"openmpi": re.compile(r"Process name: \[\S*?,(\d+)\]\s+Exit code:\s+(\d+)")}
_NAMED = {s.value for s in signal.Signals}
#: What Open MPI 5's launcher prints when it fails before starting any rank, for a reason of its own that a
#: second launch does not share (17 of 2,400 launches, 8 at a time, on this project's 2-core machine while jobs
#: shared /tmp, see :func:`~dfcore.mpi.env.private_session_directory`; also in other projects' CI:
#: lfortran/lfortran#8610). :func:`launcher_failed_to_start` looks for these.
_LAUNCHER_START_FAILURES = ("The PMIx server's listener thread failed to start",)


class MPIJobError(errors.UnknownError):
    """An MPI job ended with a non-zero status: a rank raised, was killed, or exited early.

    Attributes:
        rank, task: the failing rank and its task name (None when the output does not say).
        exit_status: ``mpiexec``'s exit status.
        traceback: the failing rank's Python traceback text ("" if it printed none).
        partial: :class:`~dfcore.mpi.job.RankReports` of what the ranks reported before the failure.
        stdout, stderr: the job's output (rank tags removed).
    """

    def __init__(self, message: str, rank: int | None = None, task: str | None = None, exit_status: int | None = None,
                 traceback: str = "", partial: RankReports | None = None, stdout: str = "",
                 stderr: str = ""):
        super().__init__(None, None, message)
        self.rank, self.task, self.exit_status, self.traceback = rank, task, exit_status, traceback
        self.partial, self.stdout, self.stderr = partial, stdout, stderr

    def __reduce__(self):
        return (type(self), (self.message, self.rank, self.task, self.exit_status, self.traceback,
                             self.partial, self.stdout, self.stderr))


def untag(text: str, flavor: str = "openmpi") -> tuple[str, dict[int, str]]:
    """``(text without rank tags, {rank: that rank's lines})`` of rank-tagged output (:data:`_TAG`)."""
    plain: list[str] = []
    by_rank: dict[int, list[str]] = {}
    tag = _TAG.get(flavor)
    for line in text.splitlines():
        match = tag and tag.match(line)
        if match:
            line = match.group(2)
            if flavor == "mpich":  # Hydra tags each chunk a rank writes, also one continuing a line
                line = line.replace(f"[{match.group(1)}] ", "")
            by_rank.setdefault(int(match.group(1)), []).append(line)
        plain.append(line)
    return "\n".join(plain) + ("\n" if plain else ""), {rank: "\n".join(lines) for rank, lines in by_rank.items()}


def last_traceback(text: str) -> str:
    """The last Python traceback in ``text``, without the frames of ``runpy`` and ``mpi4py`` ("" if none).

    It ends at the exception's message: before a blank line, Open MPI's ``----`` box, MPICH's
    ``Abort(1) on node ...`` line, or the end.
    """
    start = text.rfind("Traceback (most recent call last):")
    if start < 0:
        return ""
    header, *lines = text[start:].splitlines()
    kept, skipping, in_message = [header], False, False
    for line in lines:
        if not in_message and line.startswith("  File "):
            skipping = "<frozen runpy>" in line or f"{os.sep}mpi4py{os.sep}" in line
        elif not in_message and not line.startswith("    "):
            in_message, skipping = True, False
        if in_message and (not line.strip() or line.startswith("-----") or _ABORTED["mpich"].match(line)):
            break
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def job_error(job: str, layout: Layout, status: int | None, reports: RankReports, stdout: str, stderr: str,
              stderr_by_rank: Mapping[int, str], flavor: str = "openmpi") -> MPIJobError:
    """The :class:`MPIJobError` for the job ``job`` (its description, e.g. ``'train.py'``) that exited with
    ``status``, naming the failing rank (not with
    MPICH when a signal killed it: Hydra's report names the lowest rank that ended badly, often one that
    Hydra itself killed while ending the job)."""
    launcher = stderr + stdout  # Hydra prints its "BAD TERMINATION" box on stdout
    aborted = _ABORTED[flavor].search(launcher) if flavor in _ABORTED else None
    signaled = _SIGNALED[flavor].search(launcher) if flavor in _SIGNALED else None
    exited = _EXITED[flavor].search(launcher) if flavor in _EXITED else None
    tracebacks: dict[Any, str] = {rank: tb for rank, text in stderr_by_rank.items()
                                  if (tb := last_traceback(text))}
    rank, how = None, ""
    if aborted:
        rank = int(aborted.group(1))
    elif signaled:
        rank, number = int(signaled.group(1)) if flavor == "openmpi" else None, int(signaled.group(2))
        how = f" was killed by signal {number}" + (f" ({signal.Signals(number).name})" if number in _NAMED else "")
    elif exited:
        rank, how = int(exited.group(1)), f" exited with status {exited.group(2)} without ending MPI (e.g. os._exit)"
    elif tracebacks:
        rank = min(tracebacks)
    traceback = tracebacks.get(rank, "") if stderr_by_rank else last_traceback(stderr)
    if not how:
        raised = [line for line in traceback.splitlines()[1:] if not line.startswith(" ")]
        how = f" raised {raised[0]}" if raised else " failed"
    task = layout.task_name(rank) if rank is not None and rank < layout.size else None
    who = f"rank {rank} ({task})" if task else "a rank"
    message = f"MPI job {job} failed: {who}{how}; mpiexec exit status {status}."
    if traceback:
        message += f"\nTraceback of {who}:\n{traceback}"
    elif not task:
        message += "\nThe job's stderr ends with:\n" + "\n".join(stderr.splitlines()[-20:])
    return MPIJobError(message, rank, task, status, traceback, reports, stdout, stderr)


def launcher_failed_to_start(stderr: str, reports: Mapping[int, Any]) -> bool:
    """True when ``mpiexec`` failed before any rank ran: its ``stderr`` shows one of the launcher's own start-up
    failures (:data:`_LAUNCHER_START_FAILURES`) and no rank reported (``reports``: the ranks' report files, as
    :func:`~dfcore.mpi.report.read_reports` returns them). Such a job ran none of the program: launching it
    again is safe, and :func:`~dfcore.mpi.job.run_job` does."""
    return not reports and any(message in stderr for message in _LAUNCHER_START_FAILURES)
