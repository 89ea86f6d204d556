"""Real MPI jobs from Python: reports and progress back, failures named within seconds, deadlines kill everything.

Specification: issue 7 items 6–7 (a rank that raises or is SIGKILLed ends the job within 5 s with
that rank's error; a launched run whose ranks hang returns an error instead of hanging; the last
checkpoint stays intact). The rank programs are ``tests/unit/mpi_programs/jobs_*.py``. Every job
is oversubscribed on the 2-core CI machine and bounded by its own timeout and pytest-timeout.
"""

import contextlib
import os
import re
import subprocess
import sys
import threading
import time
import uuid

import numpy as np
import pytest
from _requirements import require_mpi
from process_checks import alive, processes_with

import dfcore as tf
from dfcore.mpi.job import MPIJobError, run_job

require_mpi()  # the modules importing from this one (test_mpi_commit, _deadlines, _faults) check it too

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_programs")


def program(name):
    return os.path.join(PROGRAMS, name)


def rank_functions():
    """``mpi_programs/jobs_functions.py``, imported as the ranks import it (by its module name)."""
    sys.path.insert(0, PROGRAMS)
    try:
        import jobs_functions
    finally:
        sys.path.remove(PROGRAMS)
    return jobs_functions


@pytest.mark.timeout(60)
def test_four_ranks_report_values_and_progress_reaches_the_total():
    steps = 5
    result = run_job(program("jobs_report.py"), ps=1, workers=3, args=[steps], timeout_s=40)
    assert list(result.ranks) == [0, 1, 2, 3]
    assert result.layout.jobs == {"ps": 1, "worker": 3}
    assert result.progress == (4 * steps, 4 * steps, "steps")
    for rank, task in enumerate(["/job:ps/replica:0/task:0"] + [f"/job:worker/replica:0/task:{i}" for i in range(3)]):
        assert result.ranks[rank] is result.ranks[task]
        assert result.ranks[task]["task"] == task and result.ranks[task]["rank"] == rank
        np.testing.assert_array_equal(result.ranks[rank]["ones"], np.full(3, rank, np.float32))
        assert result.ranks[rank]["total"] == 0 + 1 + 2 + 3
    assert result.ranks["/job:worker/task:2"] is result.ranks[3]
    traces = result.ranks.gather("trace")
    assert sorted(traces) == [0, 1, 2, 3]
    assert all(t.algorithm == "ring" and sum(t.bytes_sent_per_device.values()) == 64 for t in traces.values())
    assert len(set(result.ranks.gather("pid").values())) == 4
    assert repr(result) == ("JobResult({'ps': 1, 'worker': 3}, reported: ones (4 ranks), pid (4 ranks), "
                            "rank (4 ranks), task (4 ranks), total (4 ranks), trace (4 ranks))")


@pytest.mark.timeout(60)
def test_a_function_runs_on_every_rank_and_returns_its_result():
    result = run_job(rank_functions().scaled_rank, ranks=2, args=(10, 1), timeout_s=40, progress=False)
    assert result.ranks.gather("result") == {0: 1, 1: 11}


def test_functions_the_ranks_cannot_import_are_refused_with_advice():
    def local():
        return 1

    with pytest.raises(ValueError, match="inside another function.*top level of a .py module"):
        run_job(local, ranks=2)
    main_function = type(local)(local.__code__, {"__name__": "__main__"}, "cell_function")
    main_function.__module__, main_function.__qualname__ = "__main__", "cell_function"
    with pytest.raises(ValueError, match="a notebook or the main script.*next to the notebook"):
        run_job(main_function, ranks=2)
    with pytest.raises(ValueError, match="'module:function'"):
        run_job("jobs_functions:", ranks=2)


@pytest.mark.timeout(60)
def test_a_rank_that_raises_ends_the_job_within_5_s_naming_the_rank_and_its_error():
    with pytest.raises(MPIJobError) as caught:
        run_job(program("jobs_raise.py"), ranks=4, timeout_s=40, progress=False)
    error = caught.value
    assert time.time() - error.partial[3]["raised_at"] <= 5.0
    assert isinstance(error, tf.errors.UnknownError) and error.error_code == tf.errors.UNKNOWN
    assert (error.rank, error.task, error.exit_status) == (3, "/job:worker/replica:0/task:3", 1)
    assert "rank 3 (/job:worker/replica:0/task:3) raised ValueError: jobs_raise: rank 3 fails on purpose" \
        in error.message
    assert 'jobs_raise.py", line' in error.traceback and "mpi4py" not in error.traceback
    assert error.traceback in error.message
    assert sorted(error.partial.gather("pid")) == [0, 1, 2, 3]


