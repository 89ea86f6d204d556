"""The threaded parts of tf.data: ``prefetch`` (a producer thread and a bounded buffer) and ``map`` with
``num_parallel_calls`` (a thread pool, results in input order).

Source: TF's ``core/kernels/data/prefetch_dataset_op.cc`` and ``parallel_map_dataset_op.cc``. Every
thread belongs to one iterator pass (:class:`~dfcore.data.iteration.IterationContext`): it stops when the
consumer abandons the pipeline, the iterator is re-initialized or the session closes (joined for a bounded
time, then abandoned: :mod:`dfcore.data.workers`). The producer pulls only while a consumer wants elements
(:meth:`~dfcore.data.iteration.IterationContext.await_demand`). A failed element is buffered as any other;
an exception in the producer is raised to the consumer at ``get_next``.
"""

import collections
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .. import errors
from ..framework import input_events
from .dataset_ops import AUTOTUNE, Dataset
from .iteration import IterationContext
from .workers import WorkerPool

AUTOTUNE_BUFFER = 2
_END = object()


class PrefetchDataset(Dataset):
    """The input's elements, produced ahead by a background thread into a buffer of ``buffer_size``."""

    def __init__(self, input_dataset: Dataset, buffer_size: Any):
        super().__init__(input_dataset._structure, input_dataset._types, input_dataset._shapes, (input_dataset,),
                         (buffer_size,))
        self._input, self._buffer_size = input_dataset, buffer_size

    def _check(self, run) -> None:
        super()._check(run)
        if run.scalar(self._buffer_size) < AUTOTUNE:
            raise errors.InvalidArgumentError(
                None, None, "buffer_size must be >= 0 or set buffer_size to be -1 for auto-tuning")

    def _iterate(self, run):
        size = run.scalar(self._buffer_size)
        return _prefetch(run, self._input._iterate(run), AUTOTUNE_BUFFER if size == AUTOTUNE else max(size, 1))


class _Buffer:
    """A bounded buffer between one producer and one consumer; ``stop()`` wakes both."""

    def __init__(self, size: int):
        self._size = size
        self._items: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self.stopped = False

    def put(self, item: Any) -> bool:
        """Add ``item`` (waiting for room); False once stopped."""
        with self._cond:
            while len(self._items) >= self._size and not self.stopped:
                self._cond.wait()
            if self.stopped:
                return False
            self._items.append(item)
            input_events.buffer_level("Prefetch", len(self._items))
            self._cond.notify_all()
            return True

    def get(self, run: IterationContext) -> Any:
        """The next item; raises CancelledError if the pass is stopped meanwhile."""
        with self._cond:
            while not self._items and not self.stopped:
                self._cond.wait()
            if not self._items:
                run.check_stopped()
            item = self._items.popleft()
            input_events.buffer_level("Prefetch", len(self._items))
            self._cond.notify_all()
            return item

    def stop(self) -> None:
        with self._cond:
            self.stopped = True
            self._cond.notify_all()


def _prefetch(run: IterationContext, elements: Iterator, size: int):
    buffer = _Buffer(size)

    def produce():
        try:
            while True:
                run.await_demand()
                pulled = time.perf_counter()
                element = next(elements, _END)
                if element is _END:
                    break
                if not buffer.put((None, element)):
                    return
                input_events.call_done("Prefetch", pulled)
            buffer.put((None, _END))
        except Exception as error:  # handed to the consumer, raised at get_next
            buffer.put((error, None))
        finally:
            elements_close = getattr(elements, "close", None)
            if elements_close is not None:
                elements_close()

    thread = threading.Thread(target=produce, name="tf_data_prefetch", daemon=True)
    run.add_threads([thread], buffer.stop)
    thread.start()
    return _consume(run, buffer, buffer.stop)


def _consume(run: IterationContext, buffer: _Buffer, stop: Callable[[], None]):
    try:
        while True:
            error, element = buffer.get(run)
            if error is not None:
                raise error
            if element is _END:
                return
            yield element
    finally:
        stop()


def ordered_parallel_map(run: IterationContext, elements: Iterator, fn: Callable, parallel: int) -> Iterator[Any]:
    """``fn`` over ``elements`` with up to ``parallel`` calls in flight on a pool; yields in input order."""
    pool = WorkerPool(parallel, "tf_data_map")
    run.add_threads(pool.threads, pool.wake)
    return _ordered(run, elements, fn, parallel, pool)


def _ordered(run, elements, fn, parallel, pool):
    pending: collections.deque = collections.deque()
    try:
        for element in elements:
            pending.append(pool.submit(fn, element))
            if len(pending) >= parallel:
                yield pending.popleft().result()
            run.check_stopped()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        pool.wake()
