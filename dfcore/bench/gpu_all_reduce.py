"""nccl-tests-style all-reduce benchmark on real GPUs: dfcore's collective on cupy arrays next to NCCL's.

Run: ``python -m dfcore.bench.all_reduce --backend cupy [-b 1M -e 256M -f 4] [-n RANKS] [--algo ring]``.
Source: NVIDIA nccl-tests (``all_reduce_perf``, ``doc/PERFORMANCE.md``: ``algbw = S/t``,
``busbw = algbw·2(n−1)/n``) and CUDA's ``bandwidthTest`` (device-to-device copy bandwidth).

Ranks: one per GPU when several are visible, else ``-n`` logical GPUs on GPU 0 (4 by default), as
``GPUOptions.Experimental.virtual_devices`` would give; rank r runs on GPU ``r mod #GPUs``. Inputs are made on
the GPUs (element i of rank r is ``(r + i) mod 8``, so every sum is exact). Per size the table gives, out of
place, dfcore's time, algbw, busbw and ``#wrong`` — elements differing from NCCL's result where NCCL ran,
else from the exact sum made on the GPU — then NCCL's own columns (its ``#wrong`` against the exact sum),
and the ratio of the times. NCCL allows one rank per GPU, so with ranks sharing a GPU it has nothing to
reduce across; the table says so, and the limit to compare the ring with is the GPU's device-to-device copy
bandwidth, printed below it. A time is the mean over ``--iters`` calls after ``-w`` warm-up calls, the
devices synchronised before and after (each dfcore call also ends synchronised).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..runtime import real_gpus
from .all_reduce import bus_bandwidth, format_time_us, message_sizes, parse_size

GPU_HEADER = (
    "#                                                          dfcore (cupy)                          NCCL\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong   ratio\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"
    "         (x)")
NO_GPU = ("This measurement needs a CUDA GPU with cupy; this machine has none in use (cupy missing, no device "
          "visible, or DFCORE_SIMULATED_GPUS=1), so nothing was measured. On a GPU machine it prints, per message "
          "size, the bus bandwidth (busbw, GB/s) dfcore's ring all-reduce reaches on the real GPU(s), next to "
          "the busbw the simulated clock gives the lesson's machine (four Tesla K20m on PCIe 2.0), and NCCL's "
          "busbw where several GPUs take part.")


def placement(num_ranks: int | None, gpus: Sequence[real_gpus.PhysicalGpu]) -> list[int]:
    """The GPU (CUDA ordinal) of each rank: one rank per GPU by default when there are several, else four
    logical GPUs on GPU 0; rank r on GPU ``r mod #GPUs``."""
    if num_ranks is None:
        num_ranks = len(gpus) if len(gpus) > 1 else 4
    return [gpus[r % len(gpus)].platform_id for r in range(num_ranks)]


def make_inputs(count: int, ids: Sequence[int], dtype: Any) -> list[Any]:
    """Rank r's input on GPU ``ids[r]``: element i is ``(r + i) mod 8``."""
    cupy = real_gpus.optional_cupy()

    inputs = []
    for r, pid in enumerate(ids):
        with cupy.cuda.Device(pid):
            inputs.append(((cupy.arange(count, dtype=cupy.int64) + r) % 8).astype(dtype))
    return inputs


def exact_result(inputs: Sequence[Any], reduction: str) -> Any:
    """The exact reduction of ``inputs``, made in float64 on the GPU of ``inputs[0]``."""
    cupy = real_gpus.optional_cupy()

    from ..distribute.all_reduce_arrays import move

    with cupy.cuda.Device(inputs[0].device.id):
        parts = [move(x, inputs[0]).astype(cupy.float64) for x in inputs]
        stacked = cupy.stack(parts)
        ref = {"sum": stacked.sum(0), "mean": stacked.mean(0), "max": stacked.max(0)}[reduction]
        return ref.astype(inputs[0].dtype)


def count_wrong(outputs: Sequence[Any], reference: Any) -> int:
    """Elements of ``outputs`` (every rank's) that differ from ``reference`` (compared on its GPU)."""
    cupy = real_gpus.optional_cupy()

    from ..distribute.all_reduce_arrays import move

    with cupy.cuda.Device(reference.device.id):
        return int(sum(int(cupy.count_nonzero(move(o, reference).reshape(-1) != reference.reshape(-1)))
                       for o in outputs))


def synchronize(ids: Sequence[int]) -> None:
    cupy = real_gpus.optional_cupy()

    for pid in sorted(set(ids)):
        cupy.cuda.Device(pid).synchronize()


