"""Shape functions and kernels of the data-flow ops (see :mod:`dfcore.ops.data_flow_ops`).

Source: TF's ``core/ops/data_flow_ops.cc`` (shapes) and ``core/kernels/queue_ops.cc``,
``conditional_accumulator_base_op.h``, ``mutex_ops.cc`` (kernels). Resource ops look
their resource up by ``shared_name`` (else the op's name) in ``ctx.resources`` — on a
cluster, in the state of the task the op runs on. Blocking kernels are asynchronous
(``compute(ctx, done, *inputs)``).
"""

from typing import Any

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from . import common_shapes
from .data_flow_resources import AccumulatorResource, MutexLockHandle, MutexResource
from .fifo_queue import FIFOQueueResource

_HANDLE_OPS = ("FIFOQueueV2", "ConditionalAccumulator", "MutexV2")
_USERS = ("QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2", "QueueDequeueManyV2", "QueueDequeueUpToV2",
          "QueueSizeV2",
          "QueueCloseV2", "AccumulatorApplyGradient", "AccumulatorTakeGradient", "AccumulatorSetGlobalStep",
          "AccumulatorNumAccumulated", "MutexLock", "ConsumeMutexLock")
registry.mark_stateful(*_HANDLE_OPS, *_USERS)
for _op_type in _HANDLE_OPS + _USERS:
    registry.NotDifferentiable(_op_type)
for _op_type in _USERS:
    registry.register_ref_inputs(_op_type, 0)  # the handle: colocates the op with its resource

_HANDLE = (dtypes.string._as_ref, TensorShape([]))
_QUEUE_OPS = ("FIFOQueueV2", "RandomShuffleQueueV2", "PaddingFIFOQueueV2")


def _handle_shape(op):
    return [_HANDLE]


for _op_type in _HANDLE_OPS + ("MutexLock",):
    registry.RegisterShape(_op_type)(_handle_shape)
for _op_type in ("QueueEnqueueV2", "QueueEnqueueManyV2", "QueueCloseV2", "AccumulatorApplyGradient",
                 "AccumulatorSetGlobalStep", "ConsumeMutexLock"):
    registry.RegisterShape(_op_type)(common_shapes.no_outputs)
registry.RegisterShape("QueueSizeV2")(common_shapes.scalar_of(dtypes.int32))
registry.RegisterShape("AccumulatorNumAccumulated")(common_shapes.scalar_of(dtypes.int32))


def _queue_shapes(op):
    """The component shapes of the queue feeding ``op`` (unknown when not visible)."""
    types = op.get_attr("component_types")
    producer = op.inputs[0].op
    shapes = producer.get_attr("shapes") if producer.type in _QUEUE_OPS else []
    return list(shapes) if shapes else [TensorShape(None)] * len(types)


@registry.RegisterShape("QueueDequeueV2")
def _dequeue_shape(op):
    return list(zip(op.get_attr("component_types"), _queue_shapes(op)))


@registry.RegisterShape("QueueDequeueManyV2")
@registry.RegisterShape("QueueDequeueUpToV2")
def _dequeue_many_shape(op):
    n = op.inputs[1]
    value = n.op.get_attr("value") if n.op.type == "Const" and op.type == "QueueDequeueManyV2" else None
    batch = TensorShape([None if value is None else int(value)])
    return [(t, batch.concatenate(s)) for t, s in zip(op.get_attr("component_types"), _queue_shapes(op))]


@registry.RegisterShape("AccumulatorTakeGradient")
def _take_shape(op):
    producer = op.inputs[0].op
    shape = producer.get_attr("shape") if producer.type == "ConditionalAccumulator" else TensorShape(None)
    return [(op.get_attr("dtype"), shape)]


def _resource_name(op):
    return op.get_attr("shared_name") or op.name


# -- resources ------------------------------------------------------------------
@registry.RegisterKernel("FIFOQueueV2", needs_context=True)
def _fifo_queue_kernel(op):
    name, capacity = _resource_name(op), op.get_attr("capacity")
    types = [np.dtype(t.as_numpy_dtype) for t in op.get_attr("component_types")]
    shapes: list[Any] = [tuple(s.as_list()) for s in op.get_attr("shapes")] or [None] * len(types)

    def make():
        return FIFOQueueResource(name, capacity, shapes, types)

    return lambda ctx: ctx.resources.resource("FIFOQueue", name, ctx.device, make)


@registry.RegisterKernel("ConditionalAccumulator", needs_context=True)
def _accumulator_kernel(op):
    name, shape = _resource_name(op), op.get_attr("shape").as_tuple()
    dtype, reduction = np.dtype(op.get_attr("dtype").as_numpy_dtype), op.get_attr("reduction_type")
    return lambda ctx: ctx.resources.resource("ConditionalAccumulator", name, ctx.device,
                                              lambda: AccumulatorResource(name, dtype, shape, reduction))


@registry.RegisterKernel("MutexV2", needs_context=True)
def _mutex_kernel(op):
    name = _resource_name(op)
    return lambda ctx: ctx.resources.resource("Mutex", name, ctx.device, lambda: MutexResource(name))


