"""Servers that listen as TensorFlow's do (issue 26): the "Distributed TensorFlow" how-to's trainer
(``dfcore/examples/between_graph.py``) runs as three plain processes told only their flags, and a session waits
for the tasks it needs with TF's log line until its deadline.

Specification: TF's ``tf.train.Server`` always serves its ``ClusterSpec`` address over gRPC (``server_lib.py``,
``grpc_server_lib.cc``), and a master's ``CreateSession`` waits for every worker it uses, logging ``CreateSession
still waiting for response from worker: /job:ps/replica:0/task:0`` every 10 s (``core/distributed_runtime/
master.cc``). Every process a test starts is killed at its end.
"""

import logging
import os
import re
import subprocess
import sys

import pytest

import dfcore as tf
from dfcore.transport import SERVERS_ENV, master, task
from dfcore.transport.grpc_server import free_ports


@pytest.mark.timeout(150)
def test_the_how_tos_trainer_runs_as_three_plain_processes_with_only_its_flags():
    ps, *workers = free_ports(3)
    flags = [f"--ps_hosts=127.0.0.1:{ps}", f"--worker_hosts={','.join(f'127.0.0.1:{p}' for p in workers)}",
             "--train_steps=30", "--hidden=32"]
    env = {k: v for k, v in os.environ.items() if k not in (SERVERS_ENV, "TF_CONFIG")}  # nothing but the flags
    command = [sys.executable, "-m", "dfcore.examples.between_graph", *flags]
    processes = []
    try:
        # the workers start first: their sessions wait for the ps (TF's CreateSession does)
        for job, index in (("worker", 0), ("worker", 1), ("ps", 0)):
            processes.append(subprocess.Popen([*command, f"--job_name={job}", f"--task_index={index}"], env=env,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        chief_out, _ = processes[0].communicate(timeout=120)
        other_out, _ = processes[1].communicate(timeout=60)
    finally:
        for process in processes:
            process.kill()
            process.wait(10)
    assert processes[0].returncode == 0, chief_out
    assert processes[1].returncode == 0, other_out
    found = re.search(r"global_step=(\d+) test_accuracy=([0-9.]+)", chief_out)
    assert found, chief_out
    # the shared global_step reached --train_steps (a worker's last steps may overshoot it, as TF's asynchronous
    # workers do); one process's run of 30 steps scores 0.66-0.75 (seed 0), chance is 0.1
    assert 30 <= int(found.group(1)) <= 32
    assert float(found.group(2)) > 0.4
    assert processes[2].poll() is not None  # the ps served until killed: server.join() never returns


def test_a_session_waits_for_a_task_with_tfs_log_line_until_its_deadline(monkeypatch, caplog):
    monkeypatch.delenv(SERVERS_ENV, raising=False)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    monkeypatch.setattr(task, "STILL_WAITING_LOG_S", 0.2)
    monkeypatch.setattr(master, "CONNECT_TIMEOUT_S", 1.0)
    ps, worker = free_ports(2)
    cluster = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ps}"], "worker": [f"127.0.0.1:{worker}"]})
    server = tf.train.Server(cluster, job_name="worker", task_index=0)  # nothing serves the ps
    try:
        with caplog.at_level(logging.WARNING, logger="dfcore.transport"):
            with pytest.raises(tf.errors.DeadlineExceededError, match=r"no response from /job:ps/replica:0/task:0"):
                tf.Session(server.target)
    finally:
        server.stop()
    assert "CreateSession still waiting for response from worker: /job:ps/replica:0/task:0" in caplog.text
