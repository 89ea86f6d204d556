"""Short, stable text for labels: device names, byte counts, durations.

Pure functions shared by the DOT, SVG and HTML builders.
"""

from dfcore.data.pipeline_run import split_lane_device
from dfcore.framework import dtypes
from dfcore.framework.device import DeviceSpec

_TYPE_ORDER = {"CPU": 0, "GPU": 1}


def short_device(device):
    """A device name without the parts every local device shares.

    ``/job:localhost/replica:0/task:0/device:GPU:2`` → ``GPU:2``;
    ``/job:worker/replica:0/task:1/device:CPU:0`` → ``worker/task:1/CPU:0``;
    ``""``/None → ``unplaced``; a partial request (``/device:GPU:2``) → ``GPU:2``;
    an input-pipeline lane → ``CPU:0/input:Map/thread:0``.
    """
    if not device:
        return "unplaced"
    lane = split_lane_device(device)
    if lane is not None:
        return f"{short_device(lane[0])}/input:{lane[1]}/thread:{lane[2]}"
    spec = DeviceSpec.from_string(device)
    local = f"{spec.device_type}:{spec.device_index}" if spec.device_type else "any device"
    if spec.device_type and spec.device_index is None:
        local = f"{spec.device_type}:*"
    if spec.job in (None, "localhost") and (spec.task or 0) == 0:
        return local
    return f"{spec.job or '*'}/task:{spec.task if spec.task is not None else '*'}/{local}"


def device_sort_key(device):
    """Sort devices as a reader expects: by job and task, CPU before GPU, index as a number; an input-pipeline
    lane (``<host>/input:<stage>/thread:<i>``) right after its host."""
    lane = split_lane_device(device or "")
    if lane is not None:
        return (*device_sort_key(lane[0])[:-1], lane[1], lane[2])
    spec = DeviceSpec.from_string(device or "")
    return (spec.job or "", spec.replica or 0, spec.task or 0, _TYPE_ORDER.get(spec.device_type, 2),
            spec.device_type or "", spec.device_index or 0, device or "")


def count(number, noun):
    """``1 device``, ``3 devices``, ``0 transfers`` (English plural with ``s``)."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def format_bytes(nbytes):
    """``512 B``, ``1.5 KB``, ``2.0 MB``, ``5.0 GB`` (decimal units, as nccl-tests)."""
    value = int(nbytes)
    if abs(value) < 1000:
        return f"{value} B"
    for power, unit in ((3, "GB"), (2, "MB")):
        if abs(value) >= 1000**power:
            return f"{value / 1000**power:.1f} {unit}"
    return f"{value / 1000:.1f} KB"


def format_us(micros):
    """A duration or time in microseconds: ``850 µs``, ``12.3 ms``, ``1.25 s``."""
    value = round(float(micros), 1)
    if abs(value) < 1000:
        return f"{value:.0f} µs" if value == int(value) else f"{value:.1f} µs"
    if abs(value) < 1_000_000:
        return f"{value / 1000:.1f} ms"
    return f"{value / 1_000_000:.2f} s"


def format_attr(value):
    """One attr value as short text: dtypes by name, arrays by dtype and shape, lists inline."""
    if hasattr(value, "shape") and hasattr(value, "dtype") and getattr(value, "ndim", 0) > 0:
        return f"array {value.dtype}{list(value.shape)}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    if isinstance(value, dtypes.DType):
        return value.name
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."
