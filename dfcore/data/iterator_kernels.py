"""The iterator resource and the kernels and shape functions of the iterator ops.

Source: TF's ``core/kernels/data/iterator_ops.cc`` and ``core/ops/dataset_ops.cc``. The resource
lives in the session (``ctx.resources``, kind ``"Iterator"``); the session's ``close`` cancels it,
which stops the current pass's threads. ``get_next`` is asynchronous: the pipeline runs on one
fetching thread per pass (prefetch and parallel map on their own threads), never on an executor
thread, so a step's deadline or error ends a waiting ``get_next`` (TF blocks a thread instead). A failed
element (:class:`~dfcore.data.iteration.ElementError`) is raised by its ``get_next`` alone; the next one
goes on with the following element, as TF's.
"""

import collections
import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from ..ops import common_shapes
from ..ops.data_flow_resources import Waiter, watch_abort
from ..runtime import placer
from .iteration import ElementError, IterationContext
from .workers import WorkerPool

_NOT_INITIALIZED = ("GetNext() failed because the iterator has not been initialized. Ensure that you have run the "
                    "initializer operation for this iterator before getting the next element.")
_OPS = ("IteratorV2", "MakeIterator", "OneShotIterator", "IteratorGetNext", "IteratorToStringHandle",
        "IteratorFromStringHandleV2")


def _no_pipeline(op: Any) -> tuple[Any, Any] | None:
    return None


_pipeline_of: Callable[[Any], tuple[Any, Any] | None] = _no_pipeline


def set_pipeline_lookup(lookup: Callable) -> None:
    """``lookup(op) -> (dataset, captured tensors)`` of a ``MakeIterator``/``OneShotIterator`` op."""
    global _pipeline_of
    _pipeline_of = lookup


class IteratorResource:
    """One iterator in one session: the current pass (an element generator) or none yet.

    ``get_next`` never holds an executor thread: a request is a waiter (as a queue's dequeue,
    :mod:`dfcore.ops.data_flow_resources`) served by the pass's one fetching thread; a request whose
    step is aborted (deadline, error, Ctrl-C) is withdrawn, and an element fetched for it is kept
    for the next request.
    """

    def __init__(self, name: str):
        self.name = name
        self._lock = threading.Lock()
        self._run: IterationContext | None = None
        self._elements = None
        self._waiters: collections.deque = collections.deque()
        self._ready: collections.deque = collections.deque()
        self._fetcher: WorkerPool | None = None

    @property
    def initialized(self) -> bool:
        return self._run is not None

    def initialize(self, dataset: Any, values: dict, only_once: bool = False) -> None:
        """Start a new pass (stopping the current one); ``only_once``: keep a pass already started.

        Raises:
            InvalidArgumentError: a dataset argument is invalid with these values (``batch(0)`` ...).
        """
        if only_once and self._run is not None:
            return
        run = IterationContext(values)
        dataset._check(run)
        self._stop(errors.CancelledError(None, None, "Iterator was re-initialized."))
        with self._lock:
            if only_once and self._run is not None:
                run.close()
                return
            self._run, self._elements = run, dataset._iterate(run)

    def get_next(self, ctx: Any, done: Callable) -> None:
        """Call ``done(error, element)`` with the next element (copies of its components).

        Errors (through ``done``): FailedPreconditionError: not initialized; OutOfRangeError: "End of
        sequence"; whatever the pipeline raised (InvalidArgumentError naming a failing function).
        """
        with self._lock:
            if self._run is None:
                outcome = (errors.FailedPreconditionError(None, None, _NOT_INITIALIZED), None)
            elif self._ready:
                outcome = self._ready.popleft()
            else:
                outcome, waiter = None, Waiter(done, None, self)
                self._waiters.append(waiter)
                self._run.set_wanted(True)
                if self._fetcher is None:
                    self._fetcher = WorkerPool(1, "tf_data_get_next")
                    self._run.add_threads(self._fetcher.threads, self._fetcher.wake)
                self._fetcher.submit(self._fetch, self._run, self._elements)
        if outcome is not None:
            done(*outcome)
        else:
            watch_abort(ctx, waiter)

    def _fetch(self, run: IterationContext, elements: Any) -> None:
        with self._lock:
            if self._run is not run or not self._waiters:
                return
        try:
            element = next(elements)
            outcome: tuple[Any, Any] = ((element.error, None) if isinstance(element, ElementError) else
                                        (None, tuple(np.array(c, copy=True) for c in element)))
        except StopIteration:
            outcome = (errors.OutOfRangeError(None, None, "End of sequence"), None)
        except errors.OpError as error:
            outcome = (error, None)
        except Exception as error:  # a bug in user code must still settle the request
            outcome = (errors.UnknownError(None, None, f"{type(error).__name__}: {error}"), None)
        with self._lock:
            if self._run is not run:
                return
            waiter = self._waiters.popleft() if self._waiters else None
            if waiter is None:
                self._ready.append(outcome)
        if waiter is not None and not waiter.settle(*outcome):
            with self._lock:
                self._ready.appendleft(outcome)

    def _withdraw(self, waiter: Waiter) -> None:
        with self._lock:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            if not self._waiters and self._run is not None:
                self._run.set_wanted(False)  # the step was aborted: buffers stop filling until the next request

    def _stop(self, error: errors.OpError) -> None:
        with self._lock:
            run, elements, waiters = self._run, self._elements, list(self._waiters)
            self._run = self._elements = self._fetcher = None
            self._waiters.clear()
            self._ready.clear()
        for waiter in waiters:
            waiter.settle(error)
        if run is not None:
            run.close()
        if elements is not None and hasattr(elements, "close"):
            try:
                elements.close()
            except ValueError:  # "generator already executing": on a thread abandoned in user code
                pass

    def cancel_all(self, error: errors.OpError) -> None:
        """The session is closing: fail waiting requests with ``error``, stop the pass and its threads."""
        self._stop(error)


