"""The launcher's command line (``python -m dfcore.launch``): parse it, check the job's layout and deadline,
and turn it into ``mpiexec``'s command and environment; ``run_job`` checks its arguments with the same rules.

Source: dfcore's own launcher (:mod:`dfcore.launch` runs and supervises the job; this module only builds it),
with ``mpiexec``'s command from :func:`dfcore.mpi.env.mpiexec_command`. It lives in mpi/ so that
:func:`dfcore.mpi.job.run_job` builds the same command without importing the launcher above it.
"""

import argparse

from .departures import DEFAULT_GRACE_S
from .env import CLUSTER_ENV, job_environment, mpiexec_command
from .world import Layout

#: ``--help``'s first line.
DESCRIPTION = "Start a dfcore program as a job: one OS process per task of a cluster, as MPI ranks or over gRPC."
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
    parser = argparse.ArgumentParser(prog="python -m dfcore.launch", description=DESCRIPTION,
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
