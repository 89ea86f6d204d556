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
bound it``). Exit statuses: in ``--help`` (:data:`_EPILOG`); the same for both transports.
"""

import argparse
import math
import os
import signal
import sys
import tempfile
import time

from .distribute.cluster_resolver.tfconfig import TF_CONFIG_ENV
from .mpi.departures import DEFAULT_GRACE_S, JOB_DIR_ENV, DepartureWatch
from .mpi.env import CLUSTER_ENV, job_environment, mpiexec_command, private_session_directory
from .mpi.processes import MPIJob, start_job
from .mpi.world import Layout
from .task_processes import TaskJob, cluster_addresses, free_loopback_ports, task_environment, tf_flags

#: Seconds between the launcher's looks at its job (exit, departures, deadline, heartbeat).
POLL_S = 0.1
#: Default seconds between heartbeat lines.
DEFAULT_HEARTBEAT_S = 60.0
#: How the launcher's and ``run_job``'s arguments are spelt, for :func:`check_job_arguments`' errors.
CLI_NAMES = {"ps": "--ps", "workers": "--workers", "ranks": "-n", "timeout_s": "--timeout",
             "exit_grace_s": "--exit-grace"}
API_NAMES = {name: name for name in CLI_NAMES}
#: The end of ``--help``: the job's lifetime and the launcher's exit statuses.
_EPILOG = ("The job lives as long as the launcher: killing it (even with SIGKILL) ends every rank. A rank whose "
           "program ends while other ranks still run --exit-grace seconds later has left early: the job is ended "
           "and the rank named. With --grpc the job ends when the chief (worker 0) ends or any task fails. Exit "
           "status: the job's (non-zero when a rank failed; with --grpc the chief's or the failed task's, 128+N "
           "for a task killed by signal N), 1 when a rank left early, 124 past --timeout, 130 when interrupted "
           "(Ctrl-C, SIGTERM), 2 for bad arguments.")


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m dfcore.launch", description=__doc__.splitlines()[0],
                                     usage="python -m dfcore.launch [--ps N --workers M | -n N] "
                                           "(script.py | -m module) [args ...]",
                                     epilog=_EPILOG)
    parser.add_argument("--ps", type=int, default=0, metavar="N", help="parameter-server tasks (job 'ps', first ranks)")
    parser.add_argument("--workers", type=int, default=None, metavar="M", help="worker tasks (job 'worker')")
    parser.add_argument("-n", "--np", dest="ranks", type=int, default=None, metavar="N",
                        help="ranks, all in job 'worker' (the same as --workers N)")
    parser.add_argument("--timeout", type=float, default=None, metavar="S",
                        help="seconds (> 0) before the whole job is killed (exit 124); default: no deadline, "
                             "with a heartbeat line on stderr every --heartbeat seconds")
    parser.add_argument("--heartbeat", type=float, default=DEFAULT_HEARTBEAT_S, metavar="S",
                        help=f"seconds between 'job running for N s, R/R ranks alive' lines on stderr "
                             f"(default {DEFAULT_HEARTBEAT_S:g}; 0: none)")
    parser.add_argument("--exit-grace", type=float, default=DEFAULT_GRACE_S, metavar="S",
                        help=f"seconds (> 0) the job may run on after a rank's program ended before that rank "
                             f"counts as having left early and the job is ended (default {DEFAULT_GRACE_S:g}; "
                             "inf: never)")
    parser.add_argument("--grpc", action="store_true",
                        help="start each task as a plain python process on a free loopback port, with its TF_CONFIG "
                             "(tasks talk over gRPC: tf.train.Server(..., protocol='grpc')); no MPI")
    parser.add_argument("--tf-flags", action="store_true",
                        help="with --grpc: also pass each task --ps_hosts=... --worker_hosts=... --job_name=... "
                             "--task_index=... (the 'Distributed TensorFlow' how-to's flags)")
    parser.add_argument("--no-oversubscribe", action="store_true", help="refuse more ranks than cores")
    parser.add_argument("--any-interface", action="store_true",
                        help="let MPI use every network interface (default: loopback only)")
    parser.add_argument("--print-command", action="store_true",
                        help="print the mpiexec command (with --grpc: each task's command and TF_CONFIG, on ports "
                             "free now) and exit")
    parser.add_argument("program", nargs="*", help="script.py [args ...], or -m module [args ...]")
    return parser


def split_argv(argv):
    """``(launcher options, program)``: the program starts at ``-m`` or at the first word that is
    not an option or an option's value (``--ps 1 --workers 3 train.py --steps 5``)."""
    takes_value = {"--ps", "--workers", "-n", "--np", "--timeout", "--heartbeat", "--exit-grace"}  # not --grpc
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "-m" or word == "--":
            return argv[:i], argv[i + 1:] if word == "--" else argv[i:]
        if not word.startswith("-"):
            return argv[:i], argv[i:]
        i += 2 if word in takes_value else 1
    return argv, []


