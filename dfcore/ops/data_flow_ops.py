"""Data-flow ops: ``FIFOQueue``, ``ConditionalAccumulator`` and a ``Mutex``.

Source: ``tensorflow/python/ops/data_flow_ops.py`` (queues, accumulators: API, names,
checks and messages) and ``core/ops/data_flow_ops.cc`` / ``resource_variable_ops.cc``
(op types ``FIFOQueueV2``, ``QueueEnqueueV2``, ``QueueEnqueueManyV2``,
``RandomShuffleQueueV2``, ``PaddingFIFOQueueV2``, ``QueueDequeueV2``, ``QueueDequeueManyV2``, ``QueueDequeueUpToV2``,
``QueueSizeV2``, ``QueueCloseV2``,
``ConditionalAccumulator``, ``AccumulatorApplyGradient``, ``AccumulatorTakeGradient``,
``AccumulatorSetGlobalStep``, ``AccumulatorNumAccumulated``, ``MutexV2``,
``MutexLock``, ``ConsumeMutexLock``).

The resource ops output a handle (dtype ``string_ref``, as TF1's original queue ops);
every op taking a handle is colocated with it by the placer, as TF places resource ops
on their resource's device. Kernels and blocking rules: :mod:`dfcore.ops.data_flow_kernels`
and :mod:`dfcore.ops.data_flow_resources`. Semantics worth knowing:

* blocking ops (dequeue on an empty queue, enqueue on a full one, ``take_grad``,
  ``MutexLock``) never hold an executor thread, and end with the step's deadline
  (``DeadlineExceededError``) or when their task goes down (``UnavailableError``);
* a dequeue from a closed queue with too few elements raises ``OutOfRangeError``, an
  enqueue to a closed one ``CancelledError`` (TF's wording);
* an enqueue's elements become visible when its step commits (dfcore's steps are
  transactions: a consumer woken by the element then sees the step's variable writes,
  the order TF gets from control dependencies and in-place updates);
* a mutex (TF's ``MutexV2``) is held from ``MutexLock`` until the lock is consumed by
  ``ConsumeMutexLock`` or, at the latest, until the locking step ends (TF releases it
  when the lock tensor is destroyed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..framework import dtypes as dtypes_lib
from ..framework.graph import get_default_graph
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import data_flow_kernels, padding_fifo_queue, random_shuffle_queue  # noqa: F401 - registers kernels
from .math_ops import cast
from .op_util import apply_op, apply_op1
from .random_ops import get_seed

if TYPE_CHECKING:
    from ..framework.dtypes import DType
    from ..framework.operation import Operation
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import DTypeLike, TensorLike

__all__ = ["QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue", "ConditionalAccumulatorBase",
           "ConditionalAccumulator"]


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _as_shape_list(shapes, unknown_dim_allowed=False):
    """TF's ``_as_shape_list``: None, one shape (a list of ints, ``()`` for a scalar) or a list of shapes.

    Raises:
        TypeError: not a shape or list of shapes; ValueError: a shape not fully defined (TF's wording), or
            with ``unknown_dim_allowed`` of unknown rank.
    """
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (tuple, list)):
        raise TypeError("shapes must be a TensorShape or a list or tuple of TensorShapes.")
    if all(d is None or isinstance(d, int) for d in shapes):
        shapes = [shapes]
    shapes = [TensorShape(s) for s in shapes]
    if unknown_dim_allowed:
        if any(s.ndims is None for s in shapes):
            raise ValueError(f"All shapes must have a known rank: {[str(s) for s in shapes]}")
    elif not all(s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {[str(s) for s in shapes]}")
    return shapes


def _normalize(dtypes, shapes, names, unknown_dim_allowed=False):
    """``(dtypes, shapes, names)`` of a queue, checked (TF's messages)."""
    dtypes = [dtypes_lib.as_dtype(d).base_dtype for d in _as_list(dtypes)]
    shapes = _as_shape_list(shapes, unknown_dim_allowed)
    if shapes is not None and len(shapes) != len(dtypes):
        raise ValueError("Queue shapes must have the same length as dtypes")
    if names is not None:
        names = _as_list(names)
        if len(names) != len(dtypes):
            raise ValueError("Queue names must have the same length as dtypes")
    return dtypes, shapes, names


class QueueBase:
    """Base class of queues: a handle plus the component dtypes, shapes and names.

    Raises:
        ValueError: ``shapes`` or ``names`` not of the same length as ``dtypes`` (TF's wording).
    """

    _unknown_dim_allowed = False  # component shapes may have unknown dimensions (PaddingFIFOQueue)

    def __init__(self, dtypes: Sequence[DTypeLike], shapes: Sequence[Any], names: Sequence[str] | None,
                 queue_ref: Tensor):
        self._dtypes, shapes, self._names = _normalize(dtypes, shapes, names, self._unknown_dim_allowed)
        self._shapes = shapes if shapes is not None else [TensorShape(None)] * len(self._dtypes)
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name

    @property
    def queue_ref(self) -> Tensor:
        return self._queue_ref

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtypes(self) -> list[DType]:
        return list(self._dtypes)

    @property
    def shapes(self) -> list[TensorShape]:
        return list(self._shapes)

    @property
    def names(self) -> list[str] | None:
        return self._names

    def _components(self, vals):
        if isinstance(vals, dict):
            if self._names is None:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names) != sorted(vals.keys()):
                raise ValueError(f"Keys in dictionary to enqueue do not match names of Queue.  "
                                 f"Dictionary: {sorted(vals.keys())}, Queue: {sorted(self._names)}")
            vals = [vals[k] for k in self._names]
        elif not isinstance(vals, (list, tuple)):
            vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Expected {len(self._dtypes)} components to enqueue, got {len(vals)}")
        return [convert_to_tensor(v, dtype=d, name=f"component_{i}") for i, (v, d) in
                enumerate(zip(vals, self._dtypes))]

    def enqueue(self, vals: Any, name: str | None = None) -> Operation:
        """The op enqueueing one element (a tensor, a list/tuple of them, or a dict by name).

        Raises:
            ValueError: a component's static shape is incompatible with the queue's.
        """
        with get_default_graph().name_scope(name or f"{self._name}_enqueue") as scope:
            components = self._components(vals)
            for value, shape in zip(components, self._shapes):
                value.shape.assert_is_compatible_with(shape)
        return apply_op("QueueEnqueueV2", [self._queue_ref] + components,
                        {"Tcomponents": list(self._dtypes), "timeout_ms": -1}, scope)

    def enqueue_many(self, vals: Any, name: str | None = None) -> Operation:
        """The op enqueueing the slices of ``vals`` along dimension 0 (all components equally long).

        Raises:
            ValueError: ranks or shapes incompatible with the queue's.
        """
        with get_default_graph().name_scope(name or f"{self._name}_EnqueueMany") as scope:
            components = self._components(vals)
            batch = None
            for value, shape in zip(components, self._shapes):
                dims = value.shape.as_tuple()
                if dims is not None:
                    if not dims:
                        raise ValueError(f"Shape {value.shape} must have rank at least 1")
                    TensorShape(dims[1:]).assert_is_compatible_with(shape)
                    if batch is not None and dims[0] is not None and dims[0] != batch:
                        raise ValueError(f"Shapes {TensorShape([batch])} and {TensorShape([dims[0]])} are incompatible")
                    batch = batch if dims[0] is None else dims[0]
        return apply_op("QueueEnqueueManyV2", [self._queue_ref] + components,
                        {"Tcomponents": list(self._dtypes), "timeout_ms": -1}, scope)

    def _outputs(self, op):
        outputs = op.outputs
        if self._names is not None:
            return dict(zip(self._names, outputs))
        return outputs[0] if len(outputs) == 1 else outputs

    def dequeue(self, name: str | None = None) -> Any:
        """One element: a Tensor (one component), a list, or a dict by name; blocks while empty."""
        op = apply_op("QueueDequeueV2", [self._queue_ref], {"component_types": list(self._dtypes),
                                                          "timeout_ms": -1}, name or f"{self._name}_Dequeue")
        return self._outputs(op)

    def dequeue_many(self, n: TensorLike, name: str | None = None) -> Any:
        """``n`` elements stacked along a new dimension 0; blocks until ``n`` are there."""
        n = convert_to_tensor(n, dtype=dtypes_lib.int32, name="n")
        op = apply_op("QueueDequeueManyV2", [self._queue_ref, n], {"component_types": list(self._dtypes),
                                                                 "timeout_ms": -1},
                      name or f"{self._name}_DequeueMany")
        return self._outputs(op)

    def dequeue_up_to(self, n: TensorLike, name: str | None = None) -> Any:
        """Like :meth:`dequeue_many`, but once the queue is closed it gives what is left (at least one
        element) instead of raising ``OutOfRangeError``; dimension 0 of the result is unknown."""
        n = convert_to_tensor(n, dtype=dtypes_lib.int32, name="n")
        op = apply_op("QueueDequeueUpToV2", [self._queue_ref, n], {"component_types": list(self._dtypes),
                                                                 "timeout_ms": -1},
                      name or f"{self._name}_DequeueUpTo")
        return self._outputs(op)

    def size(self, name: str | None = None) -> Tensor:
        """An int32 scalar: the number of elements in the queue."""
        return apply_op1("QueueSizeV2", [self._queue_ref], {}, name or f"{self._name}_Size")

    def close(self, cancel_pending_enqueues: bool = False, name: str | None = None) -> Operation:
        """The op closing the queue (later enqueues fail; dequeues drain it, then raise OutOfRangeError)."""
        return apply_op("QueueCloseV2", [self._queue_ref],
                        {"cancel_pending_enqueues": bool(cancel_pending_enqueues)}, name or f"{self._name}_Close")


class FIFOQueue(QueueBase):
    """A queue producing elements first in, first out (TF's ``tf.FIFOQueue``).

    Args:
        capacity: the most elements it holds (negative: unbounded).
        dtypes: the component dtypes (a DType or a list).
        shapes: optional component shapes (required by ``dequeue_many``).
        names: optional component names (enqueue/dequeue dicts).
        shared_name: share the queue under this name across sessions and graphs.
        name: the op name.
    """

    def __init__(self, capacity: int, dtypes: Sequence[DTypeLike], shapes: Sequence[Any] | None = None,
                 names: Sequence[str] | None = None, shared_name: str | None = None, name: str = "fifo_queue"):
        dtypes, shapes, names = _normalize(dtypes, shapes, names)
        attrs = {"component_types": dtypes, "shapes": shapes or [], "capacity": int(capacity), "container": "",
                 "shared_name": shared_name or ""}
        super().__init__(dtypes, shapes, names, apply_op1("FIFOQueueV2", [], attrs, name))


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose ``dequeue_many``/``dequeue_up_to`` pad components to the batch's largest size
    (TF's ``tf.PaddingFIFOQueue``, op ``PaddingFIFOQueueV2``; zeros, or empty strings).

    Args:
        capacity, dtypes, names, shared_name, name: as :class:`FIFOQueue`.
        shapes: one shape per component, of known rank; ``None`` marks a dimension that may vary.
    Raises:
        ValueError: not one shape per component, or a shape of unknown rank (TF's wording).
    """

    _unknown_dim_allowed = True

    def __init__(self, capacity: int, dtypes: Sequence[DTypeLike], shapes: Sequence[Any],
                 names: Sequence[str] | None = None, shared_name: str | None = None, name: str = "padding_fifo_queue"):
        count = len(_as_shape_list(shapes, unknown_dim_allowed=True) or [])
        if count != len(_as_list(dtypes)):
            raise ValueError(f"Shapes must be provided for all components, but received {len(_as_list(dtypes))} "
                             f"dtypes and {count} shapes.")
        dtypes, shapes, names = _normalize(dtypes, shapes, names, unknown_dim_allowed=True)
        attrs = {"component_types": dtypes, "shapes": shapes, "capacity": int(capacity), "container": "",
                 "shared_name": shared_name or ""}
        super().__init__(dtypes, shapes, names, apply_op1("PaddingFIFOQueueV2", [], attrs, name))


class RandomShuffleQueue(QueueBase):
    """A queue dequeuing elements in random order (TF's ``tf.RandomShuffleQueue``, op ``RandomShuffleQueueV2``).

    Args:
        capacity: the most elements it holds.
        min_after_dequeue: a dequeue waits while it would leave fewer elements (until the queue is closed).
        dtypes, shapes, names, shared_name, name: as :class:`FIFOQueue`.
        seed: the op seed; with the graph seed it fixes the order (``tf.set_random_seed``).
    Raises (when the queue op runs):
        InvalidArgumentError: ``min_after_dequeue`` negative or not below ``capacity`` (TF's wording).
    """

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes: Sequence[DTypeLike],
                 shapes: Sequence[Any] | None = None, names: Sequence[str] | None = None, seed: int | None = None,
                 shared_name: str | None = None, name: str = "random_shuffle_queue"):
        dtypes, shapes, names = _normalize(dtypes, shapes, names)
        seed1, seed2 = get_seed(seed)
        attrs = {"component_types": dtypes, "shapes": shapes or [], "capacity": int(capacity),
                 "min_after_dequeue": int(min_after_dequeue), "seed": seed1 or 0, "seed2": seed2 or 0,
                 "container": "", "shared_name": shared_name or ""}
        super().__init__(dtypes, shapes, names, apply_op1("RandomShuffleQueueV2", [], attrs, name))


class ConditionalAccumulatorBase:
    """A gradient accumulator handle with its dtype and shape."""

    def __init__(self, dtype: DType, shape: TensorLike, accumulator_ref: Tensor):
        self._dtype = dtype
        self._shape = TensorShape(shape)
        self._accumulator_ref = accumulator_ref
        self._name = accumulator_ref.op.name

    @property
    def accumulator_ref(self) -> Tensor:
        return self._accumulator_ref

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> DType:
        return self._dtype

    def num_accumulated(self, name: str | None = None) -> Tensor:
        """An int32 scalar: gradients accumulated since the last ``take_grad``."""
        return apply_op1("AccumulatorNumAccumulated", [self._accumulator_ref], {}, name or "num_accumulated")

    def set_global_step(self, new_global_step: TensorLike, name: str | None = None) -> Operation:
        """The op setting the step below which applied gradients count as stale."""
        step = cast(convert_to_tensor(new_global_step), dtypes_lib.int64)
        return apply_op("AccumulatorSetGlobalStep", [self._accumulator_ref, step], {}, name or "SetGlobalStep")


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """Aggregates gradients, dropping stale ones (TF's ``tf.ConditionalAccumulator``).

    Args:
        dtype: the gradients' dtype.
        shape: their shape (checked on apply).
        shared_name: share it under this name.
        reduction_type: ``"MEAN"`` (default) or ``"SUM"``.
    Raises:
        ValueError: an unknown ``reduction_type``.
    """

    def __init__(self, dtype: DTypeLike, shape: TensorLike = None, shared_name: str | None = None,
                 name: str = "conditional_accumulator", reduction_type: str = "MEAN"):
        if reduction_type not in ("MEAN", "SUM"):
            raise ValueError(f"reduction_type must be MEAN or SUM, got {reduction_type!r}")
        dtype = dtypes_lib.as_dtype(dtype).base_dtype
        shape = TensorShape(shape)
        handle = apply_op1("ConditionalAccumulator", [], {
            "dtype": dtype, "shape": shape, "container": "", "shared_name": shared_name or "",
            "reduction_type": reduction_type}, name)
        super().__init__(dtype, shape, handle)

    def apply_grad(self, grad: TensorLike, local_step: TensorLike = 0, name: str | None = None) -> Operation:
        """The op adding ``grad`` unless ``local_step`` is below the accumulator's global step.

        Raises:
            ValueError: ``grad``'s static shape is incompatible with the accumulator's.
        """
        grad = convert_to_tensor(grad, dtype=self._dtype)
        grad.shape.assert_is_compatible_with(self._shape)
        local_step = cast(convert_to_tensor(local_step), dtypes_lib.int64)
        return apply_op("AccumulatorApplyGradient", [self._accumulator_ref, local_step, grad],
                        {"dtype": self._dtype}, name or "AccumulatorApplyGradient")

    def take_grad(self, num_required: TensorLike, name: str | None = None) -> Tensor:
        """The average of ``num_required`` gradients (blocks until they are in); resets the
        accumulator and increments its global step."""
        num_required = convert_to_tensor(num_required, dtype=dtypes_lib.int32)
        return apply_op1("AccumulatorTakeGradient", [self._accumulator_ref, num_required],
                         {"dtype": self._dtype}, name or "AccumulatorTakeGradient")


class Mutex:
    """A mutex resource (TF's ``MutexV2``; see the module doc for when a lock is released).

    Args:
        shared_name: share it under this name.
        name: the op name.
    """

    def __init__(self, shared_name: str | None = None, name: str = "Mutex"):
        self._handle = apply_op1("MutexV2", [], {"container": "", "shared_name": shared_name or ""}, name)

    @property
    def handle(self) -> Tensor:
        return self._handle

    def lock(self, name: str | None = None) -> Tensor:
        """The ``MutexLock`` tensor: ops depending on it run while this step holds the mutex."""
        return apply_op1("MutexLock", [self._handle], {}, name or "MutexLock")


def consume_mutex_lock(mutex_lock: TensorLike, name: str | None = None) -> Operation:
    """The ``ConsumeMutexLock`` op: releases the lock when it runs."""
    return apply_op("ConsumeMutexLock", [mutex_lock], {}, name or "ConsumeMutexLock")
