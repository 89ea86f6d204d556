"""The C heap under the device allocators: glibc's malloc told once to keep what a step gives back.

Source: glibc's ``malloc/malloc.c`` (``M_MMAP_THRESHOLD``, ``M_TRIM_THRESHOLD``, and their dynamic
adjustment: freeing a chunk that was mmapped raises the mmap threshold to its size, at most
``DEFAULT_MMAP_THRESHOLD_MAX``, 32 MiB on 64-bit, and the trim threshold to twice that); TF's BFC allocator
(``core/common_runtime/bfc_allocator.cc``) keeps the regions it got from the system for the same reason.

Buffers under :data:`~dfcore.runtime.allocator.POOL_MIN_BYTES` (32 MiB) come from ``malloc`` (see
:mod:`dfcore.runtime.allocator`). With glibc's starting thresholds (128 KiB) a step's transient arrays of a
few hundred KiB alternate between fresh mappings and a heap whose top is given back to the system after
each step, and every page of them faults in again on its first write: measured on the conv step of issue 32
(batch 32, 16x16, conv 16/32), 256 minor page faults per step and some 10-20% of its CPU time. Setting
both thresholds at once to the values glibc's own adjustment ends at (mmap at 32 MiB, trim at 64 MiB) keeps
those pages: 0 faults per step. Memory stays bounded: at most :data:`TRIM_BYTES` free bytes are kept at
the heap's top. On a C library other than glibc nothing is changed.

numpy asks the kernel for transparent huge pages on every array of 4 MiB or more (``madvise(MADV_HUGEPAGE)``,
``numpy/_core/src/multiarray/alloc.c``); where the kernel's THP ``defrag`` setting is ``madvise`` (a common
default) each first touch of such a 2 MiB page may compact memory synchronously. Measured on issue 32's
deep-MNIST program (first run of a 500-image evaluation, buffers of 12-50 MiB): 2,447 faults took 1.66 s of
system time with the advice, 43,328 ordinary faults 0.06 s without it; steady-state steps the same (75 ms).
So :func:`hold_heap` also turns that advice off, unless ``NUMPY_MADVISE_HUGEPAGE`` is set (numpy's own
switch, which then decides). TF's allocator gives no such advice.
"""

from __future__ import annotations

import ctypes
import os
import threading

MMAP_BYTES = 32 << 20
"""Allocations from this many bytes up get their own mapping (glibc's largest dynamic mmap threshold)."""
TRIM_BYTES = 64 << 20
"""Free bytes at the heap's top beyond which glibc gives memory back to the system (twice the above)."""

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
_lock = threading.Lock()
_held: bool | None = None


def hold_heap() -> bool:
    """Set glibc's mmap and trim thresholds to :data:`MMAP_BYTES` and :data:`TRIM_BYTES` and turn numpy's
    huge-page advice off, once per process (later calls return the first answer). Returns True when the
    thresholds were set, False on another C library (or if ``mallopt`` refused)."""
    global _held
    with _lock:
        if _held is None:
            _held = _set_thresholds()
            _no_huge_page_advice()
        return _held


def _no_huge_page_advice() -> None:
    """Turn numpy's ``MADV_HUGEPAGE`` advice off (see the module docstring), unless the user chose with
    ``NUMPY_MADVISE_HUGEPAGE``."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray  # type: ignore[no-redef]
    setter = getattr(multiarray, "_set_madvise_hugepage", None)
    if setter is not None:
        setter(False)


def _set_thresholds() -> bool:
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return False
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, ValueError, AttributeError):  # no such name (not glibc), or no C library to load
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_BYTES))
