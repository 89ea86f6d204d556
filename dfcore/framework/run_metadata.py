"""``RunMetadata``: TF's message, carrying dfcore's records of the step that filled it.

Source: ``tensorflow/core/protobuf/config.proto`` (``RunMetadata``; the message class is TF's, from
:mod:`dfcore.framework.protos`). TF's generated message classes take no attributes of their own and cannot
be subclassed, so dfcore's ``RunMetadata`` wraps one such message: every field and method of TF's message
is the wrapped message's (``step_stats``, ``partition_graphs``, ``cost_graph``, ``HasField``,
``SerializeToString``, ...; ``CopyFrom``/``MergeFrom``/``==`` accept either class), and a session that
fills it with a traced step attaches dfcore's records of the step (``dfcore.runtime.config.StepRecords``)
to it. The records live as long as the object: no table keeps them. :func:`message_of` gives TF's message
itself, for APIs that need the message class (a protobuf field, ``json_format``).
"""

from __future__ import annotations

from typing import Any

from . import protos

__all__ = ["RunMetadata", "attach_step_records", "attached_step_records", "message_of"]


class RunMetadata:
    """TF's ``RunMetadata`` message (its fields and methods), with dfcore's step records attached.

    Args:
        **fields: the message's fields, as ``RunMetadata(step_stats=...)`` takes them.

    Raises:
        ValueError: an unknown field (protobuf's error).
    """

    __slots__ = ("_message", "_step_records")
    _message: protos.RunMetadata
    _step_records: object  # dfcore.runtime.config.StepRecords, or None
    DESCRIPTOR = protos.RunMetadata.DESCRIPTOR

    def __init__(self, **fields: Any) -> None:
        object.__setattr__(self, "_message", protos.RunMetadata(**fields))
        object.__setattr__(self, "_step_records", None)

    @classmethod
    def FromString(cls, data: bytes) -> RunMetadata:
        """A RunMetadata parsed from TF's wire format (no step records)."""
        out = cls()
        out._message.ParseFromString(data)
        return out

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # the slots above, or a protocol the message does not speak
            raise AttributeError(name)
        return getattr(self._message, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in RunMetadata.__slots__:
            object.__setattr__(self, name, value)
        else:
            setattr(self._message, name, value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RunMetadata, protos.RunMetadata)):
            return self._message == message_of(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as TF's message

    def __repr__(self) -> str:
        return repr(self._message)

    def __str__(self) -> str:
        return str(self._message)

    def Clear(self) -> None:
        """Clear every field, and drop the step records."""
        self._message.Clear()
        self._step_records = None

    def CopyFrom(self, other: RunMetadata | protos.RunMetadata) -> None:
        """Become a copy of ``other`` (its step records too, when it has them)."""
        self._message.CopyFrom(message_of(other))
        self._step_records = other._step_records if isinstance(other, RunMetadata) else None

    def MergeFrom(self, other: RunMetadata | protos.RunMetadata) -> None:
        """Merge ``other``'s fields in (protobuf's rules); the step records stay this object's."""
        self._message.MergeFrom(message_of(other))

    def ParseFromString(self, data: bytes) -> int:
        """Replace the fields by those parsed from ``data`` (TF's wire format); the step records go."""
        self._step_records = None
        return self._message.ParseFromString(data)


def message_of(run_metadata: RunMetadata | protos.RunMetadata) -> protos.RunMetadata:
    """TF's message of ``run_metadata`` (the wrapped one; TF's message itself unchanged).

    Raises:
        TypeError: ``run_metadata`` is neither.
    """
    if isinstance(run_metadata, RunMetadata):
        return run_metadata._message
    if isinstance(run_metadata, protos.RunMetadata):
        return run_metadata
    raise TypeError(f"Expected a RunMetadata; got {type(run_metadata).__name__}")


def attach_step_records(run_metadata: RunMetadata | protos.RunMetadata, records: object) -> None:
    """Attach dfcore's ``records`` of a step to ``run_metadata`` (TF's bare message takes none: they go)."""
    if isinstance(run_metadata, RunMetadata):
        run_metadata._step_records = records


def attached_step_records(run_metadata: RunMetadata) -> Any:
    """The records attached to ``run_metadata``, or None."""
    return run_metadata._step_records
