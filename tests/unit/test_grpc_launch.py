"""``python -m dfcore.launch --grpc`` and ``run_job(..., transport="grpc")``: one plain process per task.

Specification: issue 16 item 3 — each task on a free loopback port with its ``TF_CONFIG`` (and, with
``--tf-flags``, the "Distributed TensorFlow" how-to's ``--ps_hosts/--worker_hosts/--job_name/--task_index``),
output prefixed with the task, every task stopped when the chief (worker 0) ends or any task fails, exit
statuses as the MPI launcher's, the job dying with its launcher. Real processes, each test time-bounded.
"""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from _requirements import require_module
from process_checks import processes_with

import dfcore as tf
from dfcore import launch, task_processes
from dfcore.mpi import job_command
from dfcore.mpi.job import MPIJobError, run_job
from dfcore.mpi.world import Layout

require_module("grpc", "grpcio")  # the tasks serve over gRPC

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grpc_programs", "launched_task.py")


def gone_within(marker, seconds):
    give_up = time.monotonic() + seconds
    while processes_with(marker) and time.monotonic() < give_up:
        time.sleep(0.05)
    return processes_with(marker) == []


def launch_grpc(*argv, timeout=40):
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "dfcore.launch", "--grpc", *argv], capture_output=True, text=True,
                          timeout=timeout)
    return done, time.monotonic() - start


def test_tasks_get_the_how_tos_flags_and_a_tf_config_that_agree():
    layout = Layout({"ps": 1, "worker": 2})
    cluster = task_processes.cluster_addresses(layout, [5001, 5002, 5003])
    assert cluster == {"ps": ["127.0.0.1:5001"], "worker": ["127.0.0.1:5002", "127.0.0.1:5003"]}
    assert task_processes.tf_flags(cluster, "worker", 1) == [
        "--ps_hosts=127.0.0.1:5001", "--worker_hosts=127.0.0.1:5002,127.0.0.1:5003", "--job_name=worker",
        "--task_index=1"]
    env = task_processes.task_environment({"PATH": "/bin"}, cluster, "worker", 1, rank=2)
    assert env["DFCORE_TASK_RANK"] == "2" and env["PATH"] == "/bin" and env["DFCORE_SERVERS"] == "grpc"
    assert json.loads(env["TF_CONFIG"]) == {"cluster": cluster, "task": {"type": "worker", "index": 1},
                                            "rpc_layer": "grpc"}
    ports = task_processes.free_loopback_ports(5)
    assert len(set(ports)) == 5 and all(1024 <= p < 65536 for p in ports)
    assert task_processes.exit_status(-9) == 137 and task_processes.exit_status(3) == 3


def test_task_prefixes_are_taken_off_and_sorted_by_task():
    text = "[ps:0] serving\n[worker:1] step 1\nplain\n[worker:0] done\n[chief:0] not in the layout\n"
    plain, by_rank = task_processes.untag(text, Layout({"ps": 1, "worker": 2}))
    assert plain == "serving\nstep 1\nplain\ndone\n[chief:0] not in the layout\n"
    assert by_rank == {0: "serving", 2: "step 1", 1: "done"}


def test_tf_flags_without_grpc_is_a_usage_error():
    with pytest.raises(SystemExit):
        job_command.command_and_env(["--tf-flags", "--workers", "2", "x.py"])


