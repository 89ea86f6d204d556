"""nccl-tests-style all-reduce benchmark on the engine's simulated devices, or across the ranks of an MPI job.

Run: ``python -m dfcore.bench.all_reduce -b 1K -e 16M -f 2 -n 4 --algo ring [--time wall|simulated]``;
across MPI ranks: ``python -m dfcore.launch -n 4 -m dfcore.bench.all_reduce -b 8 -e 16M -f 4``; on real GPUs
next to NCCL: ``python -m dfcore.bench.all_reduce --backend cupy`` (:mod:`dfcore.bench.gpu_all_reduce`).
Source: NVIDIA nccl-tests (``all_reduce_perf``; ``doc/PERFORMANCE.md``). The table has
nccl-tests' header and columns: size (B), count (elements), type, redop, root (−1 for
an all-reduce), then for out-of-place and in-place runs the time (µs), ``algbw = S/t``
and ``busbw = algbw·2(n−1)/n`` in decimal GB/s, and ``#wrong``: output elements that
differ from numpy's reduction of the inputs (inputs are small integers, so every
algorithm must be exact). The last line is ``# Avg bus bandwidth`` over every row and
both placements. Unlike nccl-tests, ``-n`` is the number of devices (``--iters`` the
iterations); ``--time simulated`` reports the simulated clock's time on the default
machine (deterministic, for docs) instead of the measured wall time. ``--compare``
prints, per algorithm, the α-β prediction, the simulated time and the wall time of
the largest size. Settings out of range (``-n 0``, ``-b`` > ``-e``, ``--iters 0``,
``--num-subchunks`` above the smallest size's elements per chunk …) are usage errors (exit
status 2) naming the flag and its range, before anything runs (:func:`check_options`).

Inside an MPI job of more than one rank (:mod:`dfcore.launch`), the devices are the ranks
(``-n`` and ``--time`` are ignored): per size it measures, alternately, dfcore's
``--algo`` over MPI point-to-point (:func:`dfcore.mpi.collectives.all_reduce`, no trace)
and ``MPI.Allreduce`` (:func:`~dfcore.mpi.collectives.mpi_allreduce`), both out of place;
a time is the slowest rank's mean over ``--iters`` calls after a barrier; ``#wrong``
sums every rank's wrong elements; ``ratio`` is dfcore's time over MPI's. Rank 0 prints.
"""

import argparse
import functools
import os
import time

import numpy as np

from ..distribute import all_reduce
from ..distribute.arguments import check_count
from ..distribute.schedules import ALGORITHMS, max_subchunks

_TYPES = {"half": np.float16, "float": np.float32, "double": np.float64}
_REDOPS = {"sum": "sum", "avg": "mean", "max": "max"}
#: The command-line flag of each checked argument, for :func:`check_options`' messages.
FLAGS = {"min_bytes": "-b/--minbytes", "max_bytes": "-e/--maxbytes", "factor": "-f/--stepfactor",
         "devices": "-n/--devices", "iters": "--iters", "warmup": "-w/--warmup_iters",
         "num_subchunks": "--num-subchunks"}
HEADER = (
    "#                                                              out-of-place                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)")


def parse_size(text):
    """``"1K"`` → 1024, ``"16M"`` → 16·2^20, ``"1G"``, or plain bytes (nccl-tests' suffixes).

    Raises:
        argparse.ArgumentTypeError: not a number with an optional K/M/G suffix (the range is
            :func:`check_options`' job).
    """
    size = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
    try:
        return int(float(size[:-1] if scale > 1 else size) * scale)
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"expected a size in bytes with an optional K, M or G suffix, "
                                         f"got {text!r}") from None


