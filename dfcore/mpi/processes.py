"""Ending an ``mpiexec`` job for good: every process it started, not only its process group.

Source: what Open MPI 5 (PRRTE) does with the processes it launches, seen on this project's
machine: ``prterun`` puts each rank in a process group of its own (in ``prterun``'s session),
so a SIGKILL to the launcher's process group leaves the ranks running.
"""

import os
import signal
import subprocess
import time


def kill_job(process, grace_s=2.0):
    """SIGKILL ``process`` (started with ``start_new_session=True``) and every process of its session.

    Killing ``mpiexec``'s process group is not enough: Open MPI's ``prterun`` puts each rank in
    a process group of its own (same session), and a rank outlives a killed ``prterun``.
    Returns once ``process`` is reaped and no other member of the session is left running (at
    most ``grace_s`` later: SIGKILL cannot be caught, but takes a few milliseconds to land).
    """
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    give_up = time.monotonic() + grace_s
    while (members := session_members(process.pid)) and time.monotonic() < give_up:
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
    process.wait()


def session_members(session):
    """Pids of the live (not zombie) processes whose session id is ``session`` (``/proc``, else ``ps``)."""
    if not os.path.isdir("/proc"):
        listing = subprocess.run(["ps", "-A", "-o", "pid=,sess=,stat="], capture_output=True, text=True, timeout=10)
        rows = [line.split() for line in listing.stdout.splitlines()]
        return [int(pid) for pid, sess, stat in rows if int(sess) == session and not stat.startswith("Z")]
    members = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) == session and int(name) != os.getpid():
            members.append(int(name))
    return members
