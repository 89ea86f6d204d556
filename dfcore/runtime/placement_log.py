"""TF's ``log_device_placement`` text: the device mapping, then one line per placed node.

Source: ``tensorflow/core/common_runtime/direct_session.cc`` (``Device mapping:``) and ``placer.cc``
(``LogDeviceAssignment``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .device_set import DeviceSet

if TYPE_CHECKING:
    from .placer import PlacementRecord

_LOG_LINE = re.compile(r"^(?P<name>[^:]+): \((?P<op>[A-Za-z0-9_]+)\): (?P<device>/\S+)$")


def placement_log_lines(device_set: DeviceSet, records: Iterable[PlacementRecord]) -> list[str]:
    """TF's ``log_device_placement`` text as lines (``direct_session.cc``, ``placer.cc``).

    ``Device mapping:`` then ``<device> -> <physical_device_desc>`` per device that
    has a description (GPUs), or ``Device mapping: no known devices.``; then
    ``<name>: (<OpType>): <device>`` per record.
    """
    mapping = [f"{d.name} -> {d.physical_device_desc}" for d in device_set.devices if d.physical_device_desc]
    lines = ["Device mapping:"] + mapping if mapping else ["Device mapping: no known devices."]
    return lines + [placement_log_line(r.node_name, r.op_type, r.assigned_device) for r in records]


def placement_log_line(node_name: str, op_type: str, device: str) -> str:
    """One node's line, ``<name>: (<OpType>): <device>`` (placer.cc ``LogDeviceAssignment``)."""
    return f"{node_name}: ({op_type}): {device}"


def parse_placement_log_line(line: str) -> tuple[str, str, str]:
    """``(node_name, op_type, device)`` from a :func:`placement_log_line`.

    Raises:
        ValueError: the line is not in that form.
    """
    match = _LOG_LINE.match(line)
    if match is None:
        raise ValueError(f"Not a placement log line: {line!r}")
    return match["name"], match["op"], match["device"]