def check_options(min_bytes, max_bytes, factor, devices, algorithm="ring", itemsize=4, iters=1, warmup=0,
                  num_subchunks=1, names=None):
    """Check the table's settings before anything runs (:func:`run`, :func:`run_mpi` and the CLI call it).

    ``min_bytes`` ≥ 1 and ≤ ``max_bytes``; ``factor`` ≥ 1 (1: one row); ``devices`` (ranks),
    ``iters`` ≥ 1; ``warmup`` ≥ 0; ``num_subchunks`` in ``[1, max_subchunks]`` of the smallest
    size (:func:`dfcore.distribute.schedules.max_subchunks`). ``names`` maps an argument to the
    name the message uses (the CLI passes :data:`FLAGS`).

    Raises:
        TypeError: a non-integer. ValueError: a value out of range, naming it and the range.
    """
    names = names or {}

    def label(argument):
        return names.get(argument, argument)

    check_count(label("min_bytes"), min_bytes, 1)
    check_count(label("max_bytes"), max_bytes, min_bytes, why=f"(the largest size, at least {label('min_bytes')})")
    check_count(label("factor"), factor, 1, why="(1 gives one row)")
    check_count(label("devices"), devices, 1)
    check_count(label("iters"), iters, 1)
    check_count(label("warmup"), warmup, 0)
    count = min_bytes // itemsize
    check_count(label("num_subchunks"), num_subchunks, 1, max_subchunks(algorithm, devices, count),
                why=f"for the smallest size ({count} elements) on {devices} ranks with {algorithm} "
                    "(at most one segment per element of a chunk)")


def message_sizes(min_bytes, max_bytes, factor, itemsize):
    """``(element count, bytes)`` per row of the table: ``min_bytes`` times ``factor`` up to ``max_bytes``
    (nccl-tests' ``-b``/``-e``/``-f``; ``factor`` 1 gives one row)."""
    size = min_bytes
    while size <= max_bytes:
        count = size // itemsize
        yield count, count * itemsize
        size = size * factor if factor > 1 else max_bytes + 1


def bus_bandwidth(algbw, n):
    """nccl-tests' all-reduce bus bandwidth: ``algbw · 2(n−1)/n``."""
    return algbw * 2 * (n - 1) / n


def inputs_for(count, n, dtype):
    """Rank r's input: element i is ``(r + i) mod 8`` (sums are exact in every float type)."""
    base = np.arange(count, dtype=np.int64)
    return [((base + r) % 8).astype(dtype) for r in range(n)]


def count_wrong(outputs, inputs, reduction):
    """Elements of ``outputs`` (all ranks) that differ from numpy's reduction of ``inputs``."""
    stacked = np.stack([x.astype(np.float64) for x in inputs])
    ref = {"sum": stacked.sum(0), "mean": stacked.mean(0), "max": stacked.max(0)}[reduction]
    ref = ref.astype(inputs[0].dtype)
    return int(sum(np.count_nonzero(o.reshape(-1) != ref) for o in outputs))


def measure(count, n, dtype, algorithm, reduction, in_place, iters, warmup, use_simulated, **kwargs):
    """``(time_s per call, #wrong)`` of one size and placement."""
    inputs = inputs_for(count, n, dtype)
    total, wrong, sim = 0.0, 0, 0.0
    for i in range(warmup + iters):
        values = [x.copy() for x in inputs] if in_place else inputs
        start = time.perf_counter()
        result = all_reduce(values, algorithm=algorithm, reduction=reduction, trace=False, in_place=in_place,
                            **kwargs)
        elapsed = time.perf_counter() - start
        if i >= warmup:
            total += elapsed
            sim = result.simulated_time_s
        if i == warmup:
            wrong = count_wrong(result.outputs, inputs, reduction)
    return (sim if use_simulated else total / iters), wrong


def format_time_us(us):
    """nccl-tests' time column: more decimals for shorter times."""
    return f"{us:7.0f}" if us >= 10000 else f"{us:7.1f}" if us >= 100 else f"{us:7.2f}"


def run(min_bytes, max_bytes, factor, devices, algorithm, type_name="float", redop="sum", iters=20, warmup=5,
        time_mode="wall", num_subchunks=1, out=print):
    """Print the table; return the average bus bandwidth (GB/s).

    Raises:
        TypeError, ValueError: as :func:`check_options`; KeyError: an unknown type or redop.
    """
    dtype = _TYPES[type_name]
    itemsize = np.dtype(dtype).itemsize
    reduction = _REDOPS[redop]
    check_options(min_bytes, max_bytes, factor, devices, algorithm, itemsize, iters, warmup, num_subchunks)
    out(f"# dfcore all_reduce: algorithm {algorithm}, {devices} devices (simulated GPUs), time {time_mode}, "
        f"iters {iters}, warmup {warmup}, num_subchunks {num_subchunks}")
    out("#")
    out(HEADER)
    busbws = []
    for count, nbytes in message_sizes(min_bytes, max_bytes, factor, itemsize):
        row = f"{nbytes:12d}  {count:12d}  {type_name:>8}  {redop:>6}  {-1:6d}"
        for in_place in (False, True):
            t, wrong = measure(count, devices, dtype, algorithm, reduction, in_place, iters, warmup,
                               time_mode == "simulated", num_subchunks=num_subchunks)
            algbw = nbytes / 1e9 / t if t > 0 else 0.0
            busbw = bus_bandwidth(algbw, devices)
            busbws.append(busbw)
            row += f"  {format_time_us(t * 1e6)}  {algbw:6.2f}  {busbw:6.2f}  {wrong:5d}"
        out(row)
    average = sum(busbws) / len(busbws) if busbws else 0.0
    out(f"# Avg bus bandwidth    : {average:g}")
    out("#")
    return average


