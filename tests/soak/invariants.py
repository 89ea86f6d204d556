"""The soak's checks shared by both kinds of job: restores, checkpoints, leftovers and memory.

Each check returns a list of problems (strings naming what broke), empty when all is well, so the
driver counts violations the same way for every check and a unit test can feed them bad data
(``tests/unit/test_soak_invariants.py``).
"""

import os
import statistics
import threading
import time

#: A memory series is flat when its last quarter's median is within this of its second quarter's.
RSS_SLACK_BYTES = 20 * 2**20
_LEFTOVER_WAIT_S = 10.0


def restore_problems(restored, expected_step: int, previous_step: int) -> list:
    """A job restored what the driver saw as the latest checkpoint, and the step did not go backwards.

    ``restored``: the job's ``restored.json`` (``{"step": ...}``) or None when the job died first;
    ``expected_step``: the step of the newest checkpoint before the job started (0: none);
    ``previous_step``: the step the previous job of this kind restored.
    """
    if restored is None:
        return []
    step = int(restored["step"])
    problems = []
    if step != expected_step:
        problems.append(f"the job restored step {step}, but the latest checkpoint holds step {expected_step}")
    if step < previous_step:
        problems.append(f"global_step went backwards: restored {step} after an earlier job restored {previous_step}")
    return problems


def completed_problems(latest, expected_step: int) -> list:
    """A job that completed saved its last checkpoint at ``expected_step`` (restored step + the job's
    updates): had an update been lost or applied twice, the counters would say otherwise."""
    step = checkpoint_step(latest) if latest else 0
    if step != expected_step:
        return [(f"the completed job's last checkpoint is at step {step}, not {expected_step} "
                 "(an update lost or applied twice)")]
    return []


def checkpoint_step(path: str) -> int:
    """The global step in a checkpoint prefix's name (``.../model.ckpt-40`` -> 40)."""
    return int(path.rsplit("-", 1)[1])


def unchecked_checkpoints(state, checked: set) -> list:
    """The kept checkpoint paths of ``state`` (a ``CheckpointState`` or None) not yet in ``checked``."""
    if state is None:
        return []
    return [path for path in state.all_model_checkpoint_paths if path not in checked]


def checkpoint_restore_problems(path: str, check) -> list:
    """Restore ``path`` with ``check(path, step)`` (the job kind's checkpoint check); an exception is a problem."""
    try:
        return check(path, checkpoint_step(path))
    except Exception as error:  # any failure to restore is what this check reports
        return [f"{path} does not restore: {type(error).__name__}: {error}"]


def command_line(pid: int) -> bytes:
    """The raw command line of process ``pid`` (empty once it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def processes_mentioning(text: str) -> list:
    """Pids of live processes whose command line contains ``text`` (a job's directory)."""
    needle = text.encode()
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and needle in command_line(int(name))]


def leftover_problems(job_dir: str, wait_s: float = _LEFTOVER_WAIT_S) -> list:
    """No process of the job (its ranks name ``job_dir`` on their command line) outlives it by ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while (left := processes_mentioning(job_dir)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [f"processes {left} of job {job_dir} still run {wait_s:g} s after it ended"] if left else []


def thread_problems(baseline: int, wait_s: float = _LEFTOVER_WAIT_S) -> list:
    """The driver runs no more threads than ``baseline`` (its count before the first job)."""
    deadline = time.monotonic() + wait_s
    while threading.active_count() > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
    extra = [t.name for t in threading.enumerate()][baseline:]
    return [f"threads left behind in the driver: {extra}"] if threading.active_count() > baseline else []


def rss_bytes() -> int:
    """This process's resident set size in bytes (``VmRSS`` of ``/proc/self/status``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def memory_problems(samples: list, slack_bytes: int = RSS_SLACK_BYTES) -> list:
    """RSS ``samples`` (bytes, one per job) stay flat: the last quarter's median exceeds the second
    quarter's by at most ``slack_bytes`` (needs 8 samples; fewer say nothing).

    The first quarter is the warm-up, not compared: a fresh process fills its allocator's arenas and imports
    what it loads lazily (the tf.data rounds went from 60 to 94 MiB in their first 100 rounds, then from 94 to
    about 105 MiB over the next 900), and a 2-minute soak's first quarter is mostly that climb."""
    if len(samples) < 8:
        return []
    quarter = len(samples) // 4
    settled, last = statistics.median(samples[quarter:2 * quarter]), statistics.median(samples[-quarter:])
    if last - settled > slack_bytes:
        return [(f"memory grew: the driver's RSS went from {settled / 2**20:.0f} MiB (median of jobs "
                 f"{quarter + 1}-{2 * quarter}, after the warm-up) to {last / 2**20:.0f} MiB (last {quarter})")]
    return []
