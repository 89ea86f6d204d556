"""Finding the processes a test started, from ``/proc`` (for the MPI and gRPC launcher tests)."""

import os


def alive(pid):
    """Whether ``pid`` is a running process (a zombie is dead: it only waits to be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def processes_with(marker):
    """Pids of the running processes whose command line contains ``marker`` (``pgrep -f``, from ``/proc``)."""
    pids = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if marker.encode() in f.read() and alive(int(name)):
                    pids.append(int(name))
        except OSError:
            pass
    return pids
