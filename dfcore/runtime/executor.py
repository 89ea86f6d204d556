"""The per-partition dataflow executor.

Source: TF's ``common_runtime/executor.cc`` (``ExecutorState``) and the whitepaper
§3.1. One :class:`Executor` runs one device's partition for one step:

* every node starts with a *pending count* (its data and control inputs inside the
  partition); nodes at zero are *ready*;
* a ready node's kernel runs, its outputs go to the value slots, and each consumer's
  pending count drops; consumers reaching zero become ready, and the first of them
  runs next on the same thread (TF's ``inline_ready``);
* an *asynchronous* node (``_Recv``, a collective) is called with its inputs and a
  ``done`` callback and returns at once (``_Recv`` asks the rendezvous for its value); when the value
  arrives (on the sender's thread) its completion is queued
  back to this executor, so a partition never blocks a thread while it has other
  ready work — partitions that feed each other both ways cannot deadlock;
* only one loop per executor processes nodes at a time (pending counts are never
  touched concurrently); the loop is started through the injected ``runner``
  (a thread pool's ``submit``, or an inline call in tests) — same results either way;
* an entry that may hold a buffer a kernel took from the device's
  :class:`~dfcore.runtime.allocator.Allocator` (``out=`` kernels, a ``_Recv``'s copy, a view of either) is
  cleared once its last consumer has run (TF's ``num_output_edges``), and the buffer goes back to the
  allocator unless a reader still holds it; other entries live until the step ends; a traced step keeps
  every value;
* the first kernel error ends the step: the executor stops and reports it through
  ``done(error)``; the Session then aborts the rendezvous so every other partition
  stops too;
* before each node the executor stops (reporting the abort) once the step's
  rendezvous is aborted or the :class:`~dfcore.runtime.cancellation.Deadline` the
  caller set has passed — on whatever thread it runs, the caller's included;
* an interrupt (``KeyboardInterrupt``) while a loop runs on the calling thread ends the
  step with ``CancelledError`` and propagates (see :mod:`dfcore.runtime.step`).

After a few steps, a partition of synchronous nodes (but ``_Recv`` nodes without inputs, started first) runs
as generated functions in this loop's order, one per set of received values its nodes need
(:mod:`dfcore.runtime.straight_line`, :mod:`dfcore.runtime.straight_line_run`), unless the step is traced
or has a caller-set deadline.

A partition holding control flow (``Switch``/``Merge``/``Enter``/``Exit``/``NextIteration``) runs on
:class:`~dfcore.runtime.control_flow_executor.ControlFlowExecutor` instead (frames, iterations, dead
tensors); :func:`~dfcore.runtime.control_flow_executor.make_executor` picks.

Errors: a kernel's exception becomes the step's ``OpError`` in one place,
:func:`dfcore.runtime.kernel_errors.kernel_error`.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from .. import errors
from .cancellation import cancelled_error
from .compiled_partition import CompiledPartition
from .kernel_errors import async_error, kernel_error
from .straight_line_run import StraightLineRun


class StepContext:
    """What kernels see during one step on one device.

    Attributes:
        txn: the step's :class:`~dfcore.runtime.variable_store.StepTransaction`.
        resources: the session's resources (random generators, queues …).
        step_id: the step's key, unique among the steps sharing ``resources``: a counter of the session, or on a
            task serving other tasks' masters the master's step handle ``(master rank, id)`` (each master counts
            from 1).
        rendezvous: the step's :class:`~dfcore.runtime.rendezvous.Rendezvous`.
        device: the full name of the device this partition runs on.
        collectives: a dict shared by every device's context of one step, where collective
            ops meet (instance key → instance; see :mod:`dfcore.distribute.collective_ops`).
        tracing: True when the step is traced (``FULL_TRACE``): kernels may keep records.
        deadline: the :class:`~dfcore.runtime.cancellation.Deadline` executors check before every
            op, or None (the step's default deadline bounds its waits only).
        call_frame: the step's :class:`~dfcore.runtime.call_frame.CallFrame` (feeds in, fetches out),
            or None (a partial run, or a partition run for another task's session).
        frame_iter: ``(frame_id, iteration)`` of the node being run ((0, 0) outside loops; set by the
            control-flow executor), the last field of the rendezvous keys of ``_Send``/``_Recv``.
    """

    __slots__ = ("call_frame", "collectives", "deadline", "device", "frame_iter", "rendezvous", "resources", "step_id",
                 "tracing", "txn")

    def __init__(self, txn: Any, resources: Any, step_id: Hashable, rendezvous: Any = None, device: str | None = None,
                 collectives: dict[Any, Any] | None = None, tracing: bool = False, deadline: Any = None,
                 call_frame: Any = None) -> None:
        self.txn = txn
        self.resources = resources
        self.step_id = step_id
        self.rendezvous = rendezvous
        self.device = device
        self.collectives = {} if collectives is None else collectives
        self.tracing = tracing
        self.deadline = deadline
        self.call_frame = call_frame
        self.frame_iter = (0, 0)

    def on_device(self, device: str) -> StepContext:
        return StepContext(self.txn, self.resources, self.step_id, self.rendezvous, device, self.collectives,
                           self.tracing, self.deadline, self.call_frame)


class NodeTiming:
    """Wall-clock record of one executed node (seconds from ``perf_counter``); ``frame_iter`` is
    ``(frame_id, iteration)`` for a node run by the control-flow executor, else None; ``dead`` is True when
    the node ran dead (its kernel skipped, or a ``_Send``/``_Recv`` passing a dead value on); ``kernel_timer``:
    on a real GPU, the CUDA-event timer of the kernels the node queued (its ``elapsed_s()`` is their GPU time),
    else None."""

    __slots__ = ("device", "index", "start_s", "end_s", "thread_id", "outputs", "frame_iter", "dead", "kernel_timer")

    def __init__(self, device: str, index: int, start_s: float, end_s: float, thread_id: int, outputs: Any,
                 frame_iter: tuple[int, int] | None = None, dead: bool = False, kernel_timer: Any = None) -> None:
        self.device = device
        self.index = index
        self.start_s = start_s
        self.end_s = end_s
        self.thread_id = thread_id
        self.outputs = outputs
        self.frame_iter = frame_iter
        self.dead = dead
        self.kernel_timer = kernel_timer


class StepRun:
    """What every partition executor (this one and the control-flow one) shares: how a step stops early,
    how it finishes once, and how an asynchronous kernel reports back. Subclasses set ``_ctx``, ``_lock``,
    ``_finished`` and ``_done``."""

    _partition: CompiledPartition
    _ctx: StepContext
    _lock: threading.Lock
    _finished: bool
    _done: Callable[[errors.OpError | None], None]
    _loop: Callable[[], None]

    def _stop_error(self):
        """Why the loop stops before its next node: the step's abort status (its root error, as TF's aborted
        rendezvous gives every waiter; in one process the step keeps the first error anyway, but a step
        aborted from another task learns its cause only from here), else its deadline."""
        status = self._ctx.rendezvous.abort_status
        if status is not None:
            return status if isinstance(status, errors.OpError) else errors.AbortedError(None, None, str(status))
        return self._ctx.deadline.error()

    def _finish(self, error):
        with self._lock:
            if self._finished:
                return
            self._finished = True
        self._done(error)

    def _run_loop(self):
        """The executor's loop, in its device's scope on a real GPU (the CUDA device made current)."""
        context = self._partition.device_context
        if context is None:
            self._loop()
            return
        with context.scope():
            self._loop()

    def _compute_async(self, node, args, completed, names_errors=False):
        """Start asynchronous kernel ``node`` on ``args``; ``completed(error, value)`` gets None or an
        ``OpError`` naming the node (:func:`~dfcore.runtime.kernel_errors.async_error`). With ``names_errors``
        the kernel reports to ``completed`` directly, which names the errors itself (the straight-line mode's
        receives: one call and one closure less per received tensor)."""
        settle = completed
        if not names_errors:
            def settle(error, value):
                completed(error if error is None else async_error(error, node), value)

        try:
            node.compute(self._ctx, settle, *args)
        except Exception as error:  # as in _loop
            completed(kernel_error(error, node, args, self._partition.device), None)


class Executor(StepRun, StraightLineRun):
    """Runs one :class:`CompiledPartition` for one step; see the module docstring.

    Args:
        partition: the compiled partition.
        ctx: the :class:`StepContext` for this device.
        runner: ``runner(fn)`` runs ``fn()`` now or on another thread.
        done: ``done(error_or_None)``, called exactly once when the partition finishes.
        timings: a list to append :class:`NodeTiming` records to, or None (no tracing).
    """

    def __init__(self, partition: CompiledPartition, ctx: StepContext, runner: Callable[[Callable[[], None]], Any],
                 done: Callable[[errors.OpError | None], None], timings: list[NodeTiming] | None = None) -> None:
        self._partition = partition
        self._ctx = ctx
        self._runner = runner
        self._done = done
        self._timings = timings
        self.values = list(partition.initial_values)
        self._remaining = partition.num_scheduled
        self._lock = threading.Lock()
        self._running = False
        self._finished = False
        self._async_start: dict[int, float] = {}
        resources = ctx.resources
        self._allocator = resources.allocator(ctx.device) if hasattr(resources, "allocator") else None
        # a traced step and a caller's deadline need the loop's per-node checks
        self._straight = (partition.straight_line() if timings is None and ctx.deadline is None
                          and self._allocator is not None else None)
        if self._straight is not None:
            return  # the loop's state below is not needed: the generated function has its order built in
        self._pending = list(partition.pending_counts)
        self._ready = collections.deque(partition.roots)
        # a traced step keeps every value for its records: it drops and recycles nothing
        self._uses = None
        if self._allocator is not None and timings is None:
            self._uses = list(partition.slot_uses)
            self._owned = partition.owned
            self._deallocate = self._allocator.deallocate

    def start(self) -> None:
        """Begin processing (through the runner); returns at once if the runner is a pool."""
        if self._remaining == 0:
            self._finish(None)
            return
        self._wake()

    def stop(self) -> None:
        """Report now if the step was aborted: an executor not started yet, or idle while it waits for an
        async node, finishes at once (through the runner); a running loop stops before its next node."""
        self._wake()

    def _wake(self):
        with self._lock:
            if self._running or self._finished:
                return
            self._running = True
        self._runner(self._run_loop)

    def _loop(self):
        if self._straight is not None:
            self._run_straight_line(self._straight)
            return
        remaining = self._remaining
        try:
            ready = self._ready
            nodes = self._partition.nodes
            values = self.values
            pending = self._pending
            timings = self._timings
            ctx = self._ctx
            rendezvous = ctx.rendezvous
            expiry_s = ctx.deadline.expiry_s if ctx.deadline is not None else None
            clock = time.perf_counter
            allocator = self._allocator
            uses = self._uses
            context = self._partition.device_context
            kernel_timer = context.kernel_timer if context is not None and timings is not None else None
            index = None
            while True:
                if rendezvous.abort_status is not None or (expiry_s is not None and clock() >= expiry_s):
                    self._finish(self._stop_error())
                    return
                if index is None:
                    try:
                        index = ready.pop()
                    except IndexError:
                        with self._lock:
                            if ready:
                                continue
                            # saved before another thread may wake the executor and read it
                            self._remaining = remaining
                            self._running = False
                        return
                if index < 0:  # an async node completed: ~index
                    index = ~index
                    node = nodes[index]
                    if not self._complete_async(index, node, values):
                        return
                else:
                    node = nodes[index]
                    if node.is_async:
                        self._start_async(index, node, node.gather(values))
                        index = None
                        continue
                    args = node.gather(values)
                    start = clock() if timings is not None else 0.0
                    timer = None
                    if timings is not None and kernel_timer is not None:
                        timer = kernel_timer()
                        timer.start()
                    try:
                        if node.compute_out is not None and allocator is not None:
                            result = (node.compute_out(ctx, allocator, *args) if node.needs_context
                                      else node.compute_out(allocator, *args))
                        elif node.needs_context:
                            result = node.compute(ctx, *args)
                        else:
                            result = node.compute(*args)
                    except Exception as error:  # every kernel failure ends the step as an OpError
                        self._finish(kernel_error(error, node, args, self._partition.device))
                        return
                    n = node.num_outputs
                    if n == 1:
                        values[node.out_slot] = result
                    elif n:
                        values[node.out_slot:node.out_slot + n] = result
                    if timings is not None:
                        if timer is not None:
                            timer.stop()
                        timings.append(NodeTiming(self._partition.device, index, start, clock(), threading.get_ident(),
                                                  values[node.out_slot:node.out_slot + n], kernel_timer=timer))
                    if uses is not None and (node.releases or node.unread):
                        args = result = None
                        self._drop_inputs(node, values, uses)
                index = None  # the first consumer made ready runs next, without a queue round-trip
                for consumer in node.consumers:
                    pending[consumer] -= 1
                    if pending[consumer] == 0:
                        if index is None:
                            index = consumer
                        else:
                            ready.append(consumer)
                remaining -= 1
                if remaining == 0:
                    self._finish(None)
                    return
        except BaseException as interrupt:  # Ctrl-C on the calling thread: cancel the step, let it propagate
            self._finish(cancelled_error(interrupt))
            raise

    def _complete_async(self, index, node, values):
        """Store an async node's value; False (and the step finished) if it failed."""
        error, value = self._async_result.pop(index)
        if error is not None:
            self._finish(error)
            return False
        n = node.num_outputs
        if n == 1:
            values[node.out_slot] = value
        elif n:  # several outputs (a multi-component dequeue): value is a tuple
            values[node.out_slot:node.out_slot + n] = value
        if self._timings is not None:
            self._timings.append(NodeTiming(self._partition.device, index, self._async_start.pop(index),
                                            time.perf_counter(), threading.get_ident(),
                                            values[node.out_slot:node.out_slot + n]))
        if self._uses is not None and (node.releases or node.unread):
            value = None
            self._drop_inputs(node, values, self._uses)
        return True

    def _drop_inputs(self, node, values, uses):
        """TF's executor clears an input entry once its last consumer has run: give back to the allocator
        each slot that may hold one of its buffers (``node.releases``) that ``node`` read for the last time,
        and the outputs of ``node`` nobody reads; the allocator takes a buffer only if no one else holds it
        (a fetch, a variable, a view …). Other entries live until the step ends (they hold no pooled
        buffer: clearing them would cost each node a call and gain nothing)."""
        for slot in node.releases:
            left = uses[slot] - 1
            uses[slot] = left
            if not left:
                value = values[slot]
                values[slot] = None
                self._deallocate(value)
                value = None
        for slot in node.unread:
            value = values[slot]
            values[slot] = None
            self._deallocate(value)
            value = None

    @property
    def _async_result(self):
        results = getattr(self, "_async_results", None)
        if results is None:
            results = self._async_results = {}
        return results

    def _start_async(self, index, node, args):
        if self._timings is not None:
            self._async_start[index] = time.perf_counter()
        results = self._async_result

        def completed(error, value):
            results[index] = (error, value)
            self._ready.append(~index)
            self._wake()

        self._compute_async(node, args, completed)


def inline_runner(fn: Callable[[], Any]) -> None:
    """Run ``fn`` on the calling thread (tests: must give the same results as a thread pool)."""
    fn()
