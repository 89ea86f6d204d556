"""The ``PaddingFIFOQueueV2`` resource and kernel: a FIFO queue whose components may vary in size.

Source: TF's ``core/kernels/padding_fifo_queue.cc`` and ``core/ops/data_flow_ops.cc``. Its
component shapes may have unknown dimensions (``None``); an enqueued element must match the
known ones. ``dequeue_many``/``dequeue_up_to`` pad every component of the batch with zeros
(empty strings for ``tf.string``) up to the largest size of each unknown dimension among the
elements taken; ``dequeue`` gives one element unpadded. ``tf.train.batch(dynamic_pad=True)``
batches through it.
"""

from typing import Any

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from .fifo_queue import FIFOQueueResource, shape_string

registry.mark_stateful("PaddingFIFOQueueV2")
registry.NotDifferentiable("PaddingFIFOQueueV2")
registry.RegisterShape("PaddingFIFOQueueV2")(lambda op: [(dtypes.string._as_ref, TensorShape([]))])


class PaddingFIFOQueueResource(FIFOQueueResource):
    """A :class:`FIFOQueueResource` of partially known component ``shapes`` (``None`` dims), padding batches."""

    kind = "PaddingFIFOQueue"

    def check_component(self, index: int, value: Any) -> None:
        """Raise TF's InvalidArgumentError unless ``value`` matches component ``index``'s known dimensions."""
        expected = self.shapes[index]
        if len(expected) != value.ndim or any(e is not None and e != a for e, a in zip(expected, value.shape)):
            raise errors.InvalidArgumentError(
                None, None, f"Shape mismatch in tuple component {index}. Expected {shape_string(expected)}, got "
                f"{shape_string(value.shape)}")

    def _take(self, n, many):
        taken = [self._pop() for _ in range(n)]
        if not many:
            return taken[0]
        return tuple(_pad([item[c] for item in taken], self.shapes[c], self.dtypes[c])
                     for c in range(len(self.dtypes)))


def _pad(values, shape, dtype):
    """``values`` stacked along a new axis 0, each padded with zeros to the largest size per dimension."""
    size = [max((v.shape[i] for v in values), default=0) if d is None else d for i, d in enumerate(shape)]
    batch = np.zeros([len(values)] + size, dtype=dtype)
    if dtype.kind == "O":
        batch.fill(b"")
    for i, value in enumerate(values):
        batch[(i,) + tuple(slice(0, s) for s in value.shape)] = value
    return batch


@registry.RegisterKernel("PaddingFIFOQueueV2", needs_context=True)
def _padding_fifo_queue_kernel(op):
    name, capacity = op.get_attr("shared_name") or op.name, op.get_attr("capacity")
    types = [np.dtype(t.as_numpy_dtype) for t in op.get_attr("component_types")]
    shapes = [tuple(s.as_list()) for s in op.get_attr("shapes")]
    return lambda ctx: ctx.resources.resource(
        "PaddingFIFOQueue", name, ctx.device, lambda: PaddingFIFOQueueResource(name, capacity, shapes, types))
