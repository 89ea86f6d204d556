"""Sessions across real processes: an MPI job of 1 ps + 2 workers (dfcore.launch, oversubscribed).

Reference: TF1 between-graph replication semantics (variables on the ps shared by every worker's
session; a failing op fails the step with its error) and dfcore's rule that a failed step changes
no variable (DESIGN §8).
"""

import importlib.util
import json
import pathlib
import subprocess

import pytest

from dfcore.launch import command_and_env
from dfcore.mpi.env import find_mpiexec

PROGRAMS = pathlib.Path(__file__).parent / "mpi_programs"


def _has_mpiexec():
    try:
        find_mpiexec()
    except FileNotFoundError:
        return False
    return True

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or not _has_mpiexec(),
                                reason="needs mpi4py and mpiexec: pip install 'dfcore[mpi]'")


@pytest.fixture(scope="module")
def between_graph(tmp_path_factory):
    out = tmp_path_factory.mktemp("between_graph")
    command, env, _ = command_and_env(["--ps", "1", "--workers", "2", str(PROGRAMS / "runtime_between_graph.py"),
                                       str(out)])
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {name: json.loads((out / f"{name}.json").read_text()) for name in ("ps0", "worker0", "worker1")}


@pytest.mark.timeout(150)
def test_each_session_sees_every_task_devices(between_graph):
    for w in ("worker0", "worker1"):
        assert between_graph[w]["devices"] == [
            "/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0",
            "/job:worker/replica:0/task:1/device:CPU:0"]


@pytest.mark.timeout(150)
def test_variables_on_the_ps_are_shared_by_both_workers(between_graph):
    assert between_graph["worker0"]["counter_after_both"] == [10.0] * 4
    assert between_graph["worker1"]["counter_after_both"] == [10.0] * 4


@pytest.mark.timeout(150)
def test_cross_process_recv_gives_the_right_values_and_step_stats(between_graph):
    for w, task in (("worker0", 0), ("worker1", 1)):
        result = between_graph[w]
        assert result["y"] == result["expected_y"]
        assert result["stat_devices"] == ["/job:ps/replica:0/task:0/device:CPU:0",
                                          f"/job:worker/replica:0/task:{task}/device:CPU:0"]
        crossing = [t for t in result["transfers"] if t[1] != t[2]]
        assert crossing == [["edge_1_counter/read", "/job:ps/replica:0/task:0/device:CPU:0",
                             f"/job:worker/replica:0/task:{task}/device:CPU:0", 16]]
        client = [t[0] for t in result["transfers"] if t[1] == t[2]]
        assert sorted(client) == ["MatMul:0", "x:0"]


@pytest.mark.timeout(150)
def test_an_op_failing_on_the_ps_fails_the_step_and_changes_nothing(between_graph):
    name, message = between_graph["worker0"]["error"]
    assert name == "InvalidArgumentError"
    assert "poisoned read" in message
    assert between_graph["worker0"]["counter_after_failed_step"] == [10.0] * 4
    assert between_graph["worker1"]["counter_after_failed_step"] == [10.0] * 4


@pytest.mark.timeout(150)
def test_the_ps_join_returns_once_the_workers_exit(between_graph):
    assert between_graph["ps0"]["joined_after_s"] < 60
