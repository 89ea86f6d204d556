"""MPI jobs end cleanly: with their launcher, when a rank leaves early, and with the failing rank named.

Specification: issue "Nothing lost, nothing hangs" (a job dies within 5 s of its launcher, even a SIGKILLed
one, and of ``run_job``'s caller; a rank whose program ends while the others wait for it ends the job within
5 s with an error naming the rank and its task, ranks that end about together are not reported; a rank that
calls ``os._exit(1)`` is named). Rank programs: ``tests/unit/mpi_programs/jobs_*.py``; every job is short,
bounded by its own deadline and pytest-timeout, and leaves no process behind (checked by command-line marker).
"""

import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest
from _requirements import require_mpi
from test_mpi_jobs import alive, launch, processes_with, program, rank_functions

import dfcore as tf
from dfcore.mpi.job import MPIJobError, run_job

require_mpi()

LEFT_TASK = "/job:worker/replica:0/task:2"


def wait_for(condition, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout_s} s"
        time.sleep(0.02)


def kill_leftovers(marker):
    for pid in processes_with(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def seconds_until_gone(parent, marker, ranks):
    """SIGKILL ``parent`` (the launcher, or the process that called ``run_job``) once its ``ranks`` ranks run
    (seen by ``marker``), and return the seconds until no process with ``marker`` is left."""
    try:
        wait_for(lambda: len(processes_with(marker)) >= ranks + 2, 30, "the launcher, mpiexec and the ranks start")
        time.sleep(0.5)
        start = time.monotonic()
        parent.kill()
        parent.wait(timeout=10)
        wait_for(lambda: not processes_with(marker), 20, "every process of the job ends")
        return time.monotonic() - start
    finally:
        parent.kill()
        kill_leftovers(marker)


@pytest.mark.timeout(90)
def test_a_sigkilled_launcher_takes_its_whole_job_with_it_within_5_s():
    marker = f"dfcore-orphan-{uuid.uuid4().hex}"
    launcher = subprocess.Popen([sys.executable, "-m", "dfcore.launch", "-n", "3", program("jobs_hang.py"), "60",
                                 marker], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert seconds_until_gone(launcher, marker, 3) <= 5.0


@pytest.mark.timeout(90)
def test_a_job_dies_with_the_process_that_called_run_job_within_5_s():
    marker = f"dfcore-orphan-{uuid.uuid4().hex}"
    call = (f"from dfcore.mpi import run_job; run_job({program('jobs_hang.py')!r}, ranks=3, args=[60, {marker!r}], "
            "timeout_s=60, progress=False)")
    caller = subprocess.Popen([sys.executable, "-c", call], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert seconds_until_gone(caller, marker, 3) <= 5.0


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["exit", "return"])
def test_a_rank_that_leaves_while_the_others_wait_ends_the_job_within_5_s_naming_it(how):
    with pytest.raises(MPIJobError) as caught:
        run_job(program("jobs_leave.py"), ranks=3, args=[how], timeout_s=40, progress=False)
    error = caught.value
    assert time.time() - error.partial[2]["left_at"] <= 5.0
    assert (error.rank, error.task) == (2, LEFT_TASK)
    assert f"rank 2 ({LEFT_TASK}) ended its program while ranks [0, 1] were still running" in error.message
    pids = error.partial.gather("pid").values()
    assert len(pids) == 3 and not any(alive(pid) for pid in pids)


@pytest.mark.timeout(60)
def test_ranks_that_end_within_the_grace_of_each_other_are_not_reported():
    result = run_job(program("jobs_leave.py"), ranks=3, args=["sooner", 1.0], timeout_s=40, progress=False)
    assert sorted(result.ranks.gather("pid")) == [0, 1, 2]


@pytest.mark.timeout(60)
def test_launch_ends_a_job_whose_rank_left_early_and_names_it():
    done, wall_s = launch("-n", "3", program("jobs_leave.py"), "exit", timeout=40)
    assert done.returncode == 1
    assert f"dfcore.launch: rank 2 ({LEFT_TASK}) ended its program while ranks [0, 1]" in done.stderr
    assert wall_s < 30.0


@pytest.mark.timeout(60)
def test_launch_ends_a_job_whose_plain_mpi4py_rank_exits_0_early_within_5_s_naming_it():
    # the rank never imports dfcore: rank_main notes its departure (before: rc 124 at --timeout)
    done, _ = launch("--timeout", "20", "-n", "3", program("plain_leave.py"), timeout=40)
    ended = time.time()
    assert done.returncode == 1, done.stderr
    assert "dfcore.launch: rank 1 (/job:worker/replica:0/task:1) ended its program while ranks [0, 2]" in done.stderr
    left_at = float(re.search(r"left_at=([0-9.]+)", done.stdout).group(1))
    assert 0 < ended - left_at < 5.0


@pytest.mark.timeout(60)
def test_a_rank_that_calls_os_exit_is_named():
    with pytest.raises(MPIJobError) as caught:
        run_job(program("jobs_leave.py"), ranks=3, args=["os_exit"], timeout_s=40, progress=False)
    error = caught.value
    assert isinstance(error, tf.errors.UnknownError)
    assert (error.rank, error.task) == (2, LEFT_TASK)
    assert f"rank 2 ({LEFT_TASK}) exited with status 1 without ending MPI" in error.message


@pytest.mark.timeout(60)
def test_launch_prints_a_heartbeat_while_the_job_runs_without_a_deadline():
    marker = f"dfcore-beat-{uuid.uuid4().hex}"
    try:
        done, _ = launch("--heartbeat", "1", "-n", "2", program("jobs_hang.py"), "3", marker, timeout=40)
    finally:
        kill_leftovers(marker)
    assert done.returncode == 0
    assert re.search(r"^dfcore.launch: job running for \d+ s, 2/2 ranks alive; --timeout S to bound it$", done.stderr,
                     re.MULTILINE), done.stderr


@pytest.mark.timeout(90)
def test_tasks_with_servers_may_end_far_apart():
    """Workers of asynchronous training end when they are done; their ps waits for both (Server.join)."""
    result = run_job(program("jobs_servers_apart.py"), ps=1, workers=2, args=[4.0], timeout_s=60, progress=False,
                     exit_grace_s=1.0)
    assert sorted(result.ranks.gather("pid")) == [0, 1, 2]


def test_session_on_a_task_that_has_exited_fails_at_once_naming_it():
    """Worker 1 opens its session after worker 0 exited: asking worker 0 for its devices fails at once
    with UnavailableError naming it (it used to wait the whole 60 s connect deadline for a reply)."""
    result = run_job(program("late_worker.py"), ps=1, workers=2, timeout_s=60, progress=False)
    late = result.ranks["/job:worker/replica:0/task:1"]
    assert late["outcome"] == "UnavailableError"
    assert "/job:worker/replica:0/task:0" in late["message"] and "has exited" in late["message"]
    assert late["after_s"] < 10


def test_device_filters_let_a_late_worker_ignore_a_task_that_has_exited():
    """TF's ``ConfigProto.device_filters``: worker 1's session sees and asks only the ps and itself."""
    result = run_job(program("late_worker.py"), ps=1, workers=2, args=["/job:ps", "/job:worker/task:1"],
                     timeout_s=60, progress=False)
    late = result.ranks["/job:worker/replica:0/task:1"]
    assert late["outcome"] == "ran"
    assert late["devices"] == ["/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"]


@pytest.mark.timeout(60)
def test_open_mpi_keeps_a_jobs_session_files_in_the_jobs_own_directory_and_removes_them_with_it():
    import tempfile

    from dfcore.mpi.env import find_mpiexec, mpi_flavor

    if mpi_flavor(find_mpiexec()) != "openmpi":
        pytest.skip("PRRTE's session directory is Open MPI's")
    result = run_job(rank_functions().session_directory, ranks=2, timeout_s=40, progress=False)
    directories = set(result.ranks.gather("result").values())
    assert len(directories) == 1
    directory = directories.pop()
    job_dir = os.path.dirname(directory)
    # the job's own directory (run_job's results), not the shared temporary directory, and gone with the job
    assert os.path.dirname(job_dir) == tempfile.gettempdir() and os.path.basename(job_dir).startswith("dfcore-job-")
    assert os.path.basename(directory).startswith("ompi.")
    assert not os.path.exists(job_dir)


PMIX_LISTENER_FAILURE = ("--------------------------------------------------------------------------\n"
                         "The PMIx server's listener thread failed to start. We cannot\ncontinue.\n"
                         "--------------------------------------------------------------------------\n")


def launcher_failing(monkeypatch, times):
    """Make ``run_job``'s first ``times`` launches an ``mpiexec`` that fails as Open MPI 5's did once in CI
    (exit status 213 and PMIx's box on stderr, before any rank ran); returns the list of launched commands."""
    import dfcore.mpi.job as job_module

    real_start_job = job_module.start_job
    launched = []

    def start_job(command, **popen_kwargs):
        launched.append(command)
        if len(launched) <= times:
            command = [sys.executable, "-c", f"import sys; sys.stderr.write({PMIX_LISTENER_FAILURE!r}); sys.exit(213)"]
        return real_start_job(command, **popen_kwargs)

    monkeypatch.setattr(job_module, "start_job", start_job)
    return launched


@pytest.mark.timeout(60)
def test_a_launcher_that_fails_before_any_rank_runs_is_launched_again(monkeypatch):
    launched = launcher_failing(monkeypatch, times=1)
    with pytest.warns(RuntimeWarning, match=r"before any rank ran \(attempt 1 of 3\); launching it again"):
        result = run_job(program("jobs_report.py"), workers=2, args=[2], timeout_s=40, progress=False)
    assert len(launched) == 2 and launched[0] == launched[1]
    assert sorted(result.ranks) == [0, 1] and result.ranks[1]["total"] == 0 + 1
    assert "PMIx" not in result.stderr  # the failed attempt's output is not the job's


@pytest.mark.timeout(60)
def test_a_launcher_that_keeps_failing_is_reported_after_the_last_attempt(monkeypatch):
    from dfcore.mpi.job import LAUNCH_ATTEMPTS

    launched = launcher_failing(monkeypatch, times=LAUNCH_ATTEMPTS)
    with pytest.warns(RuntimeWarning), pytest.raises(MPIJobError, match="listener thread failed to start") as caught:
        run_job(program("jobs_report.py"), workers=2, args=[2], timeout_s=40, progress=False)
    assert len(launched) == LAUNCH_ATTEMPTS
    assert caught.value.exit_status == 213


def test_only_a_launch_that_ran_no_rank_counts_as_failed_to_start():
    from dfcore.mpi.failures import launcher_failed_to_start

    assert launcher_failed_to_start(PMIX_LISTENER_FAILURE, {})
    assert not launcher_failed_to_start(PMIX_LISTENER_FAILURE, {0: {"step": 3}})  # a rank ran: never again
    assert not launcher_failed_to_start("MPI_ABORT was invoked on rank 1", {})
