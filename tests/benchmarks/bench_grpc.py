"""A cross-process ``_Send``/``_Recv`` of 8 bytes over gRPC vs a bare grpcio unary call, in one run.

Two processes, each a ``tf.train.Server`` over gRPC (``DFCORE_SERVERS=grpc``; 1 ps + 1 worker on free loopback
ports), measured from the ps in interleaved rounds, rotating order:

(a) the round trip of an 8-byte float64 tensor through dfcore's cross-process rendezvous
    (:class:`dfcore.transport.rendezvous.RemoteRendezvous` over :mod:`dfcore.transport.grpc_transport`; one step
    handle per round trip, released after): the ps sends ``ping`` and receives ``pong``; the worker receives
    ``ping`` and sends it back as ``pong``. Each ``_Recv`` pulls with one ``RecvTensor`` call (TF's), answered
    with a ``TensorProto`` once the other side's ``_Send`` posted it; a step handle is released on the worker once
    the ps has moved on (as a task releases a step only at its end);
(b) a bare grpcio unary call of 8 bytes from the ps to a server in the worker process that echoes them
    (no protobuf, no dfcore): the floor under (a).

Target (issue 16): (a) ≤ 3× (b). Figures are per round trip (a sample is the mean of a block); the ratio is the
median of per-round ratios; never a pass/fail on time. Run alone: ``python tests/benchmarks/run_all.py grpc``.
"""

import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

ROUNDS = 15
ROUND_TRIPS = 200  # per sample
JOB_TIMEOUT_S = 180
PS = "/job:ps/replica:0/task:0/device:CPU:0"
WORKER = "/job:worker/replica:0/task:0/device:CPU:0"
ECHO = "/dfcore.bench.Echo/Echo"
HERE = pathlib.Path(__file__).resolve()


def _identity(data):
    return data


def task_main(job, cluster, echo_port, out_path):
    """One task: the ps measures and writes its samples (seconds) as JSON to ``out_path``; the worker echoes."""
    import grpc

    import dfcore as tf
    from dfcore.framework.rendezvous_key import create_key
    from dfcore.transport import grpc_server

    config = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0})
    server = tf.train.Server(cluster, job_name=job, task_index=0, config=config)
    steps = grpc_server.runtime_at(server.address).steps
    ping, pong = create_key(PS, 1, WORKER, "ping"), create_key(WORKER, 1, PS, "pong")
    total = (ROUNDS + 1) * ROUND_TRIPS
    if job == "worker":
        bare = grpc.server(tf_thread_pool(), options=(("grpc.so_reuseport", 0),))
        bare.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("dfcore.bench.Echo", {
            "Echo": grpc.unary_unary_rpc_method_handler(lambda request, context: request, _identity, _identity)}),))
        bare.add_insecure_port(f"127.0.0.1:{echo_port}")
        bare.start()
        with grpc.insecure_channel(cluster["ps"][0]) as to_ps:  # the ps is up before the first pull
            grpc.channel_ready_future(to_ps).result(timeout=60)
        for i in range(total):
            rendezvous = steps.find_or_create((0, i))
            value = rendezvous.recv(ping, timeout_s=JOB_TIMEOUT_S)
            if i:
                steps.release((0, i - 1))  # the ps has pulled pong i-1: it sent ping i
            rendezvous.send(pong, value)
        time.sleep(1.0)  # let the last pong leave
        return
    channel = grpc.insecure_channel(f"127.0.0.1:{echo_port}")
    echo = channel.unary_unary(ECHO, request_serializer=_identity, response_deserializer=_identity)
    grpc.channel_ready_future(channel).result(timeout=60)
    x = np.zeros(1, np.float64)
    payload = x.tobytes()
    handles = iter(range(total))

    def rendezvous_round_trips():
        for _ in range(ROUND_TRIPS):
            handle = (0, next(handles))
            rendezvous = steps.find_or_create(handle)
            rendezvous.send(ping, x)
            rendezvous.recv(pong, timeout_s=JOB_TIMEOUT_S)
            steps.release(handle)

    def bare_round_trips():
        for _ in range(ROUND_TRIPS):
            echo(payload, timeout=JOB_TIMEOUT_S)

    tasks = {"rendezvous": rendezvous_round_trips, "bare": bare_round_trips}
    names = list(tasks)
    samples = {name: [] for name in names}
    for r in range(ROUNDS + 1):  # round 0 warms up
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            start = time.perf_counter()
            tasks[name]()
            if r:
                samples[name].append((time.perf_counter() - start) / ROUND_TRIPS)
    pathlib.Path(out_path).write_text(json.dumps(samples))


def tf_thread_pool():
    import concurrent.futures

    return concurrent.futures.ThreadPoolExecutor(4)


def _drain(process, lines):
    for line in process.stdout:
        lines.append(line)


def main():
    from dfcore.transport.grpc_server import free_ports

    ps_port, worker_port, echo_port = free_ports(3)
    cluster = {"ps": [f"localhost:{ps_port}"], "worker": [f"localhost:{worker_port}"]}
    env = dict(os.environ, DFCORE_SERVERS="grpc")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "samples.json")
        processes, output = [], []
        try:
            for job in ("worker", "ps"):
                process = subprocess.Popen([sys.executable, str(HERE), job, json.dumps(cluster), str(echo_port), out],
                                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
                threading.Thread(target=_drain, args=(process, output), daemon=True).start()
                processes.append(process)
            for process in processes:
                process.wait(JOB_TIMEOUT_S)
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
        if not os.path.exists(out):
            print("the benchmark's processes failed:\n" + "".join(output))
            return
        samples = json.loads(pathlib.Path(out).read_text())
    rendezvous, bare = samples["rendezvous"], samples["bare"]
    ratio = statistics.median(a / b for a, b in zip(rendezvous, bare))
    print(f"8-byte _Send/_Recv round trip over gRPC (dfcore rendezvous, 2 processes): "
          f"{statistics.median(rendezvous) * 1e6:8.1f} us")
    print(f"8-byte bare grpcio unary call (same processes):                        "
          f"{statistics.median(bare) * 1e6:8.1f} us")
    print(f"ratio (median of {ROUNDS} rounds of {ROUND_TRIPS}): {ratio:.2f}x   target <= 3x")


if __name__ == "__main__":
    if len(sys.argv) == 5:
        task_main(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        main()
