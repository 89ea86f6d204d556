"""The files through which the soak driver and the ranks of one job talk: one directory per job.

The driver writes ``plan.json`` (what the job does and which fault it carries) before it starts the
job; the ranks write the rest. Every file is written whole (temp file, then ``os.replace``) or
appended one line at a time, so a rank killed at any moment leaves the previous version or the new
one, never half a line the driver would misread:

* ``pid.<rank>`` — the rank's process id, written first thing;
* ``progress.<rank>`` — the number of steps this rank has completed in this job;
* ``first_step.<rank>`` — ``time.time()`` when the rank completed its first step (after the restore);
* ``restored.json`` — what the job restored (written by the chief / rank 0 before its first step);
* ``fault_at`` — ``time.time()`` just before a rank injects a fault on itself (raise or SIGKILL);
* ``applied.<rank>`` — one line per applied update (the values the update step returned).
"""

import json
import os
import tempfile
import time

PLAN = "plan.json"
RESTORED = "restored.json"
FAULT_AT = "fault_at"


def write_atomic(path: str, text: str) -> None:
    """Replace ``path`` by ``text`` in one step (a reader sees the old file or the new one)."""
    directory = os.path.dirname(path) or "."
    fd, temp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def read_text(path: str):
    """The file's text, or None if it does not exist."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def write_json(path: str, value) -> None:
    write_atomic(path, json.dumps(value))


def read_json(path: str):
    text = read_text(path)
    return None if text is None else json.loads(text)


class RankFiles:
    """One rank's side of the protocol above."""

    def __init__(self, job_dir: str, rank: int):
        self.job_dir, self.rank = job_dir, rank
        self.plan = read_json(os.path.join(job_dir, PLAN))
        self._first_done = False
        self._applied = open(os.path.join(job_dir, f"applied.{rank}"), "a", buffering=1)
        write_atomic(os.path.join(job_dir, f"pid.{rank}"), str(os.getpid()))

    def fault_here(self, step: int, kinds) -> bool:
        """Whether the plan puts a fault of one of ``kinds`` on this rank at this (1-based) step."""
        plan = self.plan
        return plan["fault"] in kinds and plan["rank"] == self.rank and plan["step"] == step

    def step_done(self, step: int) -> None:
        """Record that local step ``step`` (1-based) completed."""
        if not self._first_done:
            write_atomic(os.path.join(self.job_dir, f"first_step.{self.rank}"), repr(time.time()))
            self._first_done = True
        write_atomic(os.path.join(self.job_dir, f"progress.{self.rank}"), str(step))

    def applied(self, *values) -> None:
        """Append one applied update (the values its step returned) to ``applied.<rank>``."""
        self._applied.write(" ".join(str(int(v)) for v in values) + "\n")

    def restored(self, **values) -> None:
        write_json(os.path.join(self.job_dir, RESTORED), values)


def note_fault(job_dir: str) -> None:
    """Record the moment a rank injects a fault on itself (time to detect starts here)."""
    write_atomic(os.path.join(job_dir, FAULT_AT), repr(time.time()))


def rank_values(job_dir: str, prefix: str) -> dict:
    """``{rank: text}`` of every ``<prefix>.<rank>`` file in ``job_dir``."""
    out = {}
    for name in os.listdir(job_dir):
        head, _, rank = name.partition(".")
        if head == prefix and rank.isdigit():
            out[int(rank)] = read_text(os.path.join(job_dir, name))
    return out


def applied_lines(job_dir: str) -> list:
    """Every ``applied.<rank>`` line of the job as a tuple of ints (a torn last line is dropped)."""
    rows = []
    for text in rank_values(job_dir, "applied").values():
        for line in text.splitlines(keepends=True):
            if line.endswith("\n"):
                rows.append(tuple(int(v) for v in line.split()))
    return rows