def check_job_arguments(ps=0, workers=None, ranks=None, timeout_s=None, exit_grace_s=DEFAULT_GRACE_S,
                        names=API_NAMES):
    """Raise ValueError, naming the argument (as ``names`` spells it) and its allowed range, for a job layout
    or deadline that makes no sense: ``ps`` < 0, ``workers`` < 1, ``ranks`` < ``ps`` + 1, ``ranks`` not
    ``ps`` + ``workers``, a ``timeout_s`` or ``exit_grace_s`` that is not > 0 (``timeout_s`` None: no
    deadline). Shared by ``python -m dfcore.launch`` (``names=CLI_NAMES``) and ``run_job``."""
    n = names
    if ps < 0:
        raise ValueError(f"{n['ps']} must be >= 0 (parameter-server tasks), got {ps}")
    if workers is not None and workers < 1:
        raise ValueError(f"{n['workers']} must be >= 1 (a job needs at least one worker task), got {workers}")
    if ranks is not None and ranks < ps + 1:
        raise ValueError(f"{n['ranks']} must be >= {ps + 1} (ranks: {n['ps']} {ps} plus at least one worker), "
                         f"got {ranks}")
    if ranks is not None and workers is not None and ranks != workers + ps:
        raise ValueError(f"{n['ranks']} {ranks} disagrees with {n['ps']} {ps} {n['workers']} {workers}")
    for name, seconds in (("timeout_s", timeout_s), ("exit_grace_s", exit_grace_s)):
        if seconds is not None and not seconds > 0:
            raise ValueError(f"{n[name]} must be > 0 seconds, got {seconds}")


def layout_from_args(args):
    """The :class:`~dfcore.mpi.world.Layout` of the parsed arguments (raises ValueError when inconsistent)."""
    check_job_arguments(args.ps, args.workers, args.ranks, args.timeout, args.exit_grace, names=CLI_NAMES)
    workers = args.workers if args.workers is not None else (args.ranks or args.ps + 1) - args.ps
    jobs = {}
    if args.ps:
        jobs["ps"] = args.ps
    jobs["worker"] = workers
    return Layout(jobs)


def command_and_env(argv):
    """``(command list, environment, parsed launcher options)`` for the launcher's ``argv`` (everything
    after ``dfcore.launch``). With ``--grpc``: ``(the program's argv after python, {DFCORE_CLUSTER: the
    layout}, options)`` — the tasks get the launcher's environment and their own ``TF_CONFIG``
    (:class:`~dfcore.task_processes.TaskJob`).

    Raises:
        SystemExit: bad arguments (argparse's usage message).
        FileNotFoundError: no ``mpiexec``.
    """
    parser = build_parser()
    options, program = split_argv(list(argv))
    args = parser.parse_args(options)
    if not program or program == ["-m"]:
        parser.error("give a script to run, or -m module")
    try:
        layout = layout_from_args(args)
    except ValueError as error:
        parser.error(str(error))
    if args.heartbeat < 0:
        parser.error(f"--heartbeat must be >= 0 seconds (0: no heartbeat), got {args.heartbeat}")
    if args.tf_flags and not args.grpc:
        parser.error("--tf-flags needs --grpc (MPI ranks get their task from MPI, not from flags)")
    if args.grpc:
        return program, {CLUSTER_ENV: layout.to_json()}, args
    env = job_environment(loopback=not args.any_interface)
    env[CLUSTER_ENV] = layout.to_json()
    command = mpiexec_command(layout.size, program, oversubscribe=not args.no_oversubscribe,
                              loopback=not args.any_interface)
    return command, env, args


def main(argv=None):
    command, env, args = command_and_env(sys.argv[1:] if argv is None else argv)
    layout = Layout.from_json(env[CLUSTER_ENV])
    if args.print_command and args.grpc:
        cluster = cluster_addresses(layout, free_loopback_ports(layout.size))
        for rank in range(layout.size):
            job, index = layout.task_of_rank(rank)
            config = task_environment({}, cluster, job, index, rank)[TF_CONFIG_ENV]
            flags = tf_flags(cluster, job, index) if args.tf_flags else []
            print(f"{TF_CONFIG_ENV}='{config}' " + " ".join(["python", *command, *flags]))
        return 0
    if args.print_command:
        print(f"{CLUSTER_ENV}='{env[CLUSTER_ENV]}' " + " ".join(command))
        return 0
    with tempfile.TemporaryDirectory(prefix="dfcore-launch-") as job_dir:
        signal.signal(signal.SIGTERM, _raise_interrupt)  # `kill` of the launcher ends the whole job too
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
