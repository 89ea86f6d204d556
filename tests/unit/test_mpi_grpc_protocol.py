"""``protocol="grpc+mpi"``: gRPC for control, MPI for the tensors between the tasks of one MPI job.

Specification: issue 16 item 2 and TF's ``grpc+mpi`` server protocol (sessions and steps over each task's gRPC
server, ``_Recv`` pulling tensors over MPI). Reference: the same between-graph program as over MPI alone
(tests/unit/test_mpi_runtime.py: numpy's results, TF1's shared-variable and all-or-nothing semantics), run by
``python -m dfcore.launch`` with 1 ps + 2 workers whose servers listen on loopback ports.
"""

import json
import pathlib
import subprocess

import pytest
from _requirements import require_module, require_mpi

require_module("grpc", "grpcio")

from dfcore.launch import command_and_env  # noqa: E402 - after the check: grpc_server imports grpc
from dfcore.transport.grpc_server import free_ports  # noqa: E402 - as above

PROGRAMS = pathlib.Path(__file__).parent / "mpi_programs"

require_mpi()


@pytest.mark.timeout(150)
def test_grpc_plus_mpi_runs_between_graph_training_as_over_mpi(tmp_path):
    ports = free_ports(3)
    cluster = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{p}" for p in ports[1:]]}
    command, env, _ = command_and_env(["--ps", "1", "--workers", "2", str(PROGRAMS / "runtime_between_graph.py"),
                                       str(tmp_path), json.dumps(cluster)])
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in ("ps0", "worker0", "worker1")}
    assert out["ps0"]["joined_after_s"] < 60
    for w in (0, 1):
        result = out[f"worker{w}"]
        assert result["transport"] == "GrpcMpiTransport"
        assert result["counter_after_both"] == [10.0] * 4  # 2 workers x 5 increments on the ps's variable
        assert result["y"] == result["expected_y"]
        client = f"/job:worker/replica:0/task:{w}/device:CPU:0"
        assert result["transfers"] == [["edge_1_counter/read", "/job:ps/replica:0/task:0/device:CPU:0", client, 16]]
        assert result["counter_after_failed_step"] == [10.0] * 4  # the failed step changed nothing
        assert result["looped"] == [15.0, 15.0]  # ((1*2+1)*2+1)*2+1, half of each iteration on the ps
    name, message = out["worker0"]["error"]
    assert name == "InvalidArgumentError" and "poisoned read" in message
