"""Run one step of a :class:`~dfcore.runtime.step_plan.StepPlan`: one executor per
partition, one rendezvous, and an all-or-nothing outcome.

Source: TF's ``DirectSession::RunInternal`` (``ExecutorBarrier``): feeds are sent to
the rendezvous, every partition's executor starts, the barrier waits for all of
them, and the first error aborts the rendezvous so every other executor stops.
The caller's wait has a deadline; on expiry the step is aborted with
``DeadlineExceededError`` and no executor is left running.
"""

import threading

from .. import errors
from .executor import Executor, StepContext, inline_runner
from .rendezvous import Rendezvous
from .variable_store import VarRef

DEFAULT_STEP_TIMEOUT_S = 600.0


class StepResult:
    """Fetched values plus what tracing needs: executors (their value slots), node timings,
    the rendezvous and the step's collective instances (``StepContext.collectives``)."""

    def __init__(self, values, executors, timings, rendezvous, collectives=None):
        self.values = values
        self.executors = executors
        self.timings = timings
        self.rendezvous = rendezvous
        self.collectives = {} if collectives is None else collectives


def run_step(plan, feed_values, txn, resources, step_id, pool, timeout_s=None, trace=False):
    """Run ``plan`` once; return a :class:`StepResult`.

    Args:
        feed_values: numpy values aligned with the plan's feeds.
        txn: the step's variable transaction (the caller commits or aborts it).
        pool: a ``concurrent.futures`` executor for the plan's pooled partitions.
        timeout_s: the step's deadline (default :data:`DEFAULT_STEP_TIMEOUT_S`).
        trace: record a :class:`~dfcore.runtime.executor.NodeTiming` per node.
    Raises:
        OpError: the first error of any partition (the step is aborted everywhere).
        DeadlineExceededError: the step ran past ``timeout_s``.
    """
    rendezvous = Rendezvous()
    for key, value in zip(plan.feed_keys, feed_values):
        if key is not None:
            rendezvous.send(key, value)
    timings = [] if trace else None
    barrier = Barrier(len(plan.partitions), rendezvous)
    ctx = StepContext(txn, resources, step_id, rendezvous, tracing=trace)
    runners = {i: (lambda fn: pool.submit(fn)) if i in plan.pooled else inline_runner
               for i in range(len(plan.partitions))}
    executors = start_executors(plan, runners, ctx, barrier, timings)
    barrier.wait(DEFAULT_STEP_TIMEOUT_S if timeout_s is None else timeout_s)
    values = [fetch_value(source, feed_values, rendezvous, txn) for source in plan.fetch_sources]
    return StepResult(values, executors, timings, rendezvous, ctx.collectives)


def start_executors(plan, runners, ctx, barrier, timings):
    """Start an executor for each partition index in ``runners`` (``{index: runner}``), pooled ones first;
    returns a list aligned with ``plan.partitions`` (None where a partition is not run here)."""
    executors = [None] * len(plan.partitions)
    for i, runner in runners.items():
        partition = plan.partitions[i]
        executors[i] = Executor(partition, ctx.on_device(partition.device), runner, barrier.done, timings)
    for i in sorted(runners, key=lambda i: runners[i] is inline_runner):
        executors[i].start()
    return executors


def fetch_value(source, feed_values, rendezvous, txn):
    """The value of one fetch source of a finished step (a feed, or what the client ``_Send`` posted)."""
    kind, where = source
    if kind == "feed":
        return feed_values[where]
    value = rendezvous.recv(where, timeout_s=0)
    return txn.read(value) if isinstance(value, VarRef) else value


class Barrier:
    """Counts finished executors; the first error aborts the rendezvous (TF's ``ExecutorBarrier``)."""

    def __init__(self, count, rendezvous):
        self._pending = count
        self._rendezvous = rendezvous
        self._lock = threading.Lock()
        self._all_done = threading.Event()
        self._error = None
        if count == 0:
            self._all_done.set()

    def done(self, error):
        with self._lock:
            if error is not None and self._error is None:
                self._error = error
                first = True
            else:
                first = False
            self._pending -= 1
            finished = self._pending == 0
        if first:
            self._rendezvous.start_abort(error)
        if finished:
            self._all_done.set()

    def finished(self):
        """True once every partition has reported (successfully or not)."""
        return self._all_done.is_set()

    def wait(self, timeout_s):
        if not self._all_done.wait(timeout_s):
            timeout = errors.DeadlineExceededError(
                None, None, f"Timed out: the step did not finish within {timeout_s} s; it was aborted. "
                "Raise RunOptions.timeout_in_ms or ConfigProto.operation_timeout_in_ms if it needs longer.")
            with self._lock:
                if self._error is None:
                    self._error = timeout
            self._rendezvous.start_abort(timeout)
            self._all_done.wait()
        if self._error is not None:
            raise self._error