def compare(nbytes, devices, type_name="float", redop="sum", iters=5, out=print):
    """Per algorithm: α-β prediction, simulated time and wall time (µs) of one all-reduce of ``nbytes``.

    Raises:
        TypeError, ValueError: as :func:`check_options` (``nbytes`` ≥ 1, ``devices`` and ``iters`` ≥ 1).
    """
    dtype = _TYPES[type_name]
    check_options(nbytes, nbytes, 1, devices, itemsize=np.dtype(dtype).itemsize, iters=iters)
    count = nbytes // np.dtype(dtype).itemsize
    inputs = inputs_for(count, devices, dtype)
    out(f"# {count * np.dtype(dtype).itemsize} B per device, {devices} devices: predicted (alpha-beta), "
        "simulated and wall time (us)")
    out(f"# {'algorithm':>28}  {'predicted':>10}  {'simulated':>10}  {'wall':>10}")
    for algorithm in ALGORITHMS:
        walls = []
        for _ in range(iters):
            start = time.perf_counter()
            result = all_reduce(inputs, algorithm=algorithm, reduction=_REDOPS[redop], trace=False)
            walls.append(time.perf_counter() - start)
        out(f"  {algorithm:>28}  {result.predicted_time_s * 1e6:10.1f}  {result.simulated_time_s * 1e6:10.1f}  "
            f"{float(np.median(walls)) * 1e6:10.1f}")


MPI_HEADER = (
    "#                                                            dfcore over MPI                    MPI.Allreduce\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong   ratio\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"
    "         (x)")


def _mpi_comm():
    """dfcore's communicator when this process is a rank of a multi-rank MPI job, else None (no mpi4py import)."""
    from ..mpi.world import in_mpi_job

    if not (in_mpi_job() or os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("PMI_SIZE")):
        return None
    from ..mpi.world import world

    comm = world()[0]
    return comm if comm.Get_size() > 1 else None


def _time_mpi(comm, fn, iters, warmup):
    """``(slowest rank's mean seconds per call, last output)``."""
    for _ in range(warmup):
        fn()
    comm.Barrier()
    start = time.perf_counter()
    for _ in range(iters):
        out = fn()
    return comm.allreduce((time.perf_counter() - start) / iters, op=_mpi_max()), out


def _mpi_max():
    from mpi4py import MPI

    return MPI.MAX


def _wrong_on_rank(out, count, n, dtype, reduction):
    """Wrong elements of this rank's ``out`` (inputs as :func:`inputs_for`, reference built one rank at a time)."""
    base = np.arange(count, dtype=np.int64)
    parts = ((base + r) % 8 for r in range(n))
    ref = np.maximum.reduce(list(parts)) if reduction == "max" else np.add.reduce(list(parts)).astype(np.float64)
    ref = (ref / n if reduction == "mean" else ref).astype(dtype)
    return int(np.count_nonzero(out.reshape(-1) != ref))


