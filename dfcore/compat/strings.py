"""``tf.compat.as_bytes`` / ``as_text`` / ``as_str`` / ``as_str_any`` / ``path_to_str``.

Source: ``tensorflow/python/util/compat.py``: text and bytes converted with ``encoding`` (UTF-8); any other
type is a ``TypeError`` with TF's wording.
"""

import os
from typing import Any

__all__ = ["as_bytes", "as_str", "as_str_any", "as_text", "path_to_str"]


def as_bytes(bytes_or_text: str | bytes | bytearray, encoding: str = "utf-8") -> bytes:
    """``bytes_or_text`` as ``bytes`` (``str`` encoded with ``encoding``). Raises TypeError for other types."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text: str | bytes, encoding: str = "utf-8") -> str:
    """``bytes_or_text`` as ``str`` (``bytes`` decoded with ``encoding``). Raises TypeError for other types."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value: Any) -> str:
    """``as_str(value)`` for ``bytes``, else ``str(value)``."""
    return as_str(value) if isinstance(value, bytes) else str(value)


def path_to_str(path: Any) -> Any:
    """An ``os.PathLike`` as its ``str`` path; anything else unchanged."""
    return os.fspath(path) if isinstance(path, os.PathLike) else path
