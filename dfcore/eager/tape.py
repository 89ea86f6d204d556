"""The tape: which eager ops the active ``GradientTape`` s record.

Source: ``tensorflow/python/eager/tape.py`` and ``c/eager/tape.h`` (``GradientTape::RecordOperation``: an op
is recorded when one of its inputs is watched; its outputs are then watched too). Tapes are per thread.
"""

from __future__ import annotations

import threading
from typing import Any


class Tape:
    """The ops recorded since a tape started, in execution order, and the tensors it watches (by id)."""

    def __init__(self, persistent: bool, watch_accessed_variables: bool) -> None:
        self.persistent = persistent
        self.watch_accessed_variables = watch_accessed_variables
        self.watched: set[int] = set()
        self.keep: list[Any] = []  # the watched tensors themselves, so their ids stay theirs
        self.ops: list[Any] = []
        self.variables: list[Any] = []
        self.recording = True

    def watch(self, tensor: Any) -> None:
        if id(tensor) not in self.watched:
            self.watched.add(id(tensor))
            self.keep.append(tensor)

    def record(self, op: Any) -> bool:
        watched = self.watched
        if not any(id(t) in watched for t in op._inputs):
            return False
        self.ops.append(op)
        for tensor in op._outputs:
            watched.add(id(tensor))
        return True


class _Stack(threading.local):
    def __init__(self) -> None:
        super().__init__()
        self.tapes: list[Tape] = []


_stack = _Stack()


def push(tape: Tape) -> None:
    _stack.tapes.append(tape)


def pop(tape: Tape) -> None:
    tapes = _stack.tapes
    for i in range(len(tapes) - 1, -1, -1):
        if tapes[i] is tape:
            del tapes[i]
            return


def recording() -> bool:
    """True while a tape of this thread records."""
    return any(tape.recording for tape in _stack.tapes)


def record_operation(op: Any) -> bool:
    """Let every recording tape of this thread record ``op`` (an executed eager op); True if one did."""
    tapes = _stack.tapes
    if not tapes:
        return False
    recorded = False
    for tape in tapes:
        if tape.recording and tape.record(op):
            recorded = True
    return recorded


def variable_accessed(variable: Any) -> None:
    """A trainable variable was read: tapes that watch accessed variables watch it (TF's
    ``tape.variable_accessed``)."""
    if not variable.trainable:
        return
    for tape in _stack.tapes:
        if tape.recording and tape.watch_accessed_variables:
            watch_variable(tape, variable)


def watch_variable(tape: Tape, variable: Any) -> None:
    if all(v is not variable for v in tape.variables):
        tape.variables.append(variable)
    tape.watch(variable.handle)
