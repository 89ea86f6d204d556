"""How an :class:`~dfcore.runtime.executor.Executor` runs its partition's
:class:`~dfcore.runtime.straight_line.StraightLine`: its receives first (started as its loop starts async
nodes), then each segment once the values it waits for are in, reporting as the loop does (the same ``done``,
the same errors naming the same node).

Source: TF's ``common_runtime/executor.cc`` (a received value's consumers run on the thread that completes
the receive; ``ExecutorState::NodeDone``). Each receive's completion counts down the segments waiting for it
(the loop's pending counts, one per segment); a segment reaching zero is *runnable*, and the executor's one
loop (``_running``, as in :class:`~dfcore.runtime.executor.Executor`) runs the runnable segments, in their
listed order, until none is left: the thread that completes the last receive a segment needs runs it (on the
calling thread, inside the sender's ``_Send``, with the inline runner), with no hand-off in between. The step
ends when every segment has run and every receive is in; the first receive error, or the step's abort, ends it
early (an aborted rendezvous fails every pending receive, so a receive that never arrives ends with the
step's deadline or cancellation: nothing waits past it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .cancellation import cancelled_error
from .kernel_errors import async_error, kernel_error

if TYPE_CHECKING:
    from .compiled_partition import CompiledPartition
    from .straight_line import StraightLine


class StraightLineRun:
    """The straight-line mode of :class:`~dfcore.runtime.executor.Executor` (module docstring)."""

    if TYPE_CHECKING:  # the Executor's state and steps this mixin runs on (runtime/executor.py)
        values: list[Any]
        _ctx: Any
        _allocator: Any
        _partition: CompiledPartition
        _lock: threading.Lock
        _running: bool
        _remaining: int

        def _finish(self, error: Any) -> None: ...
        def _stop_error(self) -> Any: ...
        def _compute_async(self, node: Any, args: Any, completed: Callable[..., None],
                           names_errors: bool = False) -> None: ...
        def _wake(self) -> None: ...

    _missing: list[int] | None = None  # per segment, its receives not in yet (None: receives not started)
    _runnable: list[int]  # segments whose receives are in, not run yet
    _segments_left: int
    _awaiting: int  # receives not settled yet
    _receive_error: Any = None

    def _run_straight_line(self, straight: StraightLine) -> None:
        """The executor's loop in straight-line mode: start the receives (first call), then run the runnable
        segments until none is left; the receive completing a segment's values wakes the loop again."""
        if self._missing is None:
            self._start_receives(straight)
        values, ctx, allocator = self.values, self._ctx, self._allocator
        rendezvous, segments, deallocate = ctx.rendezvous, straight.segments, allocator.deallocate
        while True:
            if rendezvous.abort_status is not None:
                self._finish(self._stop_error())
                return
            with self._lock:
                error, runnable = self._receive_error, self._runnable
                if not runnable and error is None and (self._segments_left or self._awaiting):
                    self._running = False
                    return
                self._runnable = []
            if error is not None:
                self._finish(error)
                return
            if not runnable:
                break
            if len(runnable) > 1:
                runnable.sort()
            for s in runnable:
                try:
                    if segments[s](values, ctx, rendezvous, allocator, deallocate) is not None:
                        self._finish(self._stop_error())
                        return
                except Exception as failure:  # as in the loop
                    index = straight.failed_node(failure.__traceback__)
                    if index is None:
                        raise  # not a kernel's error: the generated code's own, a defect
                    node = self._partition.nodes[index]
                    self._finish(kernel_error(failure, node, node.gather(values), self._partition.device))
                    return
                except BaseException as interrupt:  # Ctrl-C on the calling thread, as in the loop
                    self._finish(cancelled_error(interrupt))
                    raise
                self._segments_left -= 1
        for slot in straight.late:
            value = values[slot]
            values[slot] = None
            deallocate(value)
            value = None
        self._remaining = 0
        self._finish(None)

    def _start_receives(self, straight: StraightLine) -> None:
        """Count what each segment waits for, mark those waiting for nothing runnable, start the receives."""
        self._missing = list(straight.counts)
        self._runnable = list(straight.ready)
        self._segments_left = len(straight.segments)
        self._awaiting = len(straight.receives)
        nodes = self._partition.nodes
        for bit, index in enumerate(straight.receives):
            node = nodes[index]
            self._compute_async(node, (), self._arrived(node, straight.waiting[bit]), names_errors=True)

    def _arrived(self, node: Any, waiting: tuple[int, ...]) -> Callable[[Any, Any], None]:
        """The completion of receive ``node``: its value goes to its slot, and the segments (``waiting``) it
        was the last value of become runnable; wakes the loop when one did, on an error (named after the
        node: :func:`~dfcore.runtime.kernel_errors.async_error`), or when it was the last."""
        slot = node.out_slot

        def completed(error, value):
            if error is None:
                self.values[slot] = value
            else:
                error = async_error(error, node)
            with self._lock:
                missing = self._missing
                assert missing is not None, "_start_receives counts before starting the receives"
                self._awaiting -= 1
                wake = not self._awaiting
                if error is not None:
                    if self._receive_error is None:
                        self._receive_error = error
                    wake = True
                else:
                    for s in waiting:
                        missing[s] -= 1
                        if not missing[s]:
                            self._runnable.append(s)
                            wake = True
            if wake:
                self._wake()
        return completed
