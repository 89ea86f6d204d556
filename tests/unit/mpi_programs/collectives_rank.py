"""Rank program of ``tests/unit/test_mpi_collectives.py``: many all-reduce checks in one MPI job.

Run as ``python -m dfcore.launch -n 4 tests/unit/mpi_programs/collectives_rank.py OUT_DIR``. Every rank
writes ``OUT_DIR/rank<r>.json``: ``{"checks": {name: [ok, detail]}}``; rank 0 also pickles a gathered
``AllReduceResult`` to ``OUT_DIR/result.pickle`` for the widget check. References: ``np.sum``/``mean``/``max``
of every rank's input (each rank regenerates them all from seeds), ``MPI.Allreduce``, and the in-process
``dfcore.distribute.all_reduce`` of the same inputs (bit for bit, trace chunk for chunk).
"""

import dataclasses
import json
import os
import pickle
import sys

import numpy as np

from dfcore import errors
from dfcore.distribute import all_reduce as in_process
from dfcore.distribute.schedules import ALGORITHMS
from dfcore.mpi import collectives
from dfcore.mpi.world import world

RANK, N, DEVICES = None, None, None  # set by main(): importing this file (pytest --doctest-modules) starts no MPI
checks = {}


def check(name, ok, detail=""):
    checks[name] = [bool(ok), str(detail)]


def inputs(case, shape, dtype, integers=True):
    """Every rank's input of one case (the same on every rank)."""
    rngs = [np.random.default_rng(1000 * case + r) for r in range(N)]
    if integers:
        return [rng.integers(-4, 8, size=shape).astype(dtype) for rng in rngs]
    return [rng.standard_normal(shape).astype(dtype) for rng in rngs]


def reference(values, reduction):
    stacked = np.stack([v.astype(np.float64) for v in values])
    return {"sum": stacked.sum(0), "mean": stacked.mean(0), "max": stacked.max(0)}[reduction]


def run_case(case, label, shape, dtype, algorithm, reduction="sum", integers=True, **kwargs):
    values = inputs(case, shape, dtype, integers)
    mine = values[RANK].copy()
    out = collectives.all_reduce(mine, algorithm=algorithm, reduction=reduction, trace=False, **kwargs)
    mpi = collectives.mpi_allreduce(mine, reduction=reduction)
    ref = reference(values, reduction)
    local = in_process(values, devices=DEVICES, algorithm=algorithm, reduction=reduction, trace=False,
                       **kwargs).outputs[RANK]
    check(f"{label}/shape_dtype", out.shape == tuple(shape) and out.dtype == dtype, (out.shape, out.dtype))
    check(f"{label}/input_untouched", np.array_equal(mine, values[RANK]))
    check(f"{label}/in_process_bitwise", np.array_equal(out, local), np.max(np.abs(out - local), initial=0))
    if integers and reduction != "mean":
        check(f"{label}/numpy_exact", np.array_equal(out, ref.astype(dtype)))
        check(f"{label}/mpi_exact", np.array_equal(out, mpi))
    else:
        tol = 1e-12 if dtype == np.float64 else 1e-5
        check(f"{label}/numpy_close", np.allclose(out, ref, rtol=tol, atol=tol), np.max(np.abs(out - ref), initial=0))
        check(f"{label}/mpi_close", np.allclose(out, mpi, rtol=tol, atol=tol), np.max(np.abs(out - mpi), initial=0))


