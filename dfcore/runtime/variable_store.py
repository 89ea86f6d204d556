"""Variable storage with per-step transactions: a failed step changes nothing.

A Session (later: a device or task) owns a :class:`VariableStore`. Each step
opens a :class:`StepTransaction`: writes are staged in the transaction and seen
by later reads of the same step; :meth:`StepTransaction.commit` publishes them
atomically when the step succeeds, and an aborted step drops them, so no
half-applied update is ever visible (dfcore's rule; TF applies updates in
place and offers no such guarantee).

Buffers are immutable once published: a write stores a new array, never
mutates the old one, so a value read (or fetched) earlier is never changed
behind the reader's back. Concurrent steps use optimistic concurrency: an
update op (``AssignAdd``, ``ApplyGradientDescent`` …) stages a ``redo``
function; if another step committed the variable in between, commit re-applies
``redo`` to the newest value instead of overwriting it (no lost update, as
TF's locking ``Apply*`` kernels).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .. import errors


class VariableState:
    """One variable's published ``current = (value, version)`` pair, replaced as a whole
    so a reader never sees a value with another value's version; value is None until
    the variable is initialized."""

    __slots__ = ("name", "current")

    def __init__(self, name: str) -> None:
        self.name = name
        self.current = (None, 0)

    @property
    def value(self) -> Any:
        return self.current[0]

    @property
    def version(self) -> int:
        return self.current[1]


class VarRef:
    """The value a ``VariableV2`` op outputs: a reference into a store (TF's ref tensor)."""

    __slots__ = ("state",)

    def __init__(self, state: VariableState) -> None:
        self.state = state

    @property
    def name(self) -> str:
        return self.state.name

    def __repr__(self):
        return f"<VarRef {self.state.name}>"


class VariableStore:
    """Named variables owned by one Session (or one device / task).

    Thread-safe: commits of concurrent steps are serialized by one lock.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._states = {}
        self._refs = {}

    def ref(self, name: Any) -> VarRef:
        """The reference for variable ``name``, creating its (uninitialized) state."""
        ref = self._refs.get(name)
        if ref is not None:
            return ref
        with self._lock:
            if name not in self._refs:
                state = self._states[name] = VariableState(name)
                self._refs[name] = VarRef(state)
            return self._refs[name]

    def value(self, name: str) -> Any:
        """The published value of ``name`` (None if uninitialized or unknown)."""
        state = self._states.get(name)
        return None if state is None else state.value

    def names(self) -> list[str]:
        return sorted(self._states)

    def clear(self) -> None:
        with self._lock:
            self._states.clear()
            self._refs.clear()

    def begin(self) -> StepTransaction:
        return StepTransaction(self)


class StepTransaction:
    """The staged variable writes of one step."""

    __slots__ = ("_store", "_staged", "_seen")

    def __init__(self, store: VariableStore) -> None:
        self._store = store
        # state -> (value, base version, redos, retire, done_with)
        self._staged: dict[VariableState, tuple[Any, int, list, Callable[[Any], Any] | None, tuple[Any, ...]]] = {}
        self._seen: dict[VariableState, int] = {}  # state -> the version this step read

    def read(self, ref: VarRef) -> Any:
        """The value this step sees for ``ref``.

        Raises:
            FailedPreconditionError: the variable is uninitialized (TF's wording).
        """
        staged = self._staged.get(ref.state)
        if staged is not None:
            return staged[0]
        value, version = ref.state.current
        if value is None:
            raise errors.FailedPreconditionError(None, None, f"Attempting to use uninitialized value {ref.state.name}")
        self._seen.setdefault(ref.state, version)
        return value

    def is_initialized(self, ref: VarRef) -> bool:
        return ref.state in self._staged or ref.state.value is not None

    def write(self, ref: VarRef, value: Any, redo: Callable[[Any], Any] | None = None,
              retire: Callable[[Any], Any] | None = None, done_with: tuple[Any, ...] = ()) -> Any:
        """Stage ``value`` as the new value of ``ref``.

        Args:
            value: a numpy array the transaction now owns (never mutated later).
            redo: ``redo(current) -> new`` recomputing the update from a newer
                value if another step commits first; None for a plain overwrite.
            retire: ``retire(old)`` is called after the commit with the value this write replaced (the
                caller holding it once), e.g. to give its buffer back to an allocator; None: nothing.
            done_with: values ``redo`` holds (the update's inputs), given to ``retire`` after the commit too.
        """
        state = ref.state
        previous = self._staged.get(state)
        if previous is None:
            base_version = self._seen.get(state, state.version)
            redos = [redo]
        else:
            base_version = previous[1]
            redos = previous[2] + [redo]
            retire = retire if retire is not None else previous[3]
            done_with = previous[4] + done_with
        self._staged[state] = (value, base_version, redos, retire, done_with)
        return value

    def commit(self) -> None:
        """Publish every staged write atomically (re-applying redos after a concurrent commit)."""
        if not self._staged:
            return
        retired = self._publish()
        self._staged = {}
        self._seen = {}
        while retired:  # now that the staged redos (which hold the old values) are gone
            retire, old = retired.pop()
            retire(old)
            del old

    def _publish(self) -> list[tuple[Callable[[Any], Any], Any]]:
        """Publish the staged writes; returns ``(retire, replaced value)`` for the writes that asked."""
        retired: list[tuple[Callable[[Any], Any], Any]] = []
        with self._store._lock:
            for state, (value, base_version, redos, retire, done_with) in self._staged.items():
                current, version = state.current
                if version != base_version and None not in redos and current is not None:
                    value = current
                    for redo in redos:
                        value = redo(value)
                state.current = (value, version + 1)
                if retire is not None:
                    retired.extend((retire, old) for old in ((current,) if current is not None else ()) + done_with)
        return retired

    def abort(self) -> None:
        self._staged = {}
        self._seen = {}

    def ref(self, name: str) -> VarRef:
        """The reference for variable ``name`` in this transaction's store."""
        return self._store.ref(name)
