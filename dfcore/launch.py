"""Start a dfcore program as an MPI job: one OS process (rank) per task of a cluster.

Usage::

    python -m dfcore.launch --ps 1 --workers 3 train.py --steps 100
    python -m dfcore.launch -n 4 -m dfcore.bench.all_reduce --sizes 1M,16M
    python -m dfcore.launch --print-command --ps 1 --workers 3 train.py   # show, do not run

It wraps ``mpiexec -n <ranks> python -m mpi4py <program>`` (so an uncaught exception in one
rank aborts the whole job instead of leaving the others waiting), puts the job layout in
``DFCORE_CLUSTER`` (ranks are assigned job by job: ps tasks first, then workers; see
:mod:`dfcore.mpi.world`), and sets the environment Open MPI needs here (run as root,
oversubscription, loopback-only traffic, the venv's ``bin`` on ``PATH``: see
:mod:`dfcore.mpi.env`). Inside, ``dfcore.mpi.MPIClusterResolver()`` gives the
``ClusterSpec`` and this rank's job and task.

On a Slurm cluster, skip the launcher and run the same program under ``srun`` with the layout
set by hand: ``DFCORE_CLUSTER='{"ps": 1, "worker": 3}' srun -n 4 python -m mpi4py train.py``.

Exit status: the job's (non-zero when a rank failed), 124 when ``--timeout`` passed.
"""

import argparse
import signal
import subprocess
import sys

from .mpi.env import CLUSTER_ENV, job_environment, mpiexec_command
from .mpi.processes import kill_job
from .mpi.world import Layout


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m dfcore.launch", description=__doc__.splitlines()[0],
                                     usage="python -m dfcore.launch [--ps N --workers M | -n N] "
                                           "(script.py | -m module) [args ...]")
    parser.add_argument("--ps", type=int, default=0, help="parameter-server tasks (job 'ps', first ranks)")
    parser.add_argument("--workers", type=int, default=None, help="worker tasks (job 'worker')")
    parser.add_argument("-n", "--np", dest="ranks", type=int, default=None,
                        help="ranks, all in job 'worker' (the same as --workers N)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds before the whole job is killed")
    parser.add_argument("--no-oversubscribe", action="store_true", help="refuse more ranks than cores")
    parser.add_argument("--any-interface", action="store_true",
                        help="let MPI use every network interface (default: loopback only)")
    parser.add_argument("--print-command", action="store_true", help="print the mpiexec command and exit")
    parser.add_argument("program", nargs="*", help="script.py [args ...], or -m module [args ...]")
    return parser


def split_argv(argv):
    """``(launcher options, program)``: the program starts at ``-m`` or at the first word that is
    not an option or an option's value (``--ps 1 --workers 3 train.py --steps 5``)."""
    takes_value = {"--ps", "--workers", "-n", "--np", "--timeout"}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "-m" or word == "--":
            return argv[:i], argv[i + 1:] if word == "--" else argv[i:]
        if not word.startswith("-"):
            return argv[:i], argv[i:]
        i += 2 if word in takes_value else 1
    return argv, []


def layout_from_args(args):
    """The :class:`~dfcore.mpi.world.Layout` of the parsed arguments (raises ValueError when inconsistent)."""
    if args.ranks is not None and args.workers is not None and args.ranks != args.workers + args.ps:
        raise ValueError(f"-n {args.ranks} disagrees with --ps {args.ps} --workers {args.workers}")
    workers = args.workers if args.workers is not None else (args.ranks or 1) - args.ps
    jobs = {}
    if args.ps:
        jobs["ps"] = args.ps
    jobs["worker"] = workers
    return Layout(jobs)


def command_and_env(argv):
    """``(command list, environment, parsed launcher options)`` for the launcher's ``argv`` (everything
    after ``dfcore.launch``).

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
    env = job_environment(loopback=not args.any_interface)
    env[CLUSTER_ENV] = layout.to_json()
    command = mpiexec_command(layout.size, program, oversubscribe=not args.no_oversubscribe,
                              loopback=not args.any_interface)
    return command, env, args


def main(argv=None):
    command, env, args = command_and_env(sys.argv[1:] if argv is None else argv)
    if args.print_command:
        print(f"{CLUSTER_ENV}='{env[CLUSTER_ENV]}' " + " ".join(command))
        return 0
    process = subprocess.Popen(command, env=env, start_new_session=True)
    signal.signal(signal.SIGTERM, _raise_interrupt)  # `kill` of the launcher ends the whole job too
    try:
        return process.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"dfcore.launch: the job ran past --timeout {args.timeout} s; killing it", file=sys.stderr)
        return_code = 124
    except KeyboardInterrupt:
        return_code = 130
    kill_job(process)
    return return_code


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
