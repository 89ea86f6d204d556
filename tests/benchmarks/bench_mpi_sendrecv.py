"""A cross-process ``_Send``/``_Recv`` of 8 bytes: dfcore's rendezvous vs raw MPI vs a whole ``Session.run``.

One job of 2 ranks (1 ps + 1 worker, each a ``tf.train.Server``), three measurements in
interleaved rounds, rotating order, each started after a polling barrier:

(a) the round trip of an 8-byte float64 tensor through dfcore's cross-process rendezvous
    (:class:`dfcore.transport.rendezvous.RemoteRendezvous`, one step handle per round trip, released
    after): the ps sends ``ping`` and receives ``pong``, the worker the mirror — target ≤ 50 µs
    (issue 7); also the median single round trip (a sample's mean carries the rare slow ones),
    and where a one-way trip goes: from the sender's ``send`` until the receiving process
    delivered it to the step's rendezvous (whichever thread polled MPI), and from there until
    the waiting ``recv`` returned;
(b) raw ``comm.Send``/``comm.Recv`` of 8 bytes on the same communicator (the floor under (a));
(c) a whole ``Session(server.target).run`` on the worker fetching a 4-byte variable that lives on
    the ps (placement, ``RunGraph`` request, the ps's partition, the ``_Send``/``_Recv``, the reply).

Round-trip figures are per round trip (a sample is the mean of a block); ratios are medians of
per-round ratios; never a pass/fail on time. Run alone: ``python tests/benchmarks/run_all.py sendrecv``.
"""

import importlib.util
import itertools
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

ROUNDS = 15
ROUND_TRIPS = 200  # per sample of (a) and (b)
RUNS = 40  # Session.run calls per sample of (c)
JOB_TIMEOUT_S = 180
PS = "/job:ps/replica:0/task:0/device:CPU:0"
WORKER = "/job:worker/replica:0/task:0/device:CPU:0"
HERE = pathlib.Path(__file__).resolve()


def _barrier(comm):
    """A barrier that sleeps while it waits (a blocking one spins a core the other rank may need)."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(1e-4)


def rank_main(out_path):
    """One rank of the job; each writes its samples (seconds) as JSON to ``<out_path>.<rank>``."""
    import dfcore as tf
    from dfcore.framework.rendezvous_key import create_key
    from dfcore.mpi import MPIClusterResolver, runtime

    resolver = MPIClusterResolver()
    config = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0})
    server = tf.train.Server(resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
                             config=config)
    task = runtime.current()
    comm, steps, on_ps = task.transport.comm, task.steps, resolver.task_type == "ps"
    ping, pong = create_key(PS, 1, WORKER, "ping"), create_key(WORKER, 1, PS, "pong")
    x = np.zeros(1, np.float64)
    raw, peer = np.zeros(1, np.float64), 1 - comm.Get_rank()
    handles = itertools.count()
    one_way = []  # (sent on the peer, delivered here, recv returned here) of each received tensor
    single = []  # each round trip's seconds, on the ps

    def rendezvous_round_trips():
        # the ps pulls pong from the worker's step (TF's RecvTensor), so the worker may end a step only once the
        # ps has it: when the next ping arrives, or after the barrier that follows the last round trip
        held = None
        for _ in range(ROUND_TRIPS):
            start = time.perf_counter()
            handle = ("bench_sendrecv", next(handles))
            rendezvous = steps.find_or_create(handle)
            if on_ps:
                rendezvous.send(ping, x)
                rendezvous.recv(pong)
            else:
                value = rendezvous.recv(ping)
                if held is not None:
                    steps.release(held)
                rendezvous.send(pong, value)
            returned = time.perf_counter()
            single.append(returned - start)
            got = rendezvous.transfers()[0]
            one_way.append((got.send_time_s, got.match_time_s, returned))
            if on_ps:
                steps.release(handle)
            else:
                held = handle
        _barrier(comm)
        if held is not None:
            steps.release(held)

    def raw_round_trips():
        for _ in range(ROUND_TRIPS):
            if on_ps:
                comm.Send(x, peer, 11)
                comm.Recv(raw, peer, 11)
            else:
                comm.Recv(raw, peer, 11)
                comm.Send(raw, peer, 11)

    if on_ps:
        session_runs = None  # the ps only serves the worker's RunGraph requests
    else:
        with tf.device("/job:ps/task:0"):
            variable = tf.Variable(np.float32(1.0), name="v")  # 4 bytes on the other task
        session = tf.Session(server.target, config=config)
        session.run(variable.initializer)

        def session_runs():
            for _ in range(RUNS):
                session.run(variable)

    tasks = {"rendezvous": (rendezvous_round_trips, ROUND_TRIPS), "raw": (raw_round_trips, ROUND_TRIPS),
             "session_run": (session_runs, RUNS)}
    names = list(tasks)
    samples = {name: [] for name in names}
    for r in range(ROUNDS + 1):  # round 0 warms up
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            fn, count = tasks[name]
            _barrier(comm)
            start = time.perf_counter()
            if fn is not None:
                fn()
            if r:
                samples[name].append((time.perf_counter() - start) / count)
        if not r:
            one_way.clear()
            single.clear()
    samples["one_way"], samples["single"] = one_way, single
    pathlib.Path(f"{out_path}.{comm.Get_rank()}").write_text(json.dumps(samples))
    _barrier(comm)


def main():
    """Print the figures and ratios (or why they were skipped)."""
    if importlib.util.find_spec("mpi4py") is None:
        print(f"skipped: mpi4py is not installed for {sys.executable} (pip install 'dfcore[mpi]')")
        return
    from _timing import median_ratio, report

    from dfcore.mpi.job import run_job

    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "samples"
        run_job(str(HERE), ps=1, workers=1, args=["--rank", str(out)], timeout_s=JOB_TIMEOUT_S, progress=False)
        ps, worker = (json.loads(pathlib.Path(f"{out}.{rank}").read_text()) for rank in (0, 1))
    rendezvous, raw, session_run = ps["rendezvous"], ps["raw"], worker["session_run"]
    one_way = np.array(ps["one_way"] + worker["one_way"])
    wire, wake = one_way[:, 1] - one_way[:, 0], one_way[:, 2] - one_way[:, 1]
    print(f"2 MPI ranks (1 ps + 1 worker) on {os.cpu_count()} cores; medians of {ROUNDS} interleaved rounds")
    report([
        ("(a) rendezvous round trip, 8-byte float64 (target <= 50 us)", statistics.median(rendezvous) * 1e6, "us"),
        ("    single round trip, p50", np.percentile(ps["single"], 50) * 1e6, "us"),
        ("    single round trip, p90", np.percentile(ps["single"], 90) * 1e6, "us"),
        ("    one way: send -> delivered to the receiver's rendezvous, p50", np.percentile(wire, 50) * 1e6, "us"),
        ("    one way: send -> delivered to the receiver's rendezvous, p90", np.percentile(wire, 90) * 1e6, "us"),
        ("    one way: delivered -> recv returns, p50", np.percentile(wake, 50) * 1e6, "us"),
        ("    one way: delivered -> recv returns, p90", np.percentile(wake, 90) * 1e6, "us"),
        ("(b) raw comm.Send/Recv round trip, 8 bytes", statistics.median(raw) * 1e6, "us"),
        ("(c) Session.run fetching a 4-byte variable on the other task", statistics.median(session_run) * 1e6, "us"),
        ("(a) vs (b)", median_ratio(rendezvous, raw), "x"),
        ("(c) vs (a)", median_ratio(session_run, rendezvous), "x"),
    ])


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--rank":
        rank_main(sys.argv[2])
    else:
        main()