def time_calls(fn: Callable[[], Any], ids: Sequence[int], iters: int, warmup: int) -> tuple[float, Any]:
    """``(mean seconds per call, last result)`` of ``fn``, the GPUs ``ids`` synchronised around the loop."""
    for _ in range(warmup):
        fn()
    synchronize(ids)
    start = time.perf_counter()
    for _ in range(iters):
        result = fn()
    synchronize(ids)
    return (time.perf_counter() - start) / iters, result


def _dfcore_outputs(inputs: Sequence[Any], devices: Sequence[str], algorithm: str = "ring", reduction: str = "sum",
                    num_subchunks: int = 1) -> tuple[Any, ...]:
    from ..distribute import all_reduce

    return all_reduce(inputs, devices, algorithm, reduction, num_subchunks, trace=False).outputs


def copy_bandwidth_GBps(nbytes: int, platform_id: int = 0, iters: int = 20) -> float:
    """Device-to-device copy bandwidth of one GPU (decimal GB/s of bytes copied, one direction; CUDA's
    ``bandwidthTest`` counts read plus write, twice this), timed with CUDA events."""
    cupy = real_gpus.optional_cupy()

    with cupy.cuda.Device(platform_id):
        src, dst = cupy.ones(nbytes, cupy.uint8), cupy.empty(nbytes, cupy.uint8)
        dst.data.copy_from_device(src.data, nbytes)  # warm-up
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(iters):
            dst.data.copy_from_device_async(src.data, nbytes)
        stop.record()
        stop.synchronize()
        seconds = cupy.cuda.get_elapsed_time(start, stop) / 1e3 / iters
    return nbytes / seconds / 1e9


def run_gpu(min_bytes: int, max_bytes: int, factor: int, num_ranks: int | None = None, algorithm: str = "ring",
            type_name: str = "float", redop: str = "sum", iters: int = 20, warmup: int = 5, num_subchunks: int = 1,
            out: Callable[[str], Any] = print) -> float | None:
    """Print the GPU table (see the module doc); return dfcore's average busbw (GB/s), or None without a GPU."""
    from ..distribute.nccl import nccl_all_reduce, nccl_version
    from .all_reduce import _REDOPS, _TYPES, check_options

    gpus = real_gpus.detect_gpus()
    if not gpus:
        out("# " + NO_GPU)
        return None
    dtype = np.dtype(_TYPES[type_name])
    reduction = _REDOPS[redop]
    ids = placement(num_ranks, gpus)
    n = len(ids)
    check_options(min_bytes, max_bytes, factor, n, algorithm, dtype.itemsize, iters, warmup, num_subchunks)
    devices = [f"/device:GPU:{r}" for r in range(n)]
    version = nccl_version()
    distinct = len(set(ids)) == n and n > 1
    out(f"# dfcore all_reduce on real GPUs (cupy): algorithm {algorithm}, {n} ranks on GPUs {ids} "
        f"({', '.join(sorted({g.name for g in gpus}))}), iters {iters}, warmup {warmup}, num_subchunks {num_subchunks}")
    if version is None:
        out("# NCCL: not available (cupy.cuda.nccl found no libnccl); #wrong is checked against the exact sum")
    elif not distinct:
        out(f"# NCCL {version}: {len(set(ids))} GPU(s) for {n} ranks; NCCL allows one rank per GPU, so it has "
            "nothing to reduce across here; #wrong is checked against the exact sum made on the GPU, and the "
            "limit for the ring is the device-to-device copy bandwidth below")
    else:
        out(f"# NCCL {version}: the reference (ncclAllReduce, one communicator per GPU); dfcore's #wrong is "
            "checked against NCCL's result")
    out("#")
    out(GPU_HEADER)
    busbws = []
    for count, nbytes in message_sizes(min_bytes, max_bytes, factor, dtype.itemsize):
        inputs = make_inputs(count, ids, dtype)
        exact = exact_result(inputs, reduction)
        ours_t, ours = time_calls(functools.partial(_dfcore_outputs, inputs, devices, algorithm, reduction,
                                                    num_subchunks), ids, iters, warmup)
        row = f"{nbytes:12d}  {count:12d}  {type_name:>8}  {redop:>6}  {-1:6d}"
        if distinct and version is not None:
            theirs_t, theirs = time_calls(functools.partial(nccl_all_reduce, inputs, reduction), ids, iters, warmup)
            wrong = count_wrong(ours, theirs[0])  # against NCCL's result (its ranks agree: its #wrong below)
            algbw = nbytes / 1e9 / ours_t
            row += f"  {format_time_us(ours_t * 1e6)}  {algbw:6.2f}  {bus_bandwidth(algbw, n):6.2f}  {wrong:5d}"
            algbw_n = nbytes / 1e9 / theirs_t
            row += (f"  {format_time_us(theirs_t * 1e6)}  {algbw_n:6.2f}  {bus_bandwidth(algbw_n, n):6.2f}  "
                    f"{count_wrong(theirs, exact):5d}  {ours_t / theirs_t:6.2f}")
        else:
            algbw = nbytes / 1e9 / ours_t
            row += (f"  {format_time_us(ours_t * 1e6)}  {algbw:6.2f}  {bus_bandwidth(algbw, n):6.2f}  "
                    f"{count_wrong(ours, exact):5d}  {'n/a':>7}  {'':6}  {'':6}  {'':5}  {'':6}")
        busbws.append(bus_bandwidth(algbw, n))
        out(row)
        del inputs, exact, ours
    average = sum(busbws) / len(busbws) if busbws else 0.0
    out(f"# Avg bus bandwidth (dfcore)   : {average:g}")
    copy_bytes = max(max_bytes, 1 << 20)
    for pid in sorted(set(ids)):
        copy_GBps = copy_bandwidth_GBps(copy_bytes, pid)
        out(f"# device-to-device copy bandwidth, GPU {pid} ({copy_bytes} B buffer): {copy_GBps:.1f} GB/s; "
            f"dfcore's busbw at the largest size is {busbws[-1] / copy_GBps:.2f}x of it")
    out("#")
    return average


