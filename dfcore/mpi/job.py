"""Run an MPI job from Python or a notebook cell: a deadline, a progress bar, the ranks' reports back.

Source: docs/architecture.md#transports and issue 7 (items 6–7): "start a run from a cell (``mpiexec`` in a
subprocess), with a deadline on every wait and a progress bar; gather every rank's step
stats, traces and staleness records back"; failure behaviour from mpi4py's documentation of
``python -m mpi4py`` (it turns an uncaught exception into ``MPI_Abort``; Open MPI then ends the job in well
under a second).

>>> result = run_job("train.py", ps=1, workers=3, args=["--steps", "100"])  # doctest: +SKIP
>>> result.ranks["/job:ps/replica:0/task:0"]["step_stats"]                  # doctest: +SKIP

The job is ``python -m dfcore.launch``'s command (:func:`dfcore.mpi.job_command.command_and_env`),
run in its own session; its output goes to files and this process only polls (every
50 ms), so no wait lasts past the deadline. Output lines are tagged with their rank (Open
MPI's ``--output tag``, MPICH's ``-prepend-rank``) so a failure names the rank whose traceback
it shows (:mod:`~dfcore.mpi.failures`). MPICH's Hydra starts its proxy and each rank in a session of
their own, out of reach
of :func:`~dfcore.mpi.processes.kill_job`, so with MPICH the job's processes are found in
``/proc`` while it runs (ranks by ``PMI_RANK``) and killed with it.
"""

import importlib
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

from .. import errors
from .departures import DEFAULT_GRACE_S, JOB_DIR_ENV, DepartureWatch
from .env import CLUSTER_ENV, RANK_TAG_FLAGS, mpi_flavor, private_session_directory
from .failures import MPIJobError, job_error, last_traceback, launcher_failed_to_start, untag
from .job_command import check_job_arguments, command_and_env
from .process_jobs import process_job
from .processes import MPIJob, find_descendants, start_job
from .progress_bar import progress_bar
from .report import RESULTS_ENV, dumps, read_progress, read_reports
from .world import Layout

_POLL_S = 0.05
#: How many times ``run_job`` launches an MPI job whose ``mpiexec`` failed before starting any rank.
LAUNCH_ATTEMPTS = 3
_CALL_FILE = "call.pkl"
_TASK = re.compile(r"^/job:([^/]+)(?:/replica:0)?/task:(\d+)$")


class RankReports:
    """What each rank reported (:func:`dfcore.mpi.report.report`), by rank or by task name.

    ``reports[2]``, ``reports["/job:worker/replica:0/task:1"]`` and ``reports["/job:worker/task:1"]``
    are the same dict in a ``{"ps": 1, "worker": 3}`` job. Iterating gives the ranks that
    reported, in order. Raises KeyError for a rank or task that reported nothing.
    """

    def __init__(self, layout, by_rank):
        self.layout = layout
        self._by_rank = dict(sorted(by_rank.items()))

    def task_name(self, rank):
        """``/job:<job>/replica:0/task:<index>`` of ``rank``."""
        return self.layout.task_name(rank)

    def _rank(self, key):
        if isinstance(key, str):
            match = _TASK.match(key)
            if not match:
                raise KeyError(f"{key!r} is neither a rank nor a task name like '/job:worker/replica:0/task:0'")
            return self.layout.rank_of(match.group(1), int(match.group(2)))
        return int(key)

    def __getitem__(self, key):
        rank = self._rank(key)
        if rank not in self._by_rank:
            raise KeyError(f"rank {rank} reported nothing (ranks that did: {list(self._by_rank)})")
        return self._by_rank[rank]

    def __contains__(self, key):
        try:
            return self._rank(key) in self._by_rank
        except (KeyError, ValueError):
            return False

    def __iter__(self):
        return iter(self._by_rank)

    def __len__(self):
        return len(self._by_rank)

    def items(self):
        return self._by_rank.items()

    @property
    def tasks(self):
        """``{task name: reported dict}`` in rank order."""
        return {self.task_name(rank): values for rank, values in self._by_rank.items()}

    def gather(self, name):
        """``{rank: value}`` of ``name`` over the ranks that reported it (e.g. every rank's ``step_stats``)."""
        return {rank: values[name] for rank, values in self._by_rank.items() if name in values}

    def __repr__(self):
        return f"RankReports({ {rank: sorted(values) for rank, values in self._by_rank.items()} })"


