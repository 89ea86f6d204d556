"""Start a dfcore program as a job: one OS process per task of a cluster, as MPI ranks or over gRPC.

Usage::

    python -m dfcore.launch --ps 1 --workers 3 train.py --steps 100
    python -m dfcore.launch --grpc --ps 1 --workers 2 train.py               # plain processes, TF_CONFIG
    python -m dfcore.launch --grpc --tf-flags --ps 1 --workers 2 mnist_replica.py   # + --ps_hosts ... flags
    python -m dfcore.launch -n 4 -m dfcore.bench.all_reduce --sizes 1M,16M
    python -m dfcore.launch --print-command --ps 1 --workers 3 train.py   # show, do not run

It wraps ``mpiexec -n <ranks> python dfcore/mpi/rank_main.py <program>`` (which runs the program as
``python -m mpi4py`` does, so an uncaught exception in one rank aborts the whole job instead of
leaving the others waiting, and notes when the program ends), puts the job layout in
``DFCORE_CLUSTER`` (ranks are assigned job by job: ps tasks first, then workers; see
:mod:`dfcore.mpi.world`), and sets the environment Open MPI needs here (run as root,
oversubscription, loopback-only traffic, the venv's ``bin`` on ``PATH``: see
:mod:`dfcore.mpi.env`). Inside, ``dfcore.mpi.MPIClusterResolver()`` gives the
``ClusterSpec`` and this rank's job and task.

With ``--grpc`` each task is a plain ``python`` process on a free loopback port that finds the others by
address: its ``TF_CONFIG`` (read by ``tf.distribute.cluster_resolver.TFConfigClusterResolver``) and, with
``--tf-flags``, the "Distributed TensorFlow" how-to's ``--ps_hosts/--worker_hosts/--job_name/--task_index``
flags. Every output line is prefixed with its task (``[worker:0] ...``); the job ends when the chief
(worker 0) ends or any task fails (:mod:`dfcore.task_processes`).

On a Slurm cluster, skip the launcher and run the same program under ``srun`` with the layout
set by hand: ``DFCORE_CLUSTER='{"ps": 1, "worker": 3}' srun -n 4 python -m mpi4py train.py``.

The job lives as long as the launcher: killed (even with SIGKILL), it takes every rank with it
(:func:`dfcore.mpi.processes.start_job`). A rank whose program ends while the others still run
``--exit-grace`` seconds later has left early and ends the job (:mod:`dfcore.mpi.departures`). There
is no deadline unless ``--timeout`` gives one; a job that runs on prints a heartbeat line on stderr
every ``--heartbeat`` seconds (``dfcore.launch: job running for 120 s, 4/4 ranks alive; --timeout S to
bound it``). Exit statuses: in ``--help`` (:data:`dfcore.mpi.job_command._EPILOG`); the same for both transports.
"""

import math
import os
import signal
import sys
import tempfile
import time

from .distribute.cluster_resolver.tfconfig import TF_CONFIG_ENV
from .mpi.departures import JOB_DIR_ENV, DepartureWatch
from .mpi.env import CLUSTER_ENV, private_session_directory
from .mpi.job_command import command_and_env
from .mpi.processes import MPIJob, start_job
from .mpi.world import Layout
from .task_processes import TaskJob, cluster_addresses, free_loopback_ports, task_environment, tf_flags

#: Seconds between the launcher's looks at its job (exit, departures, deadline, heartbeat).
POLL_S = 0.1
def main(argv=None):
    command, env, args = command_and_env(sys.argv[1:] if argv is None else argv)
    layout = Layout.from_json(env[CLUSTER_ENV])
    if args.print_command and args.grpc:
        cluster = cluster_addresses(layout, free_loopback_ports(layout.size))
        for rank in range(layout.size):
            job_name, index = layout.task_of_rank(rank)
            config = task_environment({}, cluster, job_name, index, rank)[TF_CONFIG_ENV]
            flags = tf_flags(cluster, job_name, index) if args.tf_flags else []
            print(f"{TF_CONFIG_ENV}='{config}' " + " ".join(["python", *command, *flags]))
        return 0
    if args.print_command:
        print(f"{CLUSTER_ENV}='{env[CLUSTER_ENV]}' " + " ".join(command))
        return 0
    with tempfile.TemporaryDirectory(prefix="dfcore-launch-") as job_dir:
        signal.signal(signal.SIGTERM, _raise_interrupt)  # `kill` of the launcher ends the whole job too
        job: TaskJob | MPIJob
        if args.grpc:
            job = TaskJob(layout, command, dict(os.environ), sys.stdout, sys.stderr, with_tf_flags=args.tf_flags)
        else:
            env[JOB_DIR_ENV] = job_dir
            private_session_directory(env, job_dir)
            job = MPIJob(start_job(command, env=env), DepartureWatch(job_dir, layout, args.exit_grace))
        try:
            return_code = supervise(job, args, layout.size)
        except KeyboardInterrupt:
            return_code = 130
        job.kill()
    return return_code


def supervise(job, args, size):
    """Wait for the job: its exit status, or 124 (``--timeout``) / 1 (a rank left early) with the job still
    running; prints the heartbeat and the reason on stderr."""
    start = time.monotonic()
    deadline = math.inf if args.timeout is None else start + args.timeout
    heartbeat_s = args.heartbeat or math.inf
    next_beat = start + heartbeat_s
    unit = "tasks" if args.grpc else "ranks"
    while (status := job.poll()) is None:
        now = time.monotonic()
        if now >= deadline:
            print(f"dfcore.launch: the job ran past --timeout {args.timeout} s; killing it", file=sys.stderr)
            return 124
        departure = job.overdue()
        if departure is not None:
            print(f"dfcore.launch: {departure.describe()}", file=sys.stderr)
            return 1
        if now >= next_beat:
            bound = "--timeout S to bound it" if args.timeout is None else f"killed at --timeout {args.timeout:g} s"
            print(f"dfcore.launch: job running for {now - start:.0f} s, {job.alive()}/{size} "
                  f"{unit} alive; {bound}", file=sys.stderr, flush=True)
            next_beat += heartbeat_s
        time.sleep(min(POLL_S, max(0.0, deadline - now)))
    if args.grpc and status != 0:
        print(f"dfcore.launch: {job.describe_end()}; the other tasks were stopped", file=sys.stderr)
    return status


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
