"""The iterator resource and the kernels and shape functions of the iterator ops.

Source: TF's ``core/kernels/data/iterator_ops.cc`` and ``core/ops/dataset_ops.cc``. The resource
lives in the session (``ctx.resources``, kind ``"Iterator"``); the session's ``close`` cancels it,
which stops the current pass's threads. ``get_next`` runs the pipeline on the calling executor
thread (prefetch and parallel map on their own threads), one call at a time per iterator.
"""

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from ..ops import common_shapes
from ..runtime import placer
from .iteration import IterationContext

_NOT_INITIALIZED = ("GetNext() failed because the iterator has not been initialized. Ensure that you have run the "
                    "initializer operation for this iterator before getting the next element.")
_OPS = ("IteratorV2", "MakeIterator", "OneShotIterator", "IteratorGetNext", "IteratorToStringHandle",
        "IteratorFromStringHandleV2")
_pipeline_of: Callable = lambda op: None


def set_pipeline_lookup(lookup: Callable) -> None:
    """``lookup(op) -> (dataset, captured tensors)`` of a ``MakeIterator``/``OneShotIterator`` op."""
    global _pipeline_of
    _pipeline_of = lookup


class IteratorResource:
    """One iterator in one session: the current pass (an element generator) or none yet."""

    def __init__(self, name: str):
        self.name = name
        self._lock = threading.Lock()
        self._run: IterationContext | None = None
        self._elements = None

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
        self._stop()
        with self._lock:
            if only_once and self._run is not None:
                run.close()
                return
            self._run, self._elements = run, dataset._iterate(run)

    def get_next(self) -> tuple:
        """The next element (copies of its components).

        Raises:
            FailedPreconditionError: not initialized; OutOfRangeError: "End of sequence";
            whatever the pipeline raised (InvalidArgumentError naming a failing function).
        """
        with self._lock:
            if self._elements is None:
                raise errors.FailedPreconditionError(None, None, _NOT_INITIALIZED)
            try:
                element = next(self._elements)
            except StopIteration:
                raise errors.OutOfRangeError(None, None, "End of sequence") from None
        return tuple(np.array(c, copy=True) for c in element)

    def _stop(self) -> None:
        run = self._run
        if run is not None:
            run.close()
        with self._lock:
            if self._elements is not None and hasattr(self._elements, "close"):
                self._elements.close()
            self._run = self._elements = None

    def cancel_all(self, error: errors.OpError) -> None:
        """The session is closing: stop the current pass and its threads."""
        self._stop()


def _iterator(ctx, name: str) -> IteratorResource:
    return ctx.resources.resource("Iterator", name, ctx.device, lambda: IteratorResource(name))


def _values(op, inputs) -> tuple:
    dataset, tensors = _pipeline_of(op) or (None, None)
    if dataset is None:
        raise errors.FailedPreconditionError(
            None, None, f"The dataset of '{op.name}' is unknown in this process (a graph imported without its "
            "Python pipeline).")
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


@registry.RegisterKernel("IteratorGetNext")
def _get_next_kernel(op):
    count = len(op.get_attr("output_types"))

    def compute(iterator):
        element = iterator.get_next()
        if len(element) != count:
            raise errors.InvalidArgumentError(
                None, None, f"Number of components does not match: expected {count} types but got {len(element)}.")
        return element[0] if count == 1 else element

    return compute


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
