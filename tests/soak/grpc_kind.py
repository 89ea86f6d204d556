"""The soak's gRPC kind: between-graph parameter-server training over gRPC (:mod:`grpc_job`), tasks killed.

The job is three plain processes (:class:`dfcore.task_processes.TaskJob`, as ``python -m dfcore.launch --grpc``
starts them), not MPI ranks: it ends when the chief ends or any task fails, and the soak's
:class:`chaos.Injector` SIGKILLs or SIGTERMs the ps or a worker from outside. Its checks are
:class:`jobs.PSJob`'s (no update lost or applied twice: ``global_step == applied_updates`` in every
checkpoint, a completed job adds exactly its updates), with one checkpoint per completed job, plus one of
its own: a worker never fails with an error about initialization (``FailedPreconditionError``), whichever
task died.
"""

import os
import sys
import time

from jobs import PSJob

import dfcore as tf
from dfcore.mpi.world import Layout
from dfcore.task_processes import TaskJob

HERE = os.path.dirname(os.path.abspath(__file__))
_POLL_S = 0.05


class GrpcJobError(tf.errors.UnavailableError):
    """A gRPC job that ended with a failed task (its message says which, and how)."""


class GrpcPSJob(PSJob):
    """1 ps + 2 workers over gRPC; ``rounds * round_steps`` steps per worker, one checkpoint at the end."""

    name = "grpc_ps"
    program = os.path.join(HERE, "grpc_job.py")
    faults = ("sigkill", "sigterm")

    def __init__(self, rounds: int = 5, round_steps: int = 10):
        super().__init__(rounds, round_steps)
        self.checkpoint_every = self.steps_per_job

    def run(self, job_dir: str, timeout_s: float) -> None:
        """Run one job; its tasks' output goes to ``job_dir/output.log``.

        Raises:
            GrpcJobError: a task failed (killed, or its step raised) before the chief ended.
            DeadlineExceededError: the job ran past ``timeout_s``.
        """
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, *sys.path]))
        with open(os.path.join(job_dir, "output.log"), "w") as log:
            job = TaskJob(Layout({"ps": 1, "worker": 2}), [self.program, job_dir], env, log, log)
            try:
                deadline = time.monotonic() + timeout_s
                while (status := job.poll()) is None:
                    if time.monotonic() > deadline:
                        raise tf.errors.DeadlineExceededError(None, None, f"grpc job ran past {timeout_s:g} s")
                    time.sleep(_POLL_S)
            finally:
                job.kill()
        if status != 0:
            raise GrpcJobError(None, None, f"{job.describe_end()}; the other tasks were stopped")

    def job_problems(self, job_dir: str) -> list:
        """No worker failed with an error about initialization (the ps died, or a task was killed)."""
        problems = []
        for name in sorted(os.listdir(job_dir)):
            if name.startswith("error."):
                with open(os.path.join(job_dir, name)) as f:
                    kind = f.read()
                if kind == "FailedPreconditionError":
                    problems.append(f"worker rank {name[6:]} failed with {kind} (an initialization error), not "
                                    "UnavailableError")
        return problems
