"""How the kernels of a real device run: in its CUDA device's scope, timed by CUDA events when traced.

Source: TF's ``gpu_device.cc`` (a GPU's kernels run on its own stream with the device made current) and
TF's GPU tracer (``device_tracer``: kernel times come from the GPU, not from the host thread that queued
them). A simulated device or a CPU has no context (None): its kernels run on the host as they are.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from .. import backends


@dataclasses.dataclass(frozen=True)
class DeviceContext:
    """``scope()``: the context a partition's executor runs its kernels in (the CUDA device made current);
    ``kernel_timer()``: a fresh timer with ``start()``, ``stop()`` and ``elapsed_s()`` for one node's kernels
    (CUDA events), used by traced steps for the measured times of step stats."""

    scope: Callable[[], Any]
    kernel_timer: Callable[[], Any]


def device_context(device: Any) -> DeviceContext | None:
    """The :class:`DeviceContext` of a :class:`~dfcore.runtime.device_set.Device` on real hardware
    (``platform_device_id`` set, and a backend with devices of its own: ``device_scope``), else None."""
    if getattr(device, "platform_device_id", None) is None:
        return None
    backend: Any = backends.get(device.backend)
    if not hasattr(backend, "device_scope"):
        return None
    return DeviceContext(functools.partial(backend.device_scope, device.platform_device_id), backend.kernel_timer)