def run_mpi(comm, min_bytes, max_bytes, factor, algorithm, type_name="float", redop="sum", iters=20, warmup=5,
            num_subchunks=1, out=print):
    """Print (rank 0) the MPI table of dfcore's ``algorithm`` vs ``MPI.Allreduce``; return rank 0's average busbw
    of dfcore's rows (None on other ranks). Collective: call on every rank; raises as :func:`run`."""
    from ..mpi.collectives import all_reduce as mpi_all_reduce, mpi_allreduce

    dtype = _TYPES[type_name]
    itemsize = np.dtype(dtype).itemsize
    reduction = _REDOPS[redop]
    rank, n = comm.Get_rank(), comm.Get_size()
    check_options(min_bytes, max_bytes, factor, n, algorithm, itemsize, iters, warmup, num_subchunks)
    say = out if rank == 0 else (lambda text: None)
    say(f"# dfcore all_reduce over MPI: algorithm {algorithm}, {n} ranks, iters {iters}, warmup {warmup}, "
        f"num_subchunks {num_subchunks}; reference MPI.Allreduce")
    say("#")
    say(MPI_HEADER)
    busbws = []
    for count, nbytes in message_sizes(min_bytes, max_bytes, factor, itemsize):
        mine = ((np.arange(count, dtype=np.int64) + rank) % 8).astype(dtype)
        ours = functools.partial(mpi_all_reduce, mine, comm, algorithm, reduction, num_subchunks, trace=False)
        theirs = functools.partial(mpi_allreduce, mine, comm, reduction)
        row = f"{nbytes:12d}  {count:12d}  {type_name:>8}  {redop:>6}  {-1:6d}"
        times, rates = [], []
        for fn in (ours, theirs):
            t, result = _time_mpi(comm, fn, iters, warmup)
            wrong = comm.allreduce(_wrong_on_rank(result, count, n, dtype, reduction))
            algbw = nbytes / 1e9 / t if t > 0 else 0.0
            times.append(t)
            rates.append(bus_bandwidth(algbw, n))
            row += f"  {format_time_us(t * 1e6)}  {algbw:6.2f}  {rates[-1]:6.2f}  {wrong:5d}"
        busbws.append(rates[0])
        say(row + f"  {times[0] / times[1] if times[1] > 0 else float('nan'):6.2f}")
    average = sum(busbws) / len(busbws) if busbws else 0.0
    say(f"# Avg bus bandwidth (dfcore)   : {average:g}")
    say("#")
    return average if rank == 0 else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-b", "--minbytes", type=parse_size, default="32M")
    parser.add_argument("-e", "--maxbytes", type=parse_size, default="32M")
    parser.add_argument("-f", "--stepfactor", type=int, default=2)
    parser.add_argument("-n", "--devices", type=int, default=None,
                        help="number of devices (ranks); default 4 (cupy: one per GPU, or 4 logical GPUs on one)")
    parser.add_argument("--algo", "--algorithm", dest="algo", default="ring", choices=ALGORITHMS)
    parser.add_argument("-d", "--datatype", default="float", choices=sorted(_TYPES))
    parser.add_argument("-o", "--op", default="sum", choices=sorted(_REDOPS))
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("-w", "--warmup_iters", type=int, default=5)
    parser.add_argument("--num-subchunks", type=int, default=1)
    parser.add_argument("--time", default="wall", choices=("wall", "simulated"))
    parser.add_argument("--compare", action="store_true", help="also compare the algorithms at the largest size")
    parser.add_argument("--backend", default="numpy", choices=("numpy", "cupy"),
                        help="cupy: real GPUs with cupy arrays, NCCL as the reference (-n: ranks, default one per "
                             "GPU, or 4 logical GPUs on one)")
    args = parser.parse_args(argv)
    if args.backend == "cupy":
        from .gpu_all_reduce import run_gpu

        try:
            run_gpu(args.minbytes, args.maxbytes, args.stepfactor, args.devices, args.algo, args.datatype, args.op,
                    args.iters, args.warmup_iters, args.num_subchunks)
        except (TypeError, ValueError) as error:
            parser.error(str(error))
        return
    args.devices = 4 if args.devices is None else args.devices
    comm = _mpi_comm()
    ranks = args.devices if comm is None else comm.Get_size()
    try:
        check_options(args.minbytes, args.maxbytes, args.stepfactor, ranks, args.algo,
                      np.dtype(_TYPES[args.datatype]).itemsize, args.iters, args.warmup_iters, args.num_subchunks,
                      FLAGS)
    except (TypeError, ValueError) as error:
        parser.error(str(error))
    if comm is not None:
        run_mpi(comm, args.minbytes, args.maxbytes, args.stepfactor, args.algo,
                args.datatype, args.op, args.iters, args.warmup_iters, args.num_subchunks)
        return
    run(args.minbytes, args.maxbytes, args.stepfactor, args.devices, args.algo,
        args.datatype, args.op, args.iters, args.warmup_iters, args.time, args.num_subchunks)
    if args.compare:
        compare(args.maxbytes, args.devices, args.datatype, args.op)


if __name__ == "__main__":
    main()
