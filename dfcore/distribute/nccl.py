"""NCCL's all-reduce through ``cupy.cuda.nccl``: the reference all-reduce on real GPUs (as ``MPI.Allreduce``
is over MPI ranks).

Source: NVIDIA NCCL documentation (``ncclCommInitAll``, ``ncclAllReduce``, ``ncclGroupStart``/``ncclGroupEnd``:
one thread driving several GPUs must group their calls) and CuPy's ``cupy.cuda.nccl`` wrapper
(``NcclCommunicator.initAll``). NCCL allows one rank per GPU in a communicator ("Duplicate GPU detected"
when two ranks share one), so it reduces across *distinct* GPUs only: on one GPU it has nothing to reduce
across, which :func:`nccl_all_reduce` reports as a ``ValueError``.

Imports cupy when called, never at import.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from ..runtime import real_gpus

#: dfcore's reduction names -> NCCL's ``ncclRedOp_t`` attribute names in ``cupy.cuda.nccl``.
_OPS = {"sum": "NCCL_SUM", "max": "NCCL_MAX", "mean": "NCCL_AVG"}
#: numpy dtype names -> ``ncclDataType_t`` attribute names.
_TYPES = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64"}


def nccl_module() -> Any:
    """``cupy.cuda.nccl`` when cupy and the NCCL library are there, else None."""
    try:
        from cupy.cuda import nccl
    except ImportError:  # cupy missing
        return None
    except Exception:  # cupy built without NCCL, or libnccl not found
        return None
    return nccl if getattr(nccl, "available", True) else None


def nccl_version() -> str | None:
    """NCCL's version as ``"2.21.5"``, or None without NCCL."""
    nccl = nccl_module()
    if nccl is None:
        return None
    code = int(nccl.get_version())  # NCCL_VERSION_CODE: major·10000 + minor·100 + patch (since 2.9)
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


@functools.lru_cache(maxsize=8)
def communicators(platform_ids: tuple[int, ...]) -> tuple[Any, ...]:
    """One NCCL communicator per GPU of ``platform_ids`` (rank r on GPU ``platform_ids[r]``), made once
    (``ncclCommInitAll``) and kept for the process."""
    return tuple(nccl_module().NcclCommunicator.initAll(list(platform_ids)))


def nccl_all_reduce(values: Sequence[Any], reduction: str = "sum") -> list[Any]:
    """All-reduce one cupy array per GPU with NCCL, out of place; returns one output per input, on its GPU,
    after the GPUs have finished.

    Args:
        values: cupy arrays of one shape and dtype (float16/32/64), each on a different GPU.
        reduction: ``"sum"``, ``"mean"`` (NCCL's ``ncclAvg``) or ``"max"``.

    Raises:
        RuntimeError: NCCL is not available.
        ValueError: two arrays on one GPU (NCCL allows one rank per GPU), different shapes, an unknown
            reduction.
        TypeError: different or unsupported dtypes.
    """
    nccl = nccl_module()
    if nccl is None:
        raise RuntimeError("NCCL is not available (cupy.cuda.nccl could not be imported or found no libnccl)")
    cupy = real_gpus.optional_cupy()

    if reduction not in _OPS:
        raise ValueError(f"reduction must be one of {sorted(_OPS)}, got {reduction!r}")
    ids = tuple(int(v.device.id) for v in values)
    if len(set(ids)) != len(ids):
        raise ValueError(f"NCCL allows one rank per GPU, but the tensors are on GPUs {list(ids)}; NCCL has "
                         "nothing to reduce across on one GPU")
    first = values[0]
    if first.dtype.name not in _TYPES:
        raise TypeError(f"nccl_all_reduce supports float16, float32 and float64; got {first.dtype}")
    for i, v in enumerate(values):
        if v.dtype != first.dtype or v.shape != first.shape:
            raise (TypeError if v.dtype != first.dtype else ValueError)(
                f"All tensors of an all-reduce must have one shape and dtype: tensor 0 is {first.dtype}"
                f"{list(first.shape)}, tensor {i} is {v.dtype}{list(v.shape)}")
    comms = communicators(ids)
    divide = reduction == "mean" and not hasattr(nccl, "NCCL_AVG")  # NCCL < 2.10 has no ncclAvg: sum, divide
    datatype = getattr(nccl, _TYPES[first.dtype.name])
    op = getattr(nccl, _OPS["sum" if divide else reduction])
    inputs, outputs = [], []
    for v in values:
        with cupy.cuda.Device(v.device.id):
            inputs.append(cupy.ascontiguousarray(v))
            outputs.append(cupy.empty_like(inputs[-1]))
    nccl.groupStart()
    try:
        for comm, x, out in zip(comms, inputs, outputs):
            with cupy.cuda.Device(x.device.id):
                comm.allReduce(x.data.ptr, out.data.ptr, x.size, datatype, op,
                               cupy.cuda.get_current_stream().ptr)
    finally:
        nccl.groupEnd()
    for x in outputs:
        with cupy.cuda.Device(x.device.id):
            if divide:
                x /= len(outputs)
            cupy.cuda.Device(x.device.id).synchronize()
    return outputs
