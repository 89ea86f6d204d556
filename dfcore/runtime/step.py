"""Run one step of a :class:`~dfcore.runtime.step_plan.StepPlan`: one executor per
partition, one rendezvous, and an all-or-nothing outcome.

Source: TF's ``DirectSession::RunInternal`` (``ExecutorBarrier``): the feeds become the
arguments of the step's call frame, every partition's executor starts, the barrier
waits for all of them, the fetches are the frame's return values, and the first
error aborts the rendezvous so every other executor stops.

The :class:`Barrier` is the one way a step ends early. Its first error — a failing op's,
the step's deadline (checked by every executor between ops, and by the caller's wait),
or ``CancelledError`` when the caller is interrupted (Ctrl-C) — aborts the rendezvous:
blocked receives and queue waits fail, every executor stops before its next op, and the
caller gets the error (or its interrupt, re-raised) only once no executor runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import backends, errors
from .call_frame import CallFrame
from .cancellation import DEFAULT_STEP_TIMEOUT_S, Deadline, cancelled_error
from .control_flow_executor import ControlFlowExecutor, make_executor
from .executor import Executor, StepContext, inline_runner
from .rendezvous import Rendezvous
from .session_resources import SessionResources
from .variable_store import StepTransaction

if TYPE_CHECKING:
    from .step_plan import StepPlan


class StepResult:
    """Fetched values plus what tracing needs: executors (their value slots), node timings,
    the rendezvous, the step's collective instances (``StepContext.collectives``) and, for a traced step,
    ``allocator_stats``: ``{device: (AllocatorStats before, after)}``."""

    def __init__(self, values: list[Any], executors: list[Executor | ControlFlowExecutor | None],
                 timings: list[Any] | None,
                 rendezvous: Rendezvous, collectives: dict[Any, Any] | None = None) -> None:
        self.values = values
        self.executors = executors
        self.timings = timings
        self.rendezvous = rendezvous
        self.collectives = {} if collectives is None else collectives
        self.allocator_stats: dict[str, tuple[Any, Any]] = {}


def run_step(plan: StepPlan, feed_values: Sequence[Any], txn: StepTransaction, resources: SessionResources,
             step_id: int, pool: Any, timeout_s: float | None = None, trace: bool = False) -> StepResult:
    """Run ``plan`` once; return a :class:`StepResult`.

    Args:
        feed_values: numpy values aligned with the plan's feeds.
        txn: the step's variable transaction (the caller commits or aborts it).
        pool: a ``concurrent.futures`` executor for the plan's pooled partitions.
        timeout_s: the step's deadline in seconds, checked before every op on every runner; None: the
            default :data:`DEFAULT_STEP_TIMEOUT_S`, which bounds the step's waits.
        trace: record a :class:`~dfcore.runtime.executor.NodeTiming` per node.
    Raises:
        OpError: the first error of any partition (the step is aborted everywhere).
        DeadlineExceededError: the step ran past ``timeout_s``.
        KeyboardInterrupt: re-raised once the interrupted step is cancelled everywhere.
    """
    step = Step(plan, feed_values, txn, resources, step_id, timeout_s, trace)
    resources.watch_step(step_id, step.barrier.abort)  # a closing session cancels the step
    allocators = {p.device: resources.allocator(p.device) for p in plan.partitions} if trace else {}
    before = {device: allocator.stats() for device, allocator in allocators.items()}
    try:
        step.start(pool)
        step.barrier.wait()
    except BaseException as interrupt:
        if not step.barrier.finished():  # Ctrl-C while the step ran or was waited for: cancel it as a deadline would
            step.barrier.cancel(interrupt)
        raise
    result = step.result()
    result.allocator_stats = {device: (before[device], allocator.stats()) for device, allocator in allocators.items()}
    return result


class Step:
    """What every run of a plan sets up the same way — a normal, a remote (master) and a partial run: the
    deadline, the rendezvous, the call frame, the :class:`Barrier`, the :class:`StepContext` and the runners.

    Args:
        plan, feed_values, txn, resources, step_id, timeout_s, trace: as :func:`run_step` (a partial run
            feeds through its rendezvous: no ``feed_values``).
        rendezvous: the step's rendezvous; None: a new in-process one whose crossing values land in the
            receiving device's allocator (``resources.allocator``).
    """

    def __init__(self, plan: StepPlan, feed_values: Sequence[Any], txn: StepTransaction, resources: SessionResources,
                 step_id: Any, timeout_s: float | None = None, trace: bool = False,
                 rendezvous: Rendezvous | None = None) -> None:
        self.plan = plan
        self.deadline = Deadline(DEFAULT_STEP_TIMEOUT_S if timeout_s is None else timeout_s)
        self.rendezvous = Rendezvous(allocator_for=getattr(resources, "allocator", None)) \
            if rendezvous is None else rendezvous
        self.frame = CallFrame(feed_values, plan.num_retvals)
        self.timings: list[Any] | None = [] if trace else None
        self.barrier = Barrier(len(plan.partitions), self.rendezvous, self.deadline)
        # a deadline the caller set holds between ops too; the default one only bounds waits (reading the
        # clock before every op costs ~60 ns, some 8% of a cheap op)
        self.ctx = StepContext(txn, resources, step_id, self.rendezvous, tracing=trace,
                               deadline=None if timeout_s is None else self.deadline, call_frame=self.frame)
        self.executors: list[Executor | ControlFlowExecutor | None] = [None] * len(plan.partitions)

    def start(self, pool: Any, elsewhere: Collection[int] = ()) -> None:
        """Start the executors of every partition but those in ``elsewhere`` (indices run by other tasks):
        the plan's pooled ones on ``pool`` (None: every one inline, on the calling thread), as
        :func:`start_executors` (whose interrupt it re-raises)."""
        runners = {i: (lambda fn: pool.submit(fn)) if i in self.plan.pooled and pool is not None else inline_runner
                   for i in range(len(self.plan.partitions)) if i not in elsewhere}
        self.executors = start_executors(self.plan, runners, self.ctx, self.barrier, self.timings)

    def result(self) -> StepResult:
        """The :class:`StepResult` of the finished step (after ``barrier.wait()``)."""
        return StepResult(fetched_values(self.plan, self.frame), self.executors, self.timings, self.rendezvous,
                          self.ctx.collectives)


def start_executors(plan: StepPlan, runners: Mapping[int, Callable[..., Any]], ctx: StepContext,
                    barrier: Barrier, timings: list[Any] | None) -> list[Executor | ControlFlowExecutor | None]:
    """Start an executor for each partition index in ``runners`` (``{index: runner}``), pooled ones first;
    returns a list aligned with ``plan.partitions`` (None where a partition is not run here).

    Raises:
        KeyboardInterrupt: (or any interrupt) re-raised once the step is aborted with ``CancelledError``
            and every executor was told to stop (running ones stop before their next op; the caller
            waits for them, e.g. with :meth:`Barrier.cancel`).
    """
    executors: list[Executor | ControlFlowExecutor | None] = [None] * len(plan.partitions)
    order = sorted(runners, key=lambda i: runners[i] is inline_runner)
    try:
        made = []
        for i in order:
            partition = plan.partitions[i]
            executors[i] = executor = make_executor(partition, ctx.on_device(partition.device), runners[i],
                                                    barrier.done, timings)
            made.append(executor)
        for executor in made:  # pooled ones first, as made
            executor.start()
    except BaseException as interrupt:  # Ctrl-C while an inline partition ran on this thread
        barrier.abort(cancelled_error(interrupt))
        for i in order:
            maybe = executors[i]
            if maybe is None:
                barrier.done(None)  # never made: it has nothing to stop
            else:
                maybe.stop()  # one not started yet reports at once
        raise
    return executors


def fetched_values(plan: StepPlan, frame: CallFrame) -> list[Any]:
    """The fetched values of a finished step, aligned with the plan's fetches: a fed one is its feed (the
    frame's argument), any other the frame's return value; as numpy, what the client gets.

    Each array is the client's own copy, as TF's fetch gives (``TF_TensorToPyArray``,
    ``tensorflow/python/lib/core/ndarray_tensor.cc``, reuses a buffer only when nothing else holds it): a
    fetched variable, or a value a device handed over without a copy, may be the very array a variable keeps,
    and writing into the fetched array must not change the variable.
    """
    return [_client_array(frame.get_arg(where) if kind == "feed" else frame.retval(where))
            for kind, where in plan.fetch_sources]


def _client_array(value: Any) -> Any:
    """``value`` as a numpy array of the client's own: a device array's transfer to numpy is already a new
    array; a numpy array is copied."""
    if isinstance(value, np.ndarray):
        return value.copy()
    return backends.to_numpy(value)


class Barrier:
    """Counts finished executors and keeps the step's first error (TF's ``ExecutorBarrier``).

    Args:
        count: how many executors will report through :meth:`done`.
        rendezvous: the step's rendezvous, aborted by the first error.
        deadline: the step's :class:`~dfcore.runtime.cancellation.Deadline` (default
            :data:`DEFAULT_STEP_TIMEOUT_S` from now).
    """

    def __init__(self, count: int, rendezvous: Rendezvous, deadline: Deadline | None = None) -> None:
        self._pending = count
        self._rendezvous = rendezvous
        self._deadline = Deadline(DEFAULT_STEP_TIMEOUT_S) if deadline is None else deadline
        self._lock = threading.Lock()
        # made only for a wait that has to block: a step whose executors all ran inline is done before its
        # wait (an Event costs ~1.5 us, a few percent of a small step's run)
        self._all_done: threading.Event | None = None
        self._error: errors.OpError | None = None

    def done(self, error: errors.OpError | None) -> None:
        """An executor finished, with ``error`` (an OpError) or None."""
        if error is not None:
            self.abort(error)
        with self._lock:
            self._pending -= 1
            all_done = self._all_done if self._pending == 0 else None
        if all_done is not None:
            all_done.set()

    def abort(self, error: errors.OpError) -> None:
        """End the step with ``error`` unless it already has an error: keep it and abort the rendezvous, which
        wakes every blocked wait of the step; executors stop before their next op."""
        with self._lock:
            if self._error is not None:
                return
            self._error = error
        self._rendezvous.start_abort(error)

    def finished(self) -> bool:
        """True once every partition has reported (successfully or not)."""
        return self._pending <= 0

    def _wait(self, timeout_s: float | None = None) -> bool:
        """Wait until every executor has reported, at most ``timeout_s`` (None: no limit); True once they have."""
        with self._lock:
            if self._pending <= 0:
                return True
            if self._all_done is None:
                self._all_done = threading.Event()
            all_done = self._all_done
        return all_done.wait(timeout_s)

    def wait(self, timeout_s: float | None = None) -> None:
        """Wait until every executor has reported, at most until the deadline (or ``timeout_s`` from now;
        then the step is aborted with the deadline's error and stops), and raise the step's first error.

        Raises:
            OpError: the step's first error; ``DeadlineExceededError`` when it ran out of time.
        """
        if self._pending > 0:
            deadline = self._deadline if timeout_s is None else Deadline(timeout_s)
            if not self._wait(deadline.remaining_s()):
                self.abort(deadline.error())
                self._wait()
        if self._error is not None:
            raise self._error

    def cancel(self, interrupt: BaseException) -> None:
        """Abort the step with ``CancelledError`` (the caller was interrupted by ``interrupt``) and wait until
        every executor has reported."""
        self.abort(cancelled_error(interrupt))
        self._wait()
