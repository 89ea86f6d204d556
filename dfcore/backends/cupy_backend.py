"""The cupy backend: tensors of real CUDA GPUs, copies between the host and the GPUs and between GPUs, and
CUDA-event kernel timing.

Source: CuPy's documentation (``cupy.cuda.Device``, ``cupy.cuda.Event``, ``cupy.cuda.get_elapsed_time``,
``cupy.cuda.runtime.deviceCanAccessPeer``/``deviceEnablePeerAccess``/``memcpyPeer``) and the CUDA runtime
API; ``array-api-compat``'s ``array_api_compat.cupy`` namespace. See :mod:`dfcore.backends` for the contract.

Importing this module imports cupy: the backend registry imports it only for a device whose backend is
``"cupy"`` (a real GPU, :mod:`dfcore.runtime.real_gpus`), so a CPU run never does.

A kernel runs on the current CUDA device, which the executor sets from the device's
``platform_device_id`` (:meth:`CupyBackend.device_scope`); ``from_host`` allocates there. Host↔device
copies are ``cupy.asarray`` and ``ndarray.get`` (pageable memory: a pinned staging buffer would add a host
copy of its own per transfer, as the CUDA driver's staging already does, so it buys nothing for these
one-shot copies). Copies between two boards use ``cudaMemcpyPeer`` after enabling peer access where
``deviceCanAccessPeer`` allows it (else the driver stages the copy through the host).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from typing import Any

import array_api_compat.cupy as xp
import cupy
import numpy as np

_KINDS = frozenset("biufc")  # numeric and bool numpy kinds: what a GPU array holds
_peer_lock = threading.Lock()
_peers_enabled: set[tuple[int, int]] = set()


class CupyBackend:
    """Arrays are ``cupy.ndarray`` on the current CUDA device; numpy values of other dtypes (strings,
    objects) stay numpy on the host."""

    name = "cupy"
    xp = xp
    supports_out = False

    def from_host(self, value: Any) -> Any:
        value = np.asarray(value)
        if value.dtype.kind not in _KINDS:
            return value
        return cupy.asarray(value)

    def to_host(self, value: Any) -> np.ndarray:
        return value.get() if isinstance(value, cupy.ndarray) else np.asarray(value)

    def is_native(self, value: Any) -> bool:
        return isinstance(value, cupy.ndarray)

    def dtype(self, np_dtype: Any) -> Any:
        return np.dtype(np_dtype)

    def matmul(self, a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False) -> Any:
        # cuBLAS takes a transposed view's strides as its transpose flag: no copy
        return cupy.matmul(cupy.swapaxes(a, -1, -2) if transpose_a else a,
                           cupy.swapaxes(b, -1, -2) if transpose_b else b)

    def quiet(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()  # CUDA kernels never trap on inf/nan

    def take_columns(self, x: Any, columns: Any) -> Any:
        return x[cupy.arange(x.shape[0]), cupy.asarray(columns)]

    def add_to_columns(self, x: Any, columns: Any, value: float) -> Any:
        x[cupy.arange(x.shape[0]), cupy.asarray(columns)] += value  # one column per row: no repeated index
        return x

    def divide(self, x: Any, y: Any) -> Any:
        return cupy.divide(x, y)  # CUDA kernels never trap on inf/nan

    def reducer(self, name: str) -> Any:
        return getattr(xp, name)

    def reshape(self, x: Any, shape: tuple[int, ...]) -> Any:
        return cupy.reshape(x, shape)

    def multiply_mask(self, x: Any, mask: Any) -> Any:
        return x * mask.astype(x.dtype)

    # -- beyond the contract: devices, copies and timing ---------------------------------------------
    def device_scope(self, platform_device_id: int) -> contextlib.AbstractContextManager[Any]:
        """The CUDA device ``platform_device_id`` as the current device of this thread (kernels and
        ``from_host`` allocate there)."""
        return cupy.cuda.Device(platform_device_id)

    def platform_id_of(self, value: Any) -> int:
        """The CUDA ordinal of the device holding ``value``."""
        return int(value.device.id)

    def copy_to_device(self, value: Any, platform_device_id: int) -> Any:
        """A copy of ``value`` (a cupy array) on device ``platform_device_id``: a device-to-device copy on
        one board, a peer copy (``cudaMemcpyPeer``, peer access enabled where possible) between two."""
        src = self.platform_id_of(value)
        if src == platform_device_id:
            with cupy.cuda.Device(src):
                return value.copy()
        enable_peer_access(platform_device_id, src)
        with cupy.cuda.Device(src):
            value = cupy.ascontiguousarray(value)
        with cupy.cuda.Device(platform_device_id):
            out = cupy.empty(value.shape, value.dtype)
            if value.nbytes:
                cupy.cuda.runtime.memcpyPeer(out.data.ptr, platform_device_id, value.data.ptr, src, value.nbytes)
        return out

    def kernel_timer(self) -> KernelTimer:
        """A :class:`KernelTimer` for the kernels one node queues on the current device."""
        return KernelTimer()

    def copy_on_device(self, value: Any) -> Any:
        """The sender's copy of a tensor crossing devices, made on its own GPU (a device-to-device copy:
        the rendezvous never takes a GPU tensor through the host)."""
        with value.device:
            return value.copy()

    def receiver(self) -> Callable[[Any], Any]:
        """Called in the receiving device's scope (a ``_Recv`` starting): a function that puts an arriving
        value on that device, whichever thread delivers it: a cupy array of another GPU by a peer copy
        (:meth:`copy_to_device`), a numeric host array by a host-to-device copy, one of this GPU and anything
        that is not a numeric array as it is."""
        here = cupy.cuda.Device().id

        def place(value: Any) -> Any:
            if isinstance(value, cupy.ndarray):
                return value if value.device.id == here else self.copy_to_device(value, here)
            if not isinstance(value, np.ndarray | np.generic) or value.dtype.kind not in _KINDS:
                return value  # not a numeric tensor (a reference, a string, DEAD): as it is
            with cupy.cuda.Device(here):
                return cupy.asarray(value)

        return place

    def synchronize(self, platform_device_ids: Iterable[int]) -> None:
        """Wait until every kernel queued on these devices has finished."""
        for i in sorted(set(platform_device_ids)):
            cupy.cuda.Device(i).synchronize()


def enable_peer_access(device: int, peer: int) -> bool:
    """Let ``device`` read and write ``peer``'s memory directly, where the hardware allows it
    (``cudaDeviceCanAccessPeer``); once per ordered pair. Returns whether peer access is on."""
    if device == peer:
        return True
    runtime = cupy.cuda.runtime
    with _peer_lock:
        if (device, peer) in _peers_enabled:
            return True
        if not runtime.deviceCanAccessPeer(device, peer):
            return False
        with cupy.cuda.Device(device):
            try:
                runtime.deviceEnablePeerAccess(peer)
            except runtime.CUDARuntimeError as error:  # already enabled by someone else: fine
                if "PeerAccessAlreadyEnabled" not in str(error):
                    raise
        _peers_enabled.add((device, peer))
        return True


class KernelTimer:
    """CUDA-event timing of the kernels one node queues on a device (measured times for step stats).

    ``start()`` and ``stop()`` record a ``cupy.cuda.Event`` on the device's current stream around the node's
    kernels; :meth:`elapsed_s` waits for the stop event and returns the GPU time between the two (seconds),
    as TF's GPU tracer measures kernel time rather than the time Python took to queue it.
    """

    __slots__ = ("_start", "_stop")

    def __init__(self) -> None:
        self._start = cupy.cuda.Event()
        self._stop = cupy.cuda.Event()

    def start(self) -> None:
        self._start.record()

    def stop(self) -> None:
        self._stop.record()

    def elapsed_s(self) -> float:
        self._stop.synchronize()
        return cupy.cuda.get_elapsed_time(self._start, self._stop) / 1e3


BACKEND = CupyBackend()