def gpu_busbw_table(sizes: Sequence[str] = ("1M", "16M", "64M"), num_ranks: int | None = None, iters: int = 5,
                    out: Callable[[str], Any] = print) -> list[dict[str, Any]] | None:
    """Lesson 05's one-cell comparison: per message size, dfcore's ring busbw on the real GPU(s), the
    simulated busbw of the same all-reduce on the lesson's machine (four Tesla K20m on PCIe 2.0, the
    simulated clock) and NCCL's busbw where several GPUs take part. Without a GPU it prints what it would show
    and returns None (never raises for want of one).

    Returns:
        one dict per size: ``nbytes``, ``ranks``, ``real_busbw_GBps``, ``simulated_busbw_GBps``,
        ``nccl_busbw_GBps`` (None where NCCL cannot run), or None without a GPU.
    """
    from ..distribute import all_reduce
    from ..distribute.nccl import nccl_all_reduce, nccl_module

    gpus = real_gpus.detect_gpus()
    if not gpus:
        out(NO_GPU)
        return None
    ids = placement(num_ranks, gpus)
    n = len(ids)
    devices = [f"/device:GPU:{r}" for r in range(n)]
    use_nccl = len(set(ids)) == n and n > 1 and nccl_module() is not None
    out(f"ring all-reduce, {n} ranks on GPUs {ids} ({gpus[0].name}); float32, busbw in GB/s")
    out(f"{'size':>10}  {'real':>8}  {'simulated':>9}  {'NCCL':>8}")
    rows = []
    for size in sizes:
        nbytes = parse_size(size)
        count = nbytes // 4
        inputs = make_inputs(count, ids, np.float32)
        real_t, _ = time_calls(functools.partial(_dfcore_outputs, inputs, devices), ids, iters, 1)
        simulated_t = all_reduce(inputs, devices, trace=False).simulated_time_s
        nccl_t = time_calls(functools.partial(nccl_all_reduce, inputs), ids, iters, 1)[0] if use_nccl else None
        row = {"nbytes": count * 4, "ranks": n, "real_busbw_GBps": bus_bandwidth(count * 4 / 1e9 / real_t, n),
               "simulated_busbw_GBps": bus_bandwidth(count * 4 / 1e9 / simulated_t, n),
               "nccl_busbw_GBps": None if nccl_t is None else bus_bandwidth(count * 4 / 1e9 / nccl_t, n)}
        rows.append(row)
        nccl_text = "n/a" if nccl_t is None else f"{row['nccl_busbw_GBps']:8.2f}"
        out(f"{size:>10}  {row['real_busbw_GBps']:8.2f}  {row['simulated_busbw_GBps']:9.2f}  {nccl_text:>8}")
    if not use_nccl:
        out("NCCL: n/a (it needs one rank per GPU on two or more GPUs; these ranks share a GPU)")
        out(f"the limit here, GPU {ids[0]}'s device-to-device copy bandwidth: "
            f"{copy_bandwidth_GBps(max(parse_size(s) for s in sizes), ids[0]):.1f} GB/s")
    return rows
