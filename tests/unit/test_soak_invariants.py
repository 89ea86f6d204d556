"""The chaos soak's invariant checks (tests/soak/) catch what they are for, on hand-made data.

A soak that reports 0 violations is only worth something if each check fails on bad input: an update
applied twice, an update lost, global_step going backwards, a checkpoint holding the wrong sum, a
checkpoint that does not restore, a process left behind, memory that grows.
"""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import dfcore as tf

SOAK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "soak")
sys.path.insert(0, SOAK)

import invariants  # noqa: E402 - tests/soak/ is importable once on sys.path (above)
import ring_job  # noqa: E402 - as invariants
from grpc_kind import GrpcPSJob  # noqa: E402 - as invariants
from jobs import PSJob, RingJob  # noqa: E402 - as invariants


def test_restore_must_be_the_latest_checkpoint_and_never_go_back():
    assert invariants.restore_problems({"step": 40}, 40, 20) == []
    assert invariants.restore_problems(None, 40, 20) == []  # the job died before restoring
    assert "latest checkpoint holds step 40" in invariants.restore_problems({"step": 20}, 40, 20)[0]
    assert any("went backwards" in p for p in invariants.restore_problems({"step": 20}, 20, 40))


def test_ps_update_counts_and_counter_ranges_are_checked():
    job = PSJob(rounds=1, round_steps=2)  # 2 workers x 2 steps = 4 updates per job
    assert job.applied_problems([(41, 41), (42, 42), (43, 43), (44, 44)], 40, completed=True) == []
    # two updates meeting on the ps may return the same counter (the later commit re-applies its increment)
    assert job.applied_problems([(41, 41), (42, 42), (42, 42), (44, 44)], 40, completed=True) == []
    assert any("exactly 4" in p for p in job.applied_problems([(41, 41), (42, 42), (44, 44)], 40, completed=True))
    assert any("at most 4" in p for p in job.applied_problems([(41, 41)] * 5, 40, completed=False))
    assert any("wrong base" in p for p in job.applied_problems([(40, 40), (41, 41), (42, 42), (43, 43)], 40,
                                                                completed=True))
    assert any("wrong base" in p for p in job.applied_problems([(45, 45)], 40, completed=False))
    assert job.applied_problems([(41, 41), (44, 44)], 40, completed=False) == []


def test_a_completed_job_must_end_at_its_restored_step_plus_its_updates():
    assert invariants.completed_problems("/s/model.ckpt-140", 140) == []
    assert "an update lost or applied twice" in invariants.completed_problems("/s/model.ckpt-139", 140)[0]
    assert invariants.completed_problems(None, 140) != []


def test_ring_steps_must_follow_the_restored_step_once_each():
    job = RingJob(ranks=2, steps=3)
    assert job.applied_problems([(21,), (22,), (23,)], 20, completed=True) == []
    assert job.applied_problems([(21,), (21,), (22,)], 20, completed=False) != []
    assert job.applied_problems([(21,), (23,)], 20, completed=False) != []
    assert job.applied_problems([(21,), (22,)], 20, completed=True) != []


def _save_ring_checkpoint(directory, step, acc):
    with tf.Graph().as_default():
        variables = ring_job.state_variables()
        saver = tf.train.Saver(list(variables.values()))
        with tf.Session() as sess:
            sess.run([variables["step"].assign(step), variables["acc"].assign(acc)])
            return saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=step)


def test_ring_checkpoint_must_hold_the_sum_of_the_reference_results(tmp_path):
    job = RingJob(ranks=2, steps=3, seed=0)
    right = _save_ring_checkpoint(str(tmp_path), 2, job.expected_acc(2))
    assert invariants.checkpoint_restore_problems(right, job.checkpoint_problems) == []
    counted_twice = _save_ring_checkpoint(str(tmp_path), 3, job.expected_acc(3) + ring_job.reference(0, 2, 3))
    assert any("counted twice or lost" in p
               for p in invariants.checkpoint_restore_problems(counted_twice, job.checkpoint_problems))


def test_a_checkpoint_that_does_not_restore_is_a_violation(tmp_path):
    job = RingJob(ranks=2, steps=3)
    path = _save_ring_checkpoint(str(tmp_path), 1, job.expected_acc(1))
    data_files = [name for name in os.listdir(os.path.dirname(path)) if name.startswith("model.ckpt-1.")
                  and not name.endswith(".meta")]
    for name in data_files:
        with open(os.path.join(os.path.dirname(path), name), "r+b") as f:
            f.truncate(10)
    assert data_files
    problems = invariants.checkpoint_restore_problems(path, job.checkpoint_problems)
    assert problems and "does not restore" in problems[0]


def test_a_process_of_the_job_left_behind_is_a_violation(tmp_path):
    job_dir = str(tmp_path / "job0001")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", job_dir])
    try:
        started = time.monotonic()  # until the child has exec'd, /proc shows the parent's command line
        while sleeper.pid not in invariants.processes_mentioning(job_dir) and time.monotonic() - started < 30:
            time.sleep(0.01)
        assert invariants.leftover_problems(job_dir, wait_s=0.2)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert invariants.leftover_problems(job_dir, wait_s=0.2) == []


def test_memory_that_grows_is_a_violation():
    mib = 2**20
    flat = [200 * mib + (i % 3) * mib for i in range(16)]
    assert invariants.memory_problems(flat) == []
    growing = [200 * mib + i * 4 * mib for i in range(16)]
    assert "memory grew" in invariants.memory_problems(growing)[0]
    assert invariants.memory_problems(growing[:4]) == []  # too few jobs to judge
    # a fresh process climbs while it warms up (its first quarter), then stays flat: no violation
    warming = [60 * mib + min(i, 4) * 9 * mib + (i % 2) * mib for i in range(16)]
    assert invariants.memory_problems(warming) == []
    assert "memory grew" in invariants.memory_problems(warming[:12] + [s + 30 * mib for s in warming[12:]])[0]


@pytest.mark.parametrize("name", ["model.ckpt-40", "a-b/model.ckpt-7"])
def test_checkpoint_step_is_read_from_the_prefix(name):
    assert invariants.checkpoint_step(name) == int(name.rsplit("-", 1)[1])


def test_the_reference_sum_is_numpys():
    assert np.array_equal(ring_job.reference(0, 3, 5), sum(ring_job.contribution(0, r, 5) for r in range(3)))


def test_a_grpc_worker_failing_with_an_initialization_error_is_a_violation(tmp_path):
    kind = GrpcPSJob()
    assert kind.checkpoint_every == kind.steps_per_job == 100  # one checkpoint per completed job
    (tmp_path / "error.1").write_text("UnavailableError")  # its ps died: the error it must get
    assert kind.job_problems(str(tmp_path)) == []
    (tmp_path / "error.2").write_text("FailedPreconditionError")
    assert kind.job_problems(str(tmp_path)) == [
        "worker rank 2 failed with FailedPreconditionError (an initialization error), not UnavailableError"]
