"""A gRPC cluster as users start it: tasks in any order, sessions that wait only for the tasks they use, and the
how-to's trainer as separately started processes.

Specification: issue 16 item 3 and TF's master (``core/distributed_runtime/master.cc``): a session whose task is
not up yet waits, saying ``CreateSession still waiting for response from worker: <task>`` periodically, until a
deadline; ``ConfigProto.device_filters`` (``core/protobuf/config.proto``) limits the tasks it asks; the
"Distributed TensorFlow" how-to's between-graph trainer trains as in one process. Real processes, time-bounded.
"""

import os
import re
import subprocess
import sys
import time

import pytest
from _requirements import require_module

from dfcore import task_processes
from dfcore.mpi.world import Layout

require_module("grpc", "grpcio")  # the tasks serve over gRPC

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "grpc_programs", "session_task.py")
WAITING = "CreateSession still waiting for response from worker: {}"


def start_task(cluster, job, index, *args):
    return task_processes.start_task(cluster, job, index, [PROGRAM, *args], dict(os.environ), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)


def cluster_of(**jobs):
    layout = Layout(jobs)
    return task_processes.cluster_addresses(layout, task_processes.free_loopback_ports(layout.size))


def read_until(stream, text, timeout_s):
    """The lines of ``stream`` up to the first containing ``text`` (fails past ``timeout_s``)."""
    lines, give_up = [], time.monotonic() + timeout_s
    while time.monotonic() < give_up:
        line = stream.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return lines
    raise AssertionError(f"no {text!r} within {timeout_s} s; got {lines}")


def finish(*processes):
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=10)


@pytest.mark.timeout(90)
def test_a_worker_started_before_its_ps_waits_says_so_in_tfs_words_and_then_runs():
    cluster = cluster_of(ps=1, worker=1)
    worker = start_task(cluster, "worker", 0, "filtered", "60")
    ps = None
    try:
        read_until(worker.stderr, WAITING.format("/job:ps/replica:0/task:0"), timeout_s=40)
        ps = start_task(cluster, "ps", 0, "filtered", "60")
        out, err = worker.communicate(timeout=40)
        assert worker.returncode == 0, err
        assert out.strip() == "result=42.0"
    finally:
        finish(*(p for p in (worker, ps) if p is not None))


@pytest.mark.timeout(90)
def test_a_session_waits_for_its_tasks_only_until_its_deadline():
    cluster = cluster_of(ps=1, worker=1)
    worker = start_task(cluster, "worker", 0, "filtered", "2")
    try:
        start = time.monotonic()
        out, err = worker.communicate(timeout=40)
        assert worker.returncode != 0
        assert time.monotonic() - start < 30
        assert WAITING.format("/job:ps/replica:0/task:0") in err
        assert re.search(r"DeadlineExceededError: CreateSession: no response from /job:ps/replica:0/task:0 within 2 s",
                         err), err
    finally:
        finish(worker)


@pytest.mark.timeout(90)
def test_device_filters_keep_a_worker_to_the_ps_and_itself():
    cluster = cluster_of(ps=1, worker=2)  # worker 1 is never started
    ps = start_task(cluster, "ps", 0, "filtered", "30")
    try:
        filtered = start_task(cluster, "worker", 0, "filtered", "30")
        out, err = filtered.communicate(timeout=45)
        assert filtered.returncode == 0, err
        assert out.strip() == "result=42.0"
        assert "still waiting" not in err  # it never asked worker 1
        unfiltered = start_task(cluster, "worker", 0, "all", "2")
        out, err = unfiltered.communicate(timeout=45)
        assert unfiltered.returncode != 0
        assert WAITING.format("/job:worker/replica:0/task:1") in err
        assert WAITING.format("/job:ps/replica:0/task:0") not in err
        assert "no response from /job:worker/replica:0/task:1 within 2 s" in err
    finally:
        finish(ps)


def accuracy_of(text):
    return float(re.search(r"test_accuracy=([\d.]+)", text).group(1))


@pytest.mark.timeout(180)
def test_the_how_tos_trainer_as_three_processes_trains_as_well_as_in_one():
    alone = subprocess.run([sys.executable, "-m", "dfcore.examples.between_graph"], capture_output=True, text=True,
                           timeout=120)
    assert alone.returncode == 0, alone.stderr
    three = subprocess.run([sys.executable, "-m", "dfcore.launch", "--grpc", "--tf-flags", "--timeout", "150", "--ps",
                            "1", "--workers", "2", "-m", "dfcore.examples.between_graph"], capture_output=True,
                           text=True, timeout=170)
    assert three.returncode == 0, three.stderr
    chief = [line for line in three.stdout.splitlines() if line.startswith("[worker:0] global_step=")]
    assert len(chief) == 1, three.stdout
    steps = int(re.search(r"global_step=(\d+)", chief[0]).group(1))
    assert 300 <= steps < 320  # the other worker may add a few steps while the chief ends
    assert accuracy_of(alone.stdout) >= 0.85
    assert abs(accuracy_of(chief[0]) - accuracy_of(alone.stdout)) <= 0.05
