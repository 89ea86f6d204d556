"""All-reduce across 4 MPI ranks: hand-written ring vs ``MPI.Allreduce``, ping-pong latency, job start-up.

(a) 4 ranks × 16 MiB float32: ``dfcore.mpi.collectives.all_reduce`` (ring over ``Sendrecv``, no
trace) vs ``MPI.Allreduce`` into a fresh array — target ≤ 1.2× (issue 7); also the ring with its
chunk trace on. (b) 8-byte ``Send``/``Recv`` ping-pong between ranks 0 and 1, raw MPI, round trip
(the floor under a cross-process ``_Send``/``_Recv``; target ≤ 50 µs). (c) start-up of a 4-rank job:
from the launch to every rank past a barrier, ``import dfcore`` included — target < 2 s.
(a) and (b) run in one job, interleaved round by round in rotating order; a collective's time is
the slowest rank's, after a barrier. Ratios of paired samples; never a pass/fail on time.
Run alone: ``python tests/benchmarks/run_all.py mpi``.
"""

import importlib.util
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

ROUNDS = 12
RANKS = 4
PING_PONGS = 300
STARTUPS = 3
JOB_TIMEOUT_S = 180
HERE = pathlib.Path(__file__).resolve()


def rank_main(out_path):
    """One rank of the (a)/(b) job: rank 0 writes the samples (seconds) as JSON to ``out_path``."""
    from mpi4py import MPI

    from dfcore.mpi.collectives import all_reduce, mpi_allreduce
    from dfcore.mpi.world import world

    comm = world()[0]
    rank = comm.Get_rank()
    value = np.random.default_rng(rank).random(4 << 20, dtype=np.float32)  # 16 MiB
    ping, pong = np.zeros(1, np.float64), np.zeros(1, np.float64)

    def ping_pong():
        for _ in range(PING_PONGS):
            if rank == 0:
                comm.Send(ping, 1, 7)
                comm.Recv(pong, 1, 7)
            elif rank == 1:
                comm.Recv(pong, 0, 7)
                comm.Send(ping, 0, 7)

    tasks = {"ring": lambda: all_reduce(value, comm, trace=False),
             "ring_traced": lambda: all_reduce(value, comm),
             "mpi_allreduce": lambda: mpi_allreduce(value, comm),
             "ping_pong": ping_pong}
    names = list(tasks)
    samples = {name: [] for name in names}
    for name in names:  # warm-up
        tasks[name]()
    for r in range(ROUNDS):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            comm.Barrier()
            start = time.perf_counter()
            tasks[name]()
            elapsed = comm.allreduce(time.perf_counter() - start, op=MPI.MAX)
            samples[name].append(elapsed / (PING_PONGS if name == "ping_pong" else 1))
    if rank == 0:
        pathlib.Path(out_path).write_text(json.dumps(samples))


def startup_main(out_path, with_dfcore):
    """A start-up job's rank: import dfcore (or only mpi4py), pass a barrier; rank 0 writes the wall-clock
    time after it."""
    if with_dfcore:
        from dfcore.mpi.world import world  # imports dfcore: part of what is measured

        comm = world()[0]
    else:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    comm.Barrier()
    if comm.Get_rank() == 0:
        pathlib.Path(out_path).write_text(repr(time.time()))


def _job(mode, out_path):
    """Run this file as a job in ``mode``; the wall-clock time it was launched (raises MPIJobError on failure)."""
    from dfcore.mpi.job import run_job

    launched = time.time()
    run_job(str(HERE), ranks=RANKS, args=[mode, str(out_path)], timeout_s=JOB_TIMEOUT_S, progress=False)
    return launched


def main():
    """Print the ratios (or why they were skipped)."""
    if importlib.util.find_spec("mpi4py") is None:
        print(f"skipped: mpi4py is not installed for {sys.executable} (pip install 'dfcore[mpi]')")
        return
    from _timing import median_ratio, report

    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "samples.json"
        _job("--rank", out)
        samples = json.loads(out.read_text())
        startups = {"--startup": [], "--startup-bare": []}
        for i in range(STARTUPS):
            for mode, times in startups.items():
                mark = pathlib.Path(tmp) / f"{mode}{i}"
                launched = _job(mode, mark)
                times.append(float(mark.read_text()) - launched)
    ring, traced, mpi = samples["ring"], samples["ring_traced"], samples["mpi_allreduce"]
    print(f"{RANKS} MPI ranks on {os.cpu_count()} cores; medians of {ROUNDS} interleaved rounds")
    report([
        ("(a) ring 4x16 MiB vs MPI.Allreduce (target <= 1.2x)", median_ratio(ring, mpi), "x"),
        ("    ring, median", statistics.median(ring) * 1e3, "ms"),
        ("    MPI.Allreduce, median", statistics.median(mpi) * 1e3, "ms"),
        ("    ring with chunk trace vs without", median_ratio(traced, ring), "x"),
        ("(b) 8-byte Send/Recv ping-pong, round trip (target <= 50 us)",
         statistics.median(samples["ping_pong"]) * 1e6, "us"),
        (f"(c) start-up of a {RANKS}-rank job, import dfcore + barrier (target < 2 s)",
         statistics.median(startups["--startup"]), "s"),
        ("    the same job with mpi4py only (no dfcore import)", statistics.median(startups["--startup-bare"]), "s"),
    ])


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--rank":
        rank_main(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] in ("--startup", "--startup-bare"):
        startup_main(sys.argv[2], with_dfcore=sys.argv[1] == "--startup")
    else:
        main()
