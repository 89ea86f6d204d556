"""The ``RandomShuffleQueueV2`` resource and kernel: a queue that dequeues elements in random order.

Source: TF's ``core/kernels/random_shuffle_queue_op.cc`` and ``core/ops/data_flow_ops.cc``.
A dequeue takes a uniformly random element, and only while more than
``min_after_dequeue`` elements would remain — so the queue always holds enough to mix
— until it is closed: then the rest drains (and ``OutOfRangeError`` follows). The
random order comes from the op's ``seed``/``seed2`` (both 0: fresh entropy); dfcore
draws with numpy's Philox generator, so seeded orders are deterministic but differ
from TF's. Its enqueue, dequeue, size and close ops are the shared queue ops of
:mod:`dfcore.ops.data_flow_kernels`.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from .fifo_queue import FIFOQueueResource

registry.mark_stateful("RandomShuffleQueueV2")
registry.NotDifferentiable("RandomShuffleQueueV2")
registry.RegisterShape("RandomShuffleQueueV2")(lambda op: [(dtypes.string._as_ref, TensorShape([]))])


class RandomShuffleQueueResource(FIFOQueueResource):
    """A :class:`FIFOQueueResource` whose dequeues take random elements, leaving ``min_after_dequeue``
    until closed; ``rng`` a numpy Generator."""

    kind = "RandomShuffleQueue"

    def __init__(self, name: str, capacity: int, min_after_dequeue: int, shapes: Sequence[Any],
                 dtypes: Sequence[np.dtype], rng: np.random.Generator):
        super().__init__(name, capacity, shapes, dtypes)
        self.min_after_dequeue = min_after_dequeue
        self._rng = rng
        self._items = []

    def _available(self):
        return len(self._items) - (0 if self.closed else self.min_after_dequeue)

    def _pop(self):
        index = int(self._rng.integers(len(self._items)))
        self._items[index], self._items[-1] = self._items[-1], self._items[index]
        return self._items.pop()

    def _put_back(self, items):
        self._items.extend(items)


@registry.RegisterKernel("RandomShuffleQueueV2", needs_context=True)
def _random_shuffle_queue_kernel(op):
    name = op.get_attr("shared_name") or op.name
    capacity, min_after = op.get_attr("capacity"), op.get_attr("min_after_dequeue")
    seed, seed2 = op.get_attr("seed"), op.get_attr("seed2")
    types = [np.dtype(t.as_numpy_dtype) for t in op.get_attr("component_types")]
    shapes: list[Any] = [tuple(s.as_list()) for s in op.get_attr("shapes")] or [None] * len(types)

    def compute(ctx):
        if min_after < 0:
            raise errors.InvalidArgumentError(None, None, f"min_after_dequeue {min_after} must be >= 0")
        if 0 <= capacity <= min_after:
            raise errors.InvalidArgumentError(
                None, None, f"min_after_dequeue {min_after} must be < capacity {capacity}")
        rng = ctx.resources.generator(("RandomShuffleQueue", name), seed, seed2)
        return ctx.resources.resource(
            "RandomShuffleQueue", name, ctx.device,
            lambda: RandomShuffleQueueResource(name, capacity, min_after, shapes, types, rng))

    return compute
