"""A per-device allocator: numpy buffers pooled by (shape, dtype) and handed out again once unused.

Source: TF ``core/framework/allocator.h`` (``Allocator``, ``AllocatorStats``: ``num_allocs``,
``bytes_in_use``, ``peak_bytes_in_use``, ``largest_alloc_size``, ``bytes_reserved``) and the way TF's
executor (``core/common_runtime/executor.cc``) drops a tensor once its last consumer has run, so the
BFC allocator (``bfc_allocator.cc``) can hand its memory out again. dfcore pools whole buffers by
``(shape, dtype)`` instead of splitting chunks: in a steady state a step asks for the buffers the last
one gave back, so after warm-up no new memory is allocated.

A buffer goes back to its pool only when nothing else can still see it: :meth:`Allocator.deallocate`
checks CPython's reference count (a view, a fetch, a variable, a queue or the rendezvous holding the
array all count), and that the array owns its memory. A buffer some reader still holds is simply left
to the garbage collector (and counted as freed when it dies).

Small allocations (< :data:`POOL_MIN_BYTES` bytes, 32 MiB) are not pooled: below glibc's largest
dynamic mmap threshold (32 MiB on 64-bit, set from the start by :mod:`dfcore.runtime.heap`) a freed
buffer's memory is handed out again by ``malloc`` without page faults, so a pool only adds its Python cost
(a get and a put, the ``out=`` variant's checks, the executor's hand-back). Measured on the lessons'
2-core machine in CPU time, engines interleaved in one process, against the same engine pooling nothing:
the MLP 784-256-10 step (buffers of 2.5-800 KB) took 1.09x when buffers from 64 KiB up were pooled and
1.04x from 256 KiB up; the sync PS step of 4 workers took 1.19x at 4 MiB and 1.03x at 16 MiB pooled, but
0.75x at 64 MiB (fresh pages fault in there).
Small buffers are handed out with ``np.empty`` and counted in ``num_allocs`` and
``small_allocs`` only (not in the bytes in use). The partition compiler gives a node whose outputs are
statically known to be small its plain kernel (:func:`pooled_shape`), so it pays neither the pool nor the
``out=`` variant's checks.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
import weakref
from typing import Any

import numpy as np

from . import heap


@dataclasses.dataclass(frozen=True)
class AllocatorStats:
    """A snapshot of one allocator's counters (TF ``AllocatorStats``; the last two are dfcore's).

    ``num_allocs``: buffers handed out; ``bytes_in_use``: bytes handed out and still alive outside the
    pool; ``peak_bytes_in_use``: its maximum so far; ``largest_alloc_size``: the largest buffer handed out;
    ``bytes_reserved``: bytes the allocator holds in its pools (free for reuse); ``new_buffers``: pooled
    buffers made with ``np.empty``; ``reuse_hits``: buffers served from a pool; ``small_allocs``: small
    allocations (< :data:`POOL_MIN_BYTES` bytes), not pooled (``np.empty`` each time).
    """

    num_allocs: int = 0
    bytes_in_use: int = 0
    peak_bytes_in_use: int = 0
    largest_alloc_size: int = 0
    bytes_reserved: int = 0
    new_buffers: int = 0
    reuse_hits: int = 0
    small_allocs: int = 0


POOL_MIN_BYTES = heap.MMAP_BYTES
"""Buffers smaller than this many bytes are not pooled (see the module docstring)."""


def pooled_shape(shape: tuple[int, ...], dtype: Any) -> bool:
    """Whether a buffer of ``shape`` (ints) and ``dtype`` (a numpy dtype) is large enough to be pooled."""
    return math.prod(shape) * np.dtype(dtype).itemsize >= POOL_MIN_BYTES


def _callers_refs() -> int:
    """What ``sys.getrefcount`` reports inside :meth:`Allocator.deallocate` for an array its caller holds
    once (measured, so the check does not depend on how this CPython counts a call's arguments)."""

    def deallocate(buf):
        return sys.getrefcount(buf)

    buf = np.empty(1)
    return deallocate(buf)


_ONE_HOLDER = _callers_refs()


class Allocator:
    """Buffers of one device, pooled by ``(shape, dtype)``.

    Thread-safe without a lock: a pool is a list whose ``pop``/``append`` are atomic; the counters may miss
    an update when two threads allocate on one device at the same instant (they are statistics).

    Args:
        name: TF's allocator name of the device (``"cpu"``, ``"GPU_0_bfc"`` …).
    """

    def __init__(self, name: str) -> None:
        heap.hold_heap()  # the C heap keeps the small buffers' pages (dfcore.runtime.heap)
        self.name = name
        self._free: dict[tuple[tuple[int, ...], np.dtype], list[np.ndarray]] = {}
        self._out: set[int] = set()  # ids of the buffers handed out and not given back
        self._lock = threading.Lock()  # for _died (the garbage collector's thread)
        self.num_allocs = self.new_buffers = self.reuse_hits = self.small_allocs = 0
        self.bytes_in_use = self.peak_bytes_in_use = self.largest_alloc_size = self.bytes_reserved = 0

    def allocate(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An uninitialized C-contiguous array of ``shape`` (a tuple) and ``dtype`` (a numpy dtype): one from
        the pool if any (a small one: a fresh one, see the module docstring)."""
        if math.prod(shape) * dtype.itemsize < POOL_MIN_BYTES:
            self.num_allocs += 1
            self.small_allocs += 1
            return np.empty(shape, dtype)
        free = self._free.get((shape, dtype))
        try:
            buf = free.pop()  # type: ignore[union-attr]
        except (AttributeError, IndexError):
            buf = np.empty(shape, dtype)
            self.new_buffers += 1
            weakref.finalize(buf, self._died, id(buf), buf.nbytes)
            if buf.nbytes > self.largest_alloc_size:
                self.largest_alloc_size = buf.nbytes
        else:
            self.reuse_hits += 1
            self.bytes_reserved -= buf.nbytes
        self._out.add(id(buf))
        self.num_allocs += 1
        self.bytes_in_use += buf.nbytes
        if self.bytes_in_use > self.peak_bytes_in_use:
            self.peak_bytes_in_use = self.bytes_in_use
        return buf

    def deallocate(self, buf: Any, held: int = 1) -> bool:
        """Give ``buf`` back to its pool if this allocator handed it out and nothing but its caller (holding
        ``held`` references) can see it (or ``buf`` is a view of such a buffer that nothing else holds: then
        that buffer goes back); returns whether a buffer was pooled (else nothing happens)."""
        if type(buf) is not np.ndarray or sys.getrefcount(buf) != _ONE_HOLDER + held - 1:
            return False
        base = buf.base
        if base is not None:  # a view (a Reshape's output) nobody holds: its base, if only the view holds it
            if type(base) is not np.ndarray or sys.getrefcount(base) != _ONE_HOLDER:
                return False
            buf = base
        out = self._out
        if id(buf) not in out:  # not one of this allocator's (a kernel made it): left alone
            return False
        out.discard(id(buf))
        self.bytes_in_use -= buf.nbytes
        self.bytes_reserved += buf.nbytes
        key = (buf.shape, buf.dtype)
        free = self._free.get(key)
        if free is None:
            free = self._free.setdefault(key, [])
        free.append(buf)
        return True

    def _died(self, buf_id: int, nbytes: int) -> None:
        with self._lock:
            if buf_id in self._out:
                self._out.discard(buf_id)
                self.bytes_in_use -= nbytes

    def stats(self) -> AllocatorStats:
        """A snapshot of the counters."""
        return AllocatorStats(self.num_allocs, self.bytes_in_use, self.peak_bytes_in_use, self.largest_alloc_size,
                              self.bytes_reserved, self.new_buffers, self.reuse_hits, self.small_allocs)