class JobResult:
    """A finished job: ``ranks`` (:class:`RankReports`), ``stdout``/``stderr`` (rank tags removed),
    ``wall_s`` (launch to exit), ``layout``, ``progress`` (last ``(done, total, what)`` or None)."""

    def __init__(self, layout, ranks, stdout, stderr, wall_s, progress):
        self.layout, self.ranks, self.stdout, self.stderr = layout, ranks, stdout, stderr
        self.wall_s, self.progress = wall_s, progress

    def __repr__(self):
        counts = {}
        for _, values in self.ranks.items():
            for name in values:
                counts[name] = counts.get(name, 0) + 1
        reported = ", ".join(f"{name} ({n} ranks)" for name, n in sorted(counts.items()))
        return f"JobResult({self.layout.jobs}, reported: {reported or 'nothing'})"


def run_job(program, ps=0, workers=None, ranks=None, args=(), timeout_s=120, progress=True, module=False,
            exit_grace_s=DEFAULT_GRACE_S, transport="mpi", tf_flags=False):
    """Run ``program`` as an MPI job, or as plain processes over gRPC, and return what its tasks reported.

    With ``transport="grpc"`` each task is a plain ``python`` process on a free loopback port with its
    ``TF_CONFIG`` (``python -m dfcore.launch --grpc``: :mod:`dfcore.task_processes`); the job ends when the
    chief (worker 0) ends or any task fails, and "rank" below means the task's number (tasks job by job).

    The job dies with the thread that called ``run_job`` (:func:`~dfcore.mpi.processes.start_job`): a
    notebook kernel that is killed or restarted takes its job with it.

    Args:
        program: a script path (``"train.py"``), a module name with ``module=True``, or a function
            — an object defined at the top level of an importable module, or ``"package.module:function"``.
            Each rank calls the function with ``*args`` and reports its return value as ``result``.
            Functions typed into ``__main__`` or a notebook cell cannot be imported by the ranks: put
            them in a ``.py`` file next to the notebook and import them from there.
        ps, workers, ranks: the layout, as ``python -m dfcore.launch --ps/--workers/-n`` (default 1 worker).
        args: the program's command-line words (script or module), or the function's positional
            arguments (any picklable values).
        timeout_s: the deadline in seconds (> 0) for the whole job, start-up included. An ``mpiexec`` that fails
            before any rank ran (Open MPI's PMIx listener) is launched again, up to :data:`LAUNCH_ATTEMPTS`
            times in all, within this deadline, with a ``RuntimeWarning``.
        progress: show a ``tqdm.auto`` bar (a widget in notebooks): the sum over ranks of
            :func:`dfcore.mpi.report.progress`, or the number of ranks that reported while none does.
        exit_grace_s: seconds the job may run on after a rank's program ended before that rank counts as
            having left early (:mod:`dfcore.mpi.departures`; ``math.inf``: never). MPI only.
        transport: ``"mpi"`` (ranks of ``mpiexec``) or ``"grpc"`` (plain processes that find each other by address).
        tf_flags: with ``"grpc"``, also pass each task the how-to's ``--ps_hosts/--worker_hosts/--job_name/
            --task_index`` flags (a script or module only).
    Returns:
        :class:`JobResult`.
    Raises:
        MPIJobError: the job exited with a non-zero status, or a rank left early (its program ended while
            others still ran ``exit_grace_s`` later; the job is killed); names the failing rank and task, its
            traceback and the exit status; ``error.partial`` holds the reports made before.
        DeadlineExceededError: the job ran past ``timeout_s``; all its processes were SIGKILLed
            (``error.partial`` as above).
        ValueError: a function that the ranks cannot import, a layout or a number of seconds out of range
            (names the argument and its range; nothing is started), an unknown ``transport``.
        FileNotFoundError: no ``mpiexec`` (MPI only).
    """
    if timeout_s is None:
        raise ValueError("timeout_s must be > 0 seconds: run_job always has a deadline, got None")
    if transport not in ("mpi", "grpc"):
        raise ValueError(f"transport must be 'mpi' or 'grpc', got {transport!r}")
    check_job_arguments(ps, workers, ranks, timeout_s, exit_grace_s)
    with tempfile.TemporaryDirectory(prefix="dfcore-job-") as results:
        argv, import_root = _program_argv(program, args, module, results)
        command, env, layout = _command(ps, workers, ranks, argv, transport)
        flavor = "tasks" if transport == "grpc" else mpi_flavor(command[0])
        env[RESULTS_ENV] = results
        env["PYTHONUNBUFFERED"] = "1"
        if import_root:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (import_root, env.get("PYTHONPATH")) if p)
        with open(os.path.join(results, "stdout"), "w+") as out, open(os.path.join(results, "stderr"), "w+") as err:
            if transport == "mpi":
                env[JOB_DIR_ENV] = results
                private_session_directory(env, results)
            start = time.monotonic()
            for attempt in range(1, LAUNCH_ATTEMPTS + 1):
                if transport == "grpc":
                    job = process_job("grpc").start(layout, command, env, out, err, with_tf_flags=tf_flags)
                else:
                    process = start_job(command, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
                    # {pid: (rank or None, start time)} of Hydra's processes (out of the job's session)
                    job = MPIJob(process, DepartureWatch(results, layout, exit_grace_s),
                                 {} if flavor == "mpich" else None)
                try:
                    ended = _watch(job, start + timeout_s, results, layout, progress, transport)
                finally:
                    job.kill()
                if not _launch_again(transport, ended, job, attempt, _read(err), results, layout):
                    break
                warnings.warn(f"mpiexec failed to start the job {_describe(program)} before any rank ran "
                              f"(attempt {attempt} of {LAUNCH_ATTEMPTS}); launching it again", RuntimeWarning,
                              stacklevel=2)
                for stream in (out, err):
                    stream.seek(0)
                    stream.truncate()
            wall_s = time.monotonic() - start
            stdout = _untag(_read(out), flavor, layout)[0]
            stderr, stderr_by_rank = _untag(_read(err), flavor, layout)
        reports = RankReports(layout, read_reports(results, layout.size))
        last_progress = read_progress(results, layout.size)
    kind = "gRPC" if transport == "grpc" else "MPI"
    if ended is _DEADLINE:
        error = errors.DeadlineExceededError(
            None, None, f"The {kind} job {_describe(program)} on {layout.size} {_unit(transport)} ran past its "
            f"deadline of timeout_s={timeout_s} s and was killed ({_unit(transport)} that reported: {list(reports)}).")
        error.partial, error.stdout, error.stderr = reports, stdout, stderr
        raise error
    if ended is not None:
        raise MPIJobError(f"MPI job {_describe(program)} failed: {ended.describe()}", ended.rank, ended.task,
                          job.poll(), "", reports, stdout, stderr)
    status = job.poll()
    if status != 0 and transport == "grpc":
        rank = job.ended[0]
        traceback = last_traceback(stderr_by_rank.get(rank, ""))
        message = f"gRPC job {_describe(program)} failed: {job.describe_end()}; the other tasks were stopped."
        if traceback:
            message += f"\nTraceback of {layout.task_name(rank)}:\n{traceback}"
        raise MPIJobError(message, rank, layout.task_name(rank), status, traceback, reports, stdout, stderr)
    if status != 0:
        raise job_error(_describe(program), layout, status, reports, stdout, stderr, stderr_by_rank, flavor)
    return JobResult(layout, reports, stdout, stderr, wall_s, last_progress)


def _launch_again(transport, ended, job, attempt, stderr, results, layout):
    """Whether ``run_job`` launches an MPI job again: ``mpiexec`` exited non-zero by itself (no deadline, no
    departure) before any rank ran (:func:`~dfcore.mpi.failures.launcher_failed_to_start`), and attempts are left."""
    return (transport == "mpi" and ended is None and job.poll() != 0 and attempt < LAUNCH_ATTEMPTS
            and launcher_failed_to_start(stderr, read_reports(results, layout.size)))


def _unit(transport):
    return "tasks" if transport == "grpc" else "ranks"


def _untag(text, flavor, layout):
    """``(text without rank or task tags, {rank: its lines})``."""
    if flavor != "tasks":
        return untag(text, flavor)
    return process_job("grpc").untag(text, layout)


def _describe(program):
    return repr(program) if isinstance(program, str) else _function_spec(program)[0]


def _command(ps, workers, ranks, argv, transport):
    """``(command, env, layout)``; MPI's output is tagged with ranks (:data:`~dfcore.mpi.env.RANK_TAG_FLAGS`).
    With ``"grpc"``: ``(argv after python, this process's environment, layout)``."""
    options = (["--ps", str(ps)] if ps else []) + ([] if workers is None else ["--workers", str(workers)]) \
        + ([] if ranks is None else ["-n", str(ranks)]) + (["--grpc"] if transport == "grpc" else [])
    try:
        command, env, _ = command_and_env(options + ["--"] + argv)
    except SystemExit:
        raise ValueError(f"not a valid job layout: ps={ps}, workers={workers}, ranks={ranks}") from None
    layout = Layout.from_json(env[CLUSTER_ENV])
    if transport == "grpc":
        return command, dict(os.environ), layout
    command = command[:1] + list(RANK_TAG_FLAGS.get(mpi_flavor(command[0]), ())) + command[1:]
    return command, env, layout


def _program_argv(program, args, module, results):
    """``(argv after python -m mpi4py, directory to put on PYTHONPATH or None)``."""
    if isinstance(program, str) and not (":" in program and not os.path.exists(program)):
        return (["-m", program] if module else [program]) + [str(a) for a in args], None
    spec, import_root = _function_spec(program)
    with open(os.path.join(results, _CALL_FILE), "wb") as f:
        f.write(dumps((spec, tuple(args))))
    return ["-c", "from dfcore.mpi.job import call_in_rank; call_in_rank()", spec], import_root


def _function_spec(function):
    """``("module:qualname", import root or None)`` of a function the ranks can import.

    Raises:
        ValueError: a function of ``__main__``/a notebook, a nested function, or a malformed string.
    """
    if isinstance(function, str):
        name, _, qualname = function.partition(":")
        if not name or not qualname:
            raise ValueError(f"a function to run must be given as 'module:function', got {function!r}")
        return function, None
    name, qualname = getattr(function, "__module__", None), getattr(function, "__qualname__", None)
    if not callable(function) or not name or not qualname:
        raise ValueError(f"run_job needs a script, a module or a function, got {function!r}")
    if name == "__main__" or "<" in qualname:
        raise ValueError(
            f"{qualname} is defined in {name}{' (a notebook or the main script)' if name == '__main__' else ''}"
            f"{'' if '<' not in qualname else ' inside another function'}; the ranks are separate processes and "
            "can only run a function they can import. Define it at the top level of a .py module (e.g. "
            "my_steps.py next to the notebook), import it, and pass it (or 'my_steps:function').")
    path = getattr(sys.modules.get(name), "__file__", None)
    root = None
    if path:
        root = os.path.dirname(os.path.abspath(path))
        for _ in range(name.count(".") + (os.path.basename(path) == "__init__.py")):
            root = os.path.dirname(root)
    return f"{name}:{qualname}", root


def call_in_rank():
    """Rank side of ``run_job(function)``: import the function, call it, report its value as ``result``."""
    from .report import load, report

    spec, args = load(os.path.join(os.environ[RESULTS_ENV], _CALL_FILE))
    name, _, qualname = spec.partition(":")
    function = importlib.import_module(name)
    for part in qualname.split("."):
        function = getattr(function, part)
    report(result=function(*args))


_DEADLINE = "deadline"


def _watch(job, deadline, results, layout, show, transport):
    """Poll until the job exits (None), the deadline passes (:data:`_DEADLINE`) or a rank has left early
    (its :class:`~dfcore.mpi.departures.Departure`), updating the bar (and, for MPICH, the job's pids until
    every rank is among them: :func:`~dfcore.mpi.processes.find_descendants`)."""
    bar = None
    if show:
        kind = "gRPC" if transport == "grpc" else "MPI"
        bar = progress_bar(total=layout.size, unit=_unit(transport), desc=f"{kind} job {layout.jobs}")
    pids = getattr(job, "known", None)
    try:
        while job.poll() is None:
            now = time.monotonic()
            if now >= deadline:
                return _DEADLINE
            departure = job.overdue()
            if departure is not None:
                return departure
            if bar is not None:
                _update(bar, results, layout.size)
            if pids is not None and sum(rank is not None for rank, _ in pids.values()) < layout.size:
                find_descendants(job.process.pid, pids)
            time.sleep(min(_POLL_S, deadline - now))
        if bar is not None:
            _update(bar, results, layout.size)
        return None
    finally:
        if bar is not None:
            bar.close()


def _update(bar, results, size):
    state = read_progress(results, size)
    if state is None:
        done, total, what = sum(os.path.exists(os.path.join(results, f"rank{r}.pkl")) for r in range(size)), size, \
            "ranks"
    else:
        done, total, what = state
    if (bar.n, bar.total, bar.unit) != (done, total, what):
        bar.n, bar.total, bar.unit = done, total, what
        bar.refresh()


def _read(fileobj):
    fileobj.flush()
    fileobj.seek(0)
    return fileobj.read()
