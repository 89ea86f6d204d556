"""Rendezvous keys: the string that names one tensor crossing from a ``_Send`` to its ``_Recv``.

Source: TF ``core/framework/rendezvous.cc`` (``Rendezvous::CreateKey``/``ParseKey``). The format lives in
framework/, as TF's does, so that ops (a blocking kernel's cancellation watch), the runtime's rendezvous
and the transports all build and read keys without importing the runtime.
"""

from __future__ import annotations

import dataclasses
import functools

from .. import errors
from .device import DeviceSpec


@dataclasses.dataclass(frozen=True)
class ParsedKey:
    """The fields of a rendezvous key (TF's ``Rendezvous::ParsedKey``)."""

    src_device: str
    src_incarnation: int
    dst_device: str
    edge_name: str
    frame_id: int
    iter_id: int


def create_key(src_device: str, src_incarnation: int, dst_device: str, name: str,
               frame_iter: tuple[int, int] = (0, 0)) -> str:
    """Build ``"<src>;<incarnation:016x>;<dst>;<name>;<frame>:<iter>"`` (TF ``Rendezvous::CreateKey``).

    Args:
        src_device, dst_device: full device names (``/job:.../device:GPU:0``).
        src_incarnation: non-negative int below 2**64 (the ``send_device_incarnation`` attr).
        name: the ``tensor_name`` attr of the ``_Send``/``_Recv`` pair (``edge_5_Const``).
        frame_iter: ``(frame_id, iter_id)``; ``(0, 0)`` outside loops.

    Raises:
        InvalidArgumentError: if the parts would not parse back (see :func:`parse_key`).
    """
    frame_id, iter_id = frame_iter
    key = f"{src_device};{int(src_incarnation):016x};{dst_device};{name};{int(frame_id)}:{int(iter_id)}"
    parse_key(key)
    return key


def parse_key(key: str) -> ParsedKey:
    """Split a key made by :func:`create_key` into a :class:`ParsedKey` (TF ``Rendezvous::ParseKey``).

    Parses are cached: a step's keys repeat every step.

    Raises:
        InvalidArgumentError: ``Invalid rendezvous key: <key>`` unless the key has exactly five
            ``;``-separated parts: two parseable non-empty device names, a hex incarnation
            (at most 16 digits), a non-empty edge name and ``<frame_id>:<iter_id>`` integers.
    """
    if isinstance(key, str):
        return _parse_str_key(key)
    raise errors.InvalidArgumentError(None, None, f"Invalid rendezvous key: {key}")


@functools.lru_cache(maxsize=16384)
def _parse_str_key(key):
    parts = key.split(";")
    if len(parts) == 5:
        src, incarnation, dst, edge_name, frame_iter = parts
        frame, sep, iteration = frame_iter.partition(":")
        if (
            _is_device(src)
            and _is_device(dst)
            and _is_hex(incarnation)
            and edge_name
            and sep
            and frame.isdigit()
            and iteration.isdigit()
        ):
            return ParsedKey(src, int(incarnation, 16), dst, edge_name, int(frame), int(iteration))
    raise errors.InvalidArgumentError(None, None, f"Invalid rendezvous key: {key}")


@functools.lru_cache(maxsize=1024)  # a step names few devices; a key missed by the cache above re-checks only these
def _is_device(name):
    if not name:
        return False
    try:
        DeviceSpec.from_string(name)
    except ValueError:
        return False
    return True


def _is_hex(text):
    return 0 < len(text) <= 16 and all(c in "0123456789abcdefABCDEF" for c in text)