def trace_case(case, label, algorithm, **kwargs):
    values = inputs(case, (1003,), np.float32)
    collectives.all_reduce(values[RANK], algorithm=algorithm, trace_values=True, name=label, **kwargs)
    result = collectives.gather_result(label)
    if RANK != 0:
        check(f"trace/{label}/not_root", result is None)
        return None
    local = in_process(values, devices=DEVICES, algorithm=algorithm, name=label, **kwargs).trace
    got = result.trace

    def rows(trace):
        return [(r.round, r.phase, [(t.src, t.dst, t.src_device, t.dst_device, t.chunk_ids, t.element_range,
                                     t.nbytes, t.op, t.key) for t in r.transfers]) for r in trace.rounds]

    check(f"trace/{label}/rounds_chunks", rows(got) == rows(local))
    check(f"trace/{label}/bytes", dict(got.bytes_sent_per_device) == dict(local.bytes_sent_per_device)
          and dict(got.bytes_per_link) == dict(local.bytes_per_link))
    check(f"trace/{label}/layout", (got.devices, got.chunk_ranges, got.num_elements, got.dtype)
          == (local.devices, local.chunk_ranges, local.num_elements, local.dtype))
    check(f"trace/{label}/values", all(np.array_equal(a.value_sent, b.value_sent)
                                       and np.array_equal(a.partial_sum_after, b.partial_sum_after)
                                       for a, b in zip(got.transfers, local.transfers)))
    check(f"trace/{label}/inputs", all(np.array_equal(a, b) for a, b in zip(got.inputs, local.inputs)))
    times = [(t.recv_request_time_s, t.match_time_s) for t in result.transfers]
    check(f"trace/{label}/transfer_times", len(times) == len(got.transfers) and all(a <= b for a, b in times)
          and result.wall_time_s > 0 and result.simulated_time_s > 0, times[:3])
    return result


def error_case(label, shape, dtype):
    try:
        collectives.all_reduce(np.zeros(shape, dtype), name=label)
    except errors.InvalidArgumentError as error:
        check(f"error/{label}", True, str(error))
    else:
        check(f"error/{label}", False, "no error raised")


def argument_case(label, call):
    """``call`` must raise ValueError on every rank (the same check as in-process, before any message)."""
    try:
        call()
    except ValueError as error:
        check(f"argument/{label}", True, str(error))
    except Exception as error:  # recorded for the test to report
        check(f"argument/{label}", False, f"{type(error).__name__}: {error}")
    else:
        check(f"argument/{label}", False, "no error raised")


def main(out_dir):
    global RANK, N, DEVICES
    comm = world()[0]
    RANK, N = comm.Get_rank(), comm.Get_size()
    DEVICES = [f"/job:worker/replica:0/task:{r}/device:CPU:0" for r in range(N)]
    case = 0
    for algorithm in ALGORITHMS:
        for dtype in (np.float32, np.float64):
            for shape, subchunks in (((17, 59), 1), ((1003,), 3), ((3,), 1)):
                case += 1
                run_case(case, f"sum/{algorithm}/{np.dtype(dtype).name}/{shape}/s{subchunks}", shape, dtype,
                         algorithm, num_subchunks=subchunks)
    case += 1
    run_case(case, "sum/ring/nccl", (1001,), np.float32, "ring", convention="nccl", num_subchunks=2)
    case += 1
    run_case(case, "sum/ring/float16", (257,), np.float16, "ring")
    for algorithm in ("ring", "tree", "recursive_halving_doubling"):
        for reduction in ("mean", "max"):
            case += 1
            run_case(case, f"{reduction}/{algorithm}/random", (999,), np.float64, algorithm, reduction,
                     integers=False)
    case += 1
    run_case(case, "sum/ring/random_float32", (4099,), np.float32, "ring", integers=False)
    for algorithm in ALGORITHMS:
        case += 1
        result = trace_case(case, algorithm, algorithm, num_subchunks=2 if algorithm == "ring" else 1)
        if result is not None and algorithm == "ring":
            trace = dataclasses.replace(result.trace, bytes_sent_per_device=dict(result.trace.bytes_sent_per_device),
                                        bytes_per_link=dict(result.trace.bytes_per_link))  # mappingproxy won't pickle
            with open(os.path.join(out_dir, "result.pickle"), "wb") as f:
                pickle.dump(dataclasses.replace(result, trace=trace), f)
    error_case("shape", (5,) if RANK == 2 else (4,), np.float32)
    error_case("dtype", (4,), np.float64 if RANK == 1 else np.float32)
    argument_case("num_subchunks", lambda: collectives.all_reduce(np.ones(5, np.float32), num_subchunks=3))
    argument_case("root", lambda: collectives.gather_result(root=N))
    run_case(case + 1, "sum/after_argument_errors", (6,), np.float32, "ring")  # the ranks are still in step
    with open(os.path.join(out_dir, f"rank{RANK}.json"), "w") as f:
        json.dump({"checks": checks}, f)


if __name__ == "__main__":
    main(sys.argv[1])
