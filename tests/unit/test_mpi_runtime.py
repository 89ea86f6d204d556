"""Sessions across real processes: an MPI job of 1 ps + 2 workers (dfcore.launch, oversubscribed).

Reference: TF1 between-graph replication semantics (variables on the ps shared by every worker's
session; a failing op fails the step with its error) and dfcore's rule that a failed step changes
no variable (docs/architecture.md#errors-and-faults).
"""

import json
import pathlib
import subprocess

import numpy as np
import pytest
from _requirements import require_mpi

from dfcore.launch import command_and_env

PROGRAMS = pathlib.Path(__file__).parent / "mpi_programs"

require_mpi()


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
        client = f"/job:worker/replica:0/task:{task}/device:CPU:0"
        # the only rendezvous transfer crosses processes; the feed and the fetch use the worker's call frame
        assert result["transfers"] == [["edge_1_counter/read", "/job:ps/replica:0/task:0/device:CPU:0", client, 16]]
        assert result["endpoints"] == [["_arg_x_0_0", client], ["_retval_MatMul_0_0", client]]


@pytest.mark.timeout(150)
def test_an_op_failing_on_the_ps_fails_the_step_and_changes_nothing(between_graph):
    name, message = between_graph["worker0"]["error"]
    assert name == "InvalidArgumentError"
    assert "poisoned read" in message
    assert between_graph["worker0"]["counter_after_failed_step"] == [10.0] * 4
    assert between_graph["worker1"]["counter_after_failed_step"] == [10.0] * 4


@pytest.mark.timeout(150)
def test_the_master_optimizes_once_before_partitioning_and_both_tasks_run_the_fused_partitions(between_graph):
    from fused_model import expected_hidden, expected_partitions

    for w, task in (("worker0", 0), ("worker1", 1)):
        result = between_graph[w]
        np.testing.assert_allclose(result["hidden"], expected_hidden(), rtol=1e-6)
        assert result["fused_partitions"] == expected_partitions(task)  # hidden is a _FusedMatMul
        # every task's step stats come back: one NodeExecStats per node of each partition
        assert set(result["fused_stats"]) == set(result["fused_partitions"])
        for device, nodes in result["fused_partitions"].items():
            stats = result["fused_stats"][device]
            assert len(stats) == len(nodes)
            assert [n for n in stats if "/_" not in n] == sorted(name for name, _ in nodes if name)  # not transfers


@pytest.mark.timeout(150)
def test_the_ps_join_returns_once_the_workers_exit(between_graph):
    assert between_graph["ps0"]["joined_after_s"] < 60


def _ps_run(mode, steps, extra=()):
    from dfcore.mpi import run_job

    job = run_job("dfcore.examples.parameter_server", module=True, ps=1, workers=3, timeout_s=150, progress=False,
                  args=["--execution", "mpi", "--workers", "3", "--mode", mode, "--steps", str(steps), *extra])
    assert list(job.ranks) == [1], "only the chief (rank 1: ranks 0 is the ps) reports the record"
    return job.ranks["/job:worker/replica:0/task:0"]["record"]


@pytest.mark.timeout(200)
def test_sync_parameter_server_as_processes_converges_and_applies_no_stale_gradient():
    run = _ps_run("sync", 120)
    assert (run.execution, run.clock, run.status, run.final_version) == ("mpi", "wall", "completed", 120)
    # SyncReplicasOptimizer hands out tokens, not turns: a fast worker may take a slow one's token and
    # push twice for one update, and the slow one's late gradient is then dropped as stale (TF's rule).
    assert all(u.staleness == 0 for u in run.updates if u.applied)
    assert run.updates_dropped <= 0.1 * len(run.updates)
    assert run.test_accuracy >= 0.9
    tasks = {p.task for p in run.phases}
    assert tasks == {"/job:ps/replica:0/task:0"} | {f"/job:worker/replica:0/task:{w}" for w in range(3)}
    assert sum(p.kind == "apply" for p in run.phases) == 120


@pytest.mark.timeout(200)
def test_bounded_delay_parameter_server_as_processes_keeps_the_staleness_bound():
    run = _ps_run("bounded_delay", 60, ["--staleness", "1"])
    assert run.final_version == 60 and run.updates_applied == 3 * 60
    assert max(u.staleness for u in run.updates) <= 1
    assert sorted({u.step for u in run.updates if u.worker == 2}) == list(range(60))


@pytest.mark.timeout(200)
def test_ssp_parameter_server_as_processes_keeps_ho_et_al_rules():
    from ps_invariants import assert_ssp_invariants

    run = _ps_run("ssp", 90, ["--staleness", "1"])
    assert run.status == "completed" and run.final_version >= 90
    assert_ssp_invariants(run, 1)


@pytest.mark.timeout(200)
def test_the_chief_checkpoints_the_ps_variables_of_a_multi_process_run(tmp_path):
    from dfcore.train.checkpoint_management import latest_checkpoint

    run = _ps_run("sync", 40, ["--checkpoint-dir", str(tmp_path), "--checkpoint-every", "20"])
    latest = latest_checkpoint(str(tmp_path))
    assert latest is not None and latest.endswith("model.ckpt-40"), latest
    steps = sorted(int(p.name[len("model.ckpt-"):-len(".npz")]) for p in tmp_path.glob("model.ckpt-*.npz"))
    assert steps == [20, 40]  # every 20 updates (one ChiefSchedule in every driver)
    with np.load(latest + ".npz") as saved:
        assert int(saved["global_step"]) == 40
        for name, value in run.params.items():  # the final parameters, read by the chief after the run
            np.testing.assert_array_equal(saved[name], value)


@pytest.mark.timeout(150)
def test_a_loop_whose_body_runs_on_the_ps_gives_numpys_result(between_graph):
    """A while_loop across tasks: the ps gets its own copy of the loop's control (graph_partition.cc)."""
    expected = 1.0
    for _ in range(3):
        expected = expected * 2.0 + 1.0
    for w in (0, 1):
        assert between_graph[f"worker{w}"]["looped"] == [expected, expected]