def test_print_command_shows_each_tasks_command_and_tf_config(capsys):
    assert launch.main(["--grpc", "--tf-flags", "--print-command", "--ps", "1", "--workers", "2", "t.py", "-v"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    config = json.loads(lines[2].split("'")[1])
    assert config["task"] == {"type": "worker", "index": 1} and len(config["cluster"]["worker"]) == 2
    assert lines[2].endswith("python t.py -v --ps_hosts=" + config["cluster"]["ps"][0] + " --worker_hosts="
                             + ",".join(config["cluster"]["worker"]) + " --job_name=worker --task_index=1")


@pytest.mark.timeout(60)
def test_launch_gives_each_task_its_address_and_ends_when_the_chief_ends():
    marker = f"dfcore-grpc-{uuid.uuid4().hex}"
    done, wall_s = launch_grpc("--tf-flags", "--ps", "1", "--workers", "2", PROGRAM, "serve", marker)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    told = {line.split("] ", 1)[0] + "]": line.split(" at ")[1] for line in lines if " at " in line}
    assert set(told) == {"[ps:0]", "[worker:0]", "[worker:1]"}
    assert all(address.startswith("grpc://127.0.0.1:") for address in told.values())
    assert len(set(told.values())) == 3
    assert f"[ps:0] I am ps:0 at {told['[ps:0]']}" in lines
    assert wall_s < 20.0  # the ps serves for 60 s unless the launcher stops it when the chief ends
    assert gone_within(marker, 3.0)


@pytest.mark.timeout(60)
def test_a_failing_task_stops_the_job_with_its_status_and_names_it():
    marker = f"dfcore-grpc-{uuid.uuid4().hex}"
    done, wall_s = launch_grpc("--ps", "1", "--workers", "2", PROGRAM, "raise", marker)
    assert done.returncode == 1
    assert wall_s < 20.0
    assert "[worker:1] ValueError: launched_task: worker 1 fails on purpose" in done.stderr
    assert "dfcore.launch: task /job:worker/replica:0/task:1 exited with status 1; the other tasks were stopped" \
        in done.stderr
    assert gone_within(marker, 3.0)


@pytest.mark.timeout(60)
def test_the_launch_timeout_exits_124_and_the_job_dies_with_a_killed_launcher():
    marker = f"dfcore-grpc-{uuid.uuid4().hex}"
    done, wall_s = launch_grpc("--timeout", "3", "--workers", "2", PROGRAM, "hang", marker)
    assert done.returncode == 124 and wall_s < 3 + 8.0
    assert gone_within(marker, 3.0)
    marker = f"dfcore-grpc-{uuid.uuid4().hex}"
    launcher = subprocess.Popen([sys.executable, "-m", "dfcore.launch", "--grpc", "--ps", "1", "--workers", "1",
                                 PROGRAM, "hang", marker], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    give_up = time.monotonic() + 20
    while len(processes_with(marker)) < 3 and time.monotonic() < give_up:  # the launcher and its two tasks
        time.sleep(0.05)
    assert len(processes_with(marker)) == 3
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    assert gone_within(marker, 5.0)


@pytest.mark.timeout(60)
def test_run_job_over_grpc_gathers_every_tasks_reports():
    result = run_job(PROGRAM, ps=1, workers=2, args=["end", "--extra"], transport="grpc", tf_flags=True,
                     timeout_s=30, progress=False)
    tasks = result.ranks.tasks
    assert list(tasks) == ["/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"]
    assert [values["task"] for values in tasks.values()] == [("ps", 0), ("worker", 0), ("worker", 1)]
    cluster = tasks["/job:ps/replica:0/task:0"]["cluster"]
    assert all(values["cluster"] == cluster for values in tasks.values())
    assert result.ranks["/job:worker/task:1"]["argv"] == [
        "--extra", f"--ps_hosts={cluster['ps'][0]}", f"--worker_hosts={','.join(cluster['worker'])}",
        "--job_name=worker", "--task_index=1"]
    assert result.progress == (3, 3, "tasks")
    assert "I am worker:1 at grpc://" + cluster["worker"][1] in result.stdout.splitlines()


@pytest.mark.timeout(60)
def test_run_job_over_grpc_names_the_failed_task_and_keeps_its_deadline():
    with pytest.raises(MPIJobError) as caught:
        run_job(PROGRAM, ps=1, workers=2, args=["raise"], transport="grpc", timeout_s=30, progress=False)
    error = caught.value
    assert (error.rank, error.task, error.exit_status) == (2, "/job:worker/replica:0/task:1", 1)
    assert "ValueError: launched_task: worker 1 fails on purpose" in error.traceback
    assert "/job:worker/replica:0/task:1 exited with status 1" in error.message
    assert "/job:ps/replica:0/task:0" in error.partial
    marker = f"dfcore-grpc-{uuid.uuid4().hex}"
    start = time.monotonic()
    with pytest.raises(tf.errors.DeadlineExceededError, match="gRPC job .* deadline of timeout_s=3 s"):
        run_job(PROGRAM, workers=2, args=["hang", marker], transport="grpc", timeout_s=3, progress=False)
    assert time.monotonic() - start < 3 + 5.0
    assert processes_with(marker) == []
    with pytest.raises(ValueError, match="transport must be 'mpi' or 'grpc'"):
        run_job(PROGRAM, transport="tcp")