# -- queues ---------------------------------------------------------------------
def _enqueue(ctx, done, queue, elements):
    """Reserve room, then publish ``elements`` when the step commits (or give the room back)."""

    def reserved(error, _):
        if error is None:
            ctx.resources.defer(ctx.step_id, on_commit=lambda: queue.publish(elements),
                                on_abort=lambda: queue.release(len(elements)))
        done(error, None)

    queue.reserve(ctx, len(elements), reserved)


@registry.RegisterKernel("QueueEnqueueV2", is_async=True)
def _enqueue_kernel(op):
    def compute(ctx, done, queue, *components):
        element = tuple(np.array(c, copy=True) for c in components)
        for i, value in enumerate(element):
            queue.check_component(i, value)
        _enqueue(ctx, done, queue, [element])

    return compute


@registry.RegisterKernel("QueueEnqueueManyV2", is_async=True)
def _enqueue_many_kernel(op):
    def compute(ctx, done, queue, *components):
        arrays = [np.asarray(c) for c in components]
        if any(a.ndim == 0 for a in arrays):
            raise errors.InvalidArgumentError(None, None, "Tensors to enqueue_many must have at least rank 1")
        if len({a.shape[0] for a in arrays}) > 1:
            raise errors.InvalidArgumentError(
                None, None, "Expected all components to have the same size in dimension 0, got "
                f"{[a.shape[0] for a in arrays]}")
        elements = [tuple(np.array(a[i], dtype=a.dtype, copy=True) for a in arrays) for i in range(arrays[0].shape[0])]
        for element in elements[:1]:
            for i, value in enumerate(element):
                queue.check_component(i, value)
        if 0 <= queue.capacity < len(elements):  # can never fit at once: streamed in as room frees
            queue.stream(ctx, elements, done)
        else:
            _enqueue(ctx, done, queue, elements)

    return compute


def _single(done, count):
    """Adapt a dequeue's tuple of components to the executor: the array itself for one output."""
    if count != 1:
        return done
    return lambda error, value: done(error, None if error is not None else value[0])


@registry.RegisterKernel("QueueDequeueV2", is_async=True)
def _dequeue_kernel(op):
    count = len(op.get_attr("component_types"))
    return lambda ctx, done, queue: queue.dequeue(ctx, 1, False, _single(done, count))


def _dequeue_many_kernel(up_to):
    def factory(op):
        count = len(op.get_attr("component_types"))

        def compute(ctx, done, queue, n):
            n = int(n)
            if n < 0:
                raise errors.InvalidArgumentError(None, None, f"Dequeue requested {n} < 0 elements")
            if any(s is None for s in queue.shapes):
                raise errors.InvalidArgumentError(
                    None, None, f"{queue.kind}'s DequeueMany and DequeueUpTo require the components to have "
                    "specified shapes.")
            queue.dequeue(ctx, n, True, _single(done, count), up_to=up_to)

        return compute

    return factory


registry.RegisterKernel("QueueDequeueManyV2", is_async=True)(_dequeue_many_kernel(up_to=False))
registry.RegisterKernel("QueueDequeueUpToV2", is_async=True)(_dequeue_many_kernel(up_to=True))


@registry.RegisterKernel("QueueSizeV2", needs_context=True)
def _size_kernel(op):
    return lambda ctx, queue: np.int32(queue.size())


@registry.RegisterKernel("QueueCloseV2", needs_context=True)
def _close_kernel(op):
    cancel = op.get_attr("cancel_pending_enqueues")
    return lambda ctx, queue: queue.close(cancel)


# -- accumulators ---------------------------------------------------------------
@registry.RegisterKernel("AccumulatorApplyGradient", needs_context=True)
def _apply_gradient_kernel(op):
    return lambda ctx, accumulator, local_step, grad: accumulator.apply(grad, local_step) and None


@registry.RegisterKernel("AccumulatorTakeGradient", is_async=True)
def _take_gradient_kernel(op):
    def compute(ctx, done, accumulator, num_required):
        if int(num_required) < 1:
            raise errors.InvalidArgumentError(
                None, None, f"Argument num_required must be positive, but was {int(num_required)}")
        accumulator.take(ctx, int(num_required), done)

    return compute


@registry.RegisterKernel("AccumulatorSetGlobalStep", needs_context=True)
def _set_global_step_kernel(op):
    return lambda ctx, accumulator, step: accumulator.set_global_step(step)


@registry.RegisterKernel("AccumulatorNumAccumulated", needs_context=True)
def _num_accumulated_kernel(op):
    return lambda ctx, accumulator: np.int32(accumulator.num_accumulated())


# -- mutex ----------------------------------------------------------------------
@registry.RegisterKernel("MutexLock", is_async=True)
def _mutex_lock_kernel(op):
    def compute(ctx, done, mutex):
        def make_lock():
            handle = MutexLockHandle(mutex)
            ctx.resources.defer(ctx.step_id, on_commit=handle.release, on_abort=handle.release)
            return handle

        mutex.acquire(ctx, done, make_lock)

    return compute


@registry.RegisterKernel("ConsumeMutexLock", needs_context=True)
def _consume_lock_kernel(op):
    return lambda ctx, lock: lock.release()