def _iterator(ctx, name: str) -> IteratorResource:
    return ctx.resources.resource("Iterator", name, ctx.device, lambda: IteratorResource(name))


def _values(op, inputs) -> tuple[Any, dict]:
    pipeline = _pipeline_of(op)
    if pipeline is None:
        raise errors.FailedPreconditionError(
            None, None, f"The dataset of '{op.name}' is unknown in this process (a graph imported without its "
            "Python pipeline).")
    dataset, tensors = pipeline
    return dataset, dict(zip(tensors, inputs))


registry.mark_stateful(*_OPS)
for _op_type in _OPS:
    registry.NotDifferentiable(_op_type)
    placer.register_device_types(_op_type, "CPU")
for _op_type in ("MakeIterator", "IteratorGetNext", "IteratorToStringHandle"):
    registry.register_ref_inputs(_op_type, 0)

_HANDLE = (dtypes.string._as_ref, TensorShape([]))
for _op_type in ("IteratorV2", "OneShotIterator", "IteratorFromStringHandleV2"):
    registry.RegisterShape(_op_type)(lambda op: [_HANDLE])
registry.RegisterShape("MakeIterator")(common_shapes.no_outputs)
registry.RegisterShape("IteratorToStringHandle")(common_shapes.scalar_of(dtypes.string))


@registry.RegisterShape("IteratorGetNext")
def _get_next_shape(op):
    return list(zip(op.get_attr("output_types"), op.get_attr("output_shapes")))


def _resource_name(op) -> str:
    return op.get_attr("shared_name") or op.name


@registry.RegisterKernel("IteratorV2", needs_context=True)
def _iterator_kernel(op):
    name = _resource_name(op)
    return lambda ctx: _iterator(ctx, name)


@registry.RegisterKernel("MakeIterator", needs_context=True)
def _make_iterator_kernel(op):
    def compute(ctx, iterator, *inputs):
        iterator.initialize(*_values(op, inputs))

    return compute


@registry.RegisterKernel("OneShotIterator", needs_context=True)
def _one_shot_kernel(op):
    def compute(ctx, *inputs):
        iterator = _iterator(ctx, op.name)
        if not iterator.initialized:
            iterator.initialize(*_values(op, inputs), only_once=True)
        return iterator

    return compute


@registry.RegisterKernel("IteratorGetNext", is_async=True)
def _get_next_kernel(op):
    count = len(op.get_attr("output_types"))

    def deliver(done, error, element):
        if error is None and len(element) != count:
            error = errors.InvalidArgumentError(
                None, None, f"Number of components does not match: expected {count} types but got {len(element)}.")
        if error is not None:
            done(error, None)
        else:
            done(None, element[0] if count == 1 else element)

    return lambda ctx, done, iterator: iterator.get_next(ctx, functools.partial(deliver, done))


@registry.RegisterKernel("IteratorToStringHandle")
def _to_string_handle_kernel(op):
    return lambda iterator: np.array(iterator.name.encode(), dtype=object)


@registry.RegisterKernel("IteratorFromStringHandleV2", needs_context=True)
def _from_string_handle_kernel(op):
    def compute(ctx, handle):
        name = handle.item() if isinstance(handle, np.ndarray) else handle
        name = name.decode() if isinstance(name, bytes) else str(name)

        def missing():
            raise errors.NotFoundError(None, None, f"Resource Iterator/{name} does not exist.")

        return ctx.resources.resource("Iterator", name, ctx.device, missing)

    return compute