@pytest.mark.timeout(60)
def test_a_rank_killed_by_sigkill_ends_the_job_within_5_s_naming_the_rank():
    with pytest.raises(MPIJobError) as caught:
        run_job(program("jobs_kill.py"), ranks=4, timeout_s=40, progress=False)
    error = caught.value
    assert time.time() - error.partial[3]["killed_at"] <= 5.0
    assert (error.rank, error.task) == (3, "/job:worker/replica:0/task:3")
    assert "rank 3 (/job:worker/replica:0/task:3) was killed by signal 9 (SIGKILL)" in error.message
    assert error.exit_status != 0 and f"exit status {error.exit_status}" in error.message


class Sightings(set):
    """Pids seen, and when the first was."""

    first_seen: float | None = None


@contextlib.contextmanager
def watching(marker):
    """Collect, into the yielded set, every pid seen running with ``marker`` in its command line; the set's
    ``first_seen`` is the ``time.monotonic()`` of the first sighting (None until then)."""
    seen, stop = Sightings(), threading.Event()

    def watch():
        while not stop.is_set():
            found = processes_with(marker)
            if found and seen.first_seen is None:
                seen.first_seen = time.monotonic()
            seen.update(found)
            stop.wait(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join()


@pytest.mark.timeout(60)
def test_a_hung_job_raises_deadline_exceeded_and_leaves_no_process_alive():
    timeout_s, marker = 4.0, f"dfcore-hang-{uuid.uuid4().hex}"
    start = time.monotonic()
    with watching(marker) as seen, pytest.raises(tf.errors.DeadlineExceededError, match="deadline of timeout_s=4.0 s"):
        run_job(program("jobs_hang.py"), ranks=4, args=[30, marker], timeout_s=timeout_s, progress=False)
    assert time.monotonic() - start <= timeout_s + 2.0
    assert len(seen) >= 4, "mpiexec and the ranks carry the marker; the watcher must have seen them"
    assert [pid for pid in seen if alive(pid)] == [] and processes_with(marker) == []


@pytest.mark.timeout(60)
def test_the_last_checkpoint_stays_intact_when_the_saving_rank_is_sigkilled(tmp_path):
    with pytest.raises(MPIJobError, match="rank 0 .* was killed by signal 9"):
        run_job(program("jobs_checkpoint.py"), ranks=2, args=[str(tmp_path)], timeout_s=40, progress=False)
    path = tf.train.latest_checkpoint(str(tmp_path))
    step = int(path.rsplit("-", 1)[1])
    assert step >= 3
    with tf.Graph().as_default():
        v = tf.Variable(tf.zeros([256]), name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(v), np.full(256, step, np.float32))


def launch(*argv, timeout=30):
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "dfcore.launch", *argv], capture_output=True, text=True,
                          timeout=timeout)
    return done, time.monotonic() - start


@pytest.mark.timeout(60)
def test_launch_exits_non_zero_quickly_when_a_rank_raises():
    done, _ = launch("-n", "2", program("jobs_raise.py"))
    ended = time.time()
    assert done.returncode != 0
    # within 5 s of the rank's failure (the launcher's own start-up, seconds on a loaded machine, not counted)
    raised_at = float(re.search(r"raised_at=([0-9.]+)", done.stdout).group(1))
    assert 0 < ended - raised_at < 5.0
    assert "ValueError: jobs_raise: rank 1 fails on purpose" in done.stderr


@pytest.mark.timeout(60)
def test_launch_timeout_exits_124():
    marker = f"dfcore-hang-{uuid.uuid4().hex}"
    with watching(marker) as seen:
        done, _ = launch("--timeout", "3", "-n", "2", program("jobs_hang.py"), "30", marker)
    ended = time.monotonic()
    assert done.returncode == 124
    # killed about 3 s after its processes started (the launcher's own start-up before that is not counted)
    assert seen.first_seen is not None
    assert 3.0 - 1.0 < ended - seen.first_seen < 3.0 + 3.0
    assert "--timeout 3.0 s" in done.stderr
    assert seen, "the watcher must have seen the job's processes"
    assert processes_with(marker) == []
