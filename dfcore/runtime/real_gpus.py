"""The host's real CUDA GPUs (through cupy) and the logical GPUs a ``ConfigProto`` carves out of them.

Source: TF's ``core/common_runtime/gpu/gpu_device.cc`` (``BaseGPUDeviceFactory::CreateDevices``:
``visible_device_list``, ``GPUOptions.Experimental.virtual_devices`` and ``num_virtual_devices_per_gpu``,
the ``physical_device_desc`` string) and ``gpu_id.h`` (a *TF* device id names a logical GPU, a
*platform* device id the physical one it runs on).

Detection imports cupy only when cupy is installed and a session asks for GPUs, so a CPU run never
imports it. ``CUDA_VISIBLE_DEVICES`` is respected because the CUDA runtime (and so cupy) already
hides the GPUs it leaves out. Setting the environment variable ``DFCORE_SIMULATED_GPUS=1`` (dfcore's
option; TF has none) ignores real GPUs: every ``GPU:i`` is then simulated on the host, as on a machine
without one (the unit tests set it, so that they mean the same thing everywhere).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
from collections.abc import Sequence
from typing import Any

from .. import errors

#: dfcore's switch (environment variable) that makes every GPU simulated even where real ones are visible.
SIMULATED_GPUS_ENV = "DFCORE_SIMULATED_GPUS"


@dataclasses.dataclass(frozen=True)
class PhysicalGpu:
    """One CUDA device as the driver reports it.

    Attributes:
        platform_id: CUDA's device ordinal (after ``CUDA_VISIBLE_DEVICES``).
        name: the driver's name (``"NVIDIA H200"``).
        pci_bus_id: ``"0000:19:00.0"``.
        compute_capability: ``"9.0"``.
        memory_bytes: total device memory in bytes.
    """

    platform_id: int
    name: str
    pci_bus_id: str
    compute_capability: str
    memory_bytes: int

    @property
    def desc(self) -> str:
        """TF's ``physical_device_desc`` of a (logical) GPU on this board, which names the board's platform id
        (``device: 0, name: NVIDIA H200, pci bus id: 0000:19:00.0, compute capability: 9.0``)."""
        return (f"device: {self.platform_id}, name: {self.name}, pci bus id: {self.pci_bus_id}, "
                f"compute capability: {self.compute_capability}")


@dataclasses.dataclass(frozen=True)
class LogicalGpu:
    """``GPU:<tf_id>`` of a task, run on the physical GPU ``gpu`` (``memory_limit_bytes``: its share, or None)."""

    tf_id: int
    gpu: PhysicalGpu
    memory_limit_bytes: int | None = None


def simulated_gpus_requested() -> bool:
    """True when ``DFCORE_SIMULATED_GPUS`` is set to a true value (``1``, ``true``, ``yes``)."""
    return os.environ.get(SIMULATED_GPUS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def detect_gpus() -> tuple[PhysicalGpu, ...]:
    """The visible CUDA GPUs, or ``()`` when cupy is not installed, no GPU is visible, the driver fails, or
    :func:`simulated_gpus_requested`. Imports cupy only when it is installed; probed once per process."""
    if simulated_gpus_requested() or importlib.util.find_spec("cupy") is None:
        return ()
    return _probe()


@functools.lru_cache(maxsize=1)
def optional_cupy() -> Any:
    """The ``cupy`` module, or None where it is not installed or cannot load its CUDA libraries (a broken
    install is a machine without GPUs). The one place dfcore imports cupy outside its backend module."""
    try:
        import cupy
    except ImportError:  # a branch of its own: Binder's import check counts only this as an optional import
        return None
    except Exception:  # cupy raises other errors when its CUDA libraries are missing
        return None
    return cupy


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[PhysicalGpu, ...]:
    cupy = optional_cupy()
    if cupy is None:
        return ()
    runtime = cupy.cuda.runtime
    try:
        count = runtime.getDeviceCount()
    except runtime.CUDARuntimeError:  # no driver, or no device: CUDA says so by failing
        return ()
    return tuple(_describe(cupy, i) for i in range(count))


def _describe(cupy: Any, i: int) -> PhysicalGpu:
    props = cupy.cuda.runtime.getDeviceProperties(i)
    name = props["name"]
    name = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
    bus = f"{props.get('pciDomainID', 0):04x}:{props.get('pciBusID', 0):02x}:{props.get('pciDeviceID', 0):02x}.0"
    return PhysicalGpu(i, name.rstrip("\x00"), bus, f"{props['major']}.{props['minor']}", int(props["totalGlobalMem"]))


def logical_gpus(gpus: Sequence[PhysicalGpu], gpu_options: Any = None) -> tuple[LogicalGpu, ...]:
    """The logical GPUs of a task on ``gpus``, by TF's ``GPUOptions`` rules.

    ``visible_device_list`` (``"1,0"``) picks and orders the physical GPUs; then, per visible GPU,
    ``experimental.virtual_devices[i].memory_limit_mb`` gives one logical GPU per entry (with that memory),
    else ``experimental.num_virtual_devices_per_gpu`` (> 1) splits it evenly, else it is one logical GPU.
    Logical GPUs are numbered in that order from 0.

    Raises:
        InvalidArgumentError: ``visible_device_list`` names a GPU that is not visible or is not a list of
            integers; ``virtual_devices`` is neither empty nor one entry per visible GPU.
    """
    visible = _visible(gpus, getattr(gpu_options, "visible_device_list", "") or "")
    experimental = getattr(gpu_options, "experimental", None)
    virtual = list(getattr(experimental, "virtual_devices", ()) or ())
    per_gpu = int(getattr(experimental, "num_virtual_devices_per_gpu", 0) or 0)
    if virtual and len(virtual) != len(visible):
        raise errors.InvalidArgumentError(
            None, None, f"The number of GPUs in GPUOptions.Experimental.virtual_devices ({len(virtual)}) must be 0 "
                        f"or the number of visible GPUs ({len(visible)})")
    out: list[LogicalGpu] = []
    for i, gpu in enumerate(visible):
        if virtual and len(virtual[i].memory_limit_mb):
            limits = [int(mb * (1 << 20)) for mb in virtual[i].memory_limit_mb]
        elif per_gpu > 1:
            limits = [gpu.memory_bytes // per_gpu] * per_gpu
        else:
            limits = [None]  # type: ignore[list-item]
        base = len(out)
        out.extend(LogicalGpu(base + j, gpu, limit) for j, limit in enumerate(limits))
    return tuple(out)


def _visible(gpus: Sequence[PhysicalGpu], visible_device_list: str) -> list[PhysicalGpu]:
    if not visible_device_list.strip():
        return list(gpus)
    picked = []
    for text in visible_device_list.split(","):
        try:
            platform_id = int(text.strip())
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, f"Could not parse entry in 'visible_device_list': '{text}'. "
                            f"visible_device_list = {visible_device_list}") from None
        if not 0 <= platform_id < len(gpus):
            raise errors.InvalidArgumentError(
                None, None, f"'visible_device_list' listed an invalid Device id '{platform_id}' but visible device "
                            f"count is {len(gpus)}")
        picked.append(gpus[platform_id])
    return picked
