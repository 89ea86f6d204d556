"""Dataset transformations: map, filter, shuffle, repeat, take, skip, shard, cache, interleave.

Source: ``tensorflow/python/data/ops/dataset_ops.py`` (TF 1.15) and the kernels in
``core/kernels/data/`` (``batch_dataset_op.cc``, ``shuffle_dataset_op.cc`` ...), whose
argument checks and messages are kept (TF 2.21's wording); they raise ``InvalidArgumentError`` when the
iterator is initialized. A failed element (:class:`~dfcore.data.iteration.ElementError`) passes through
each transformation as TF's kernels pass a failed ``GetNext``: a batch it falls in is dropped for the
error, a shuffle hands it on at once, ``take`` does not count it, ``cache`` does not keep it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..framework import dtypes as dtypes_lib, input_events
from ..framework.tensor_shape import TensorShape
from ..ops.random_ops import get_seed
from . import prefetch, structure as nest
from .dataset_ops import AUTOTUNE, UNKNOWN_CARDINALITY, Dataset
from .function import TracedFunction
from .iteration import ElementError

if TYPE_CHECKING:
    from .iteration import IterationContext


def check_positive(run: IterationContext, value: Any, message: str, autotune: bool = False) -> None:
    """InvalidArgumentError(``message``) unless ``value`` > 0 (or AUTOTUNE where ``autotune``)."""
    size = run.scalar(value)
    if size <= 0 and not (autotune and size == AUTOTUNE):
        raise errors.InvalidArgumentError(None, None, message)


class _Unary(Dataset):
    """A transformation of one input keeping its element structure."""

    def __init__(self, input_dataset: Dataset, tensors: tuple = (), shapes: list | None = None):
        super().__init__(input_dataset._structure, input_dataset._types,
                         input_dataset._shapes if shapes is None else shapes, (input_dataset,), tensors)
        self._input = input_dataset


class MapDataset(Dataset):
    """``map_func`` applied to each element (traced once); with ``num_parallel_calls`` > 1 (or AUTOTUNE)
    that many calls run on a thread pool and results keep the input order."""

    def __init__(self, input_dataset: Dataset, map_func: Callable, num_parallel_calls: int | None,
                 simulated_cost_s: float | None = None):
        if simulated_cost_s is not None and not simulated_cost_s >= 0:
            raise ValueError(f"simulated_cost_s must be >= 0 seconds, got {simulated_cost_s!r}")
        self._fn = TracedFunction(map_func, input_dataset._structure, input_dataset._types,
                                  input_dataset._shapes, "map")
        self._simulated_cost_s = simulated_cost_s
        if isinstance(self._fn.result, Dataset):
            raise TypeError(f"The map function '{self._fn.name}' returned a Dataset; use interleave or flat_map.")
        if self._fn.result is None or not self._fn.outputs:  # TF rejects an empty output list when it builds the op
            raise ValueError("Attr 'output_types' of 'MapDataset' Op passed list of length 0 less than minimum 1.")
        super().__init__(nest.indices(self._fn.output_structure), self._fn.output_types, self._fn.output_shapes,
                         (input_dataset,))
        self._input = input_dataset
        #: the parallelism asked for (``AUTOTUNE`` stays ``AUTOTUNE``: the simulated clock resolves it itself)
        self.num_parallel_calls = num_parallel_calls
        self._parallel = (os.cpu_count() or 1) if num_parallel_calls == AUTOTUNE else (num_parallel_calls or 1)

    def _check(self, run) -> None:
        super()._check(run)
        if self.num_parallel_calls is not None:
            check_positive(run, self.num_parallel_calls, "num_parallel_calls must be greater than zero.",
                           autotune=True)

    @property
    def simulated_cost_s(self) -> float:
        """Host CPU seconds of one call on the simulated clock: the ``map(simulated_cost_s=...)`` given, else
        the cost model's estimate of the traced ops (:meth:`TracedFunction.estimated_cost_s`)."""
        return self._fn.estimated_cost_s() if self._simulated_cost_s is None else float(self._simulated_cost_s)

    @property
    def vectorized(self) -> bool:
        """Whether the function can run on a whole batch at once (``map`` then ``batch`` fused:
        :mod:`dfcore.data.batching`)."""
        return self._fn.vectorized

    def call(self, run: IterationContext, element: Any) -> Any:
        """The function's result for one element, or an ElementError (``element``'s own, or the function's)."""
        if isinstance(element, ElementError):
            return element
        try:
            return input_events.timed(self.stage, lambda: self._fn(run, element))
        except errors.OpError as error:
            return ElementError(error)

    def call_batched(self, run: IterationContext, batch: tuple) -> tuple:
        """The function on elements stacked along dimension 0 (only when :attr:`vectorized`); raises the
        InvalidArgumentError of a failing op."""
        return input_events.timed(self.stage, lambda: self._fn.call_batched(batch))

    @property
    def stage(self) -> str:
        return "ParallelMap" if self._parallel > 1 else "Map"

    def _iterate(self, run):
        elements = self._input._iterate(run)
        if self._parallel <= 1:
            return (self.call(run, element) for element in elements)
        return prefetch.ordered_parallel_map(run, elements, lambda element: self.call(run, element), self._parallel)


class FilterDataset(_Unary):
    """The elements for which ``predicate`` (traced once) returns True.

    Raises:
        ValueError: the predicate does not return a scalar bool (TF's wording).
    """

    def __init__(self, input_dataset: Dataset, predicate: Callable):
        self._fn = TracedFunction(predicate, input_dataset._structure, input_dataset._types,
                                  input_dataset._shapes, "filter")
        if isinstance(self._fn.result, Dataset) or self._fn.output_types != [dtypes_lib.bool] or \
                not self._fn.output_shapes[0].is_compatible_with(TensorShape([])):
            raise ValueError("`predicate` return type must be convertible to a scalar boolean tensor.")
        super().__init__(input_dataset)

    def _iterate(self, run):
        for element in self._input._iterate(run):
            try:
                if isinstance(element, ElementError) or self._fn(run, element)[0]:
                    yield element
                else:
                    run.await_demand()  # a predicate rejecting everything must not spin after its step ends
            except errors.OpError as error:
                yield ElementError(error)


class ShuffleDataset(_Unary):
    """TF's shuffle: a buffer of ``buffer_size`` elements filled from the input; each output is drawn
    uniformly from the buffer and its slot refilled with the next input element; once the input ends the
    buffer drains at random; ``UNKNOWN_CARDINALITY`` (-2): a buffer as large as the input. The fill waits
    while no consumer wants an element (:meth:`~dfcore.data.iteration.IterationContext.await_demand`); a failed
    input element is handed on at once. Seeds follow TF1's graph/op seed rules (:func:`get_seed`); with a seed the
    order repeats from one initialization (or session) to the next; ``reshuffle_each_iteration`` (default
    True) draws a new order on each pass (``repeat``)."""

    def __init__(self, input_dataset: Dataset, buffer_size: Any, seed: int | None,
                 reshuffle_each_iteration: bool | None):
        super().__init__(input_dataset, (buffer_size,))
        self._buffer_size = buffer_size
        self._seeds = get_seed(seed)
        self._reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)

    def _check(self, run) -> None:
        super()._check(run)
        if run.scalar(self._buffer_size) != UNKNOWN_CARDINALITY:
            check_positive(run, self._buffer_size, "buffer_size must be greater than zero or UNKNOWN_CARDINALITY")

    def _iterate(self, run):
        epoch = run.count(self) if self._reshuffle else 0
        rng = np.random.Generator(np.random.Philox([run.seed(self, self._seeds), epoch]))
        size, buffer = run.scalar(self._buffer_size), []
        for element in self._input._iterate(run):
            if isinstance(element, ElementError):
                yield element
                continue
            buffer.append(element)
            if len(buffer) < size or size == UNKNOWN_CARDINALITY:
                run.await_demand()
            else:
                index = int(rng.integers(len(buffer)))
                buffer[index], buffer[-1] = buffer[-1], buffer[index]
                yield buffer.pop()
        while buffer:
            index = int(rng.integers(len(buffer)))
            buffer[index], buffer[-1] = buffer[-1], buffer[index]
            yield buffer.pop()


class RepeatDataset(_Unary):
    """The input ``count`` times (None or -1: forever; an empty input ends at once)."""

    def __init__(self, input_dataset: Dataset, count: Any):
        super().__init__(input_dataset, (count,))
        self._count = -1 if count is None else count

    def _iterate(self, run):
        count = run.scalar(self._count)
        passes = itertools.count() if count < 0 else range(count)
        for _ in passes:
            produced = False
            for element in self._input._iterate(run):
                produced = True
                yield element
            if not produced:
                return


class TakeDataset(_Unary):
    """The first ``count`` elements (-1: all); failed elements pass without being counted (as TF's)."""

    def __init__(self, input_dataset: Dataset, count: Any):
        super().__init__(input_dataset, (count,))
        self._count = count

    def _iterate(self, run):
        count = run.scalar(self._count)
        elements = self._input._iterate(run)
        if count < 0:
            yield from elements
            return
        taken = 0
        for element in (elements if count else ()):
            yield element
            taken += not isinstance(element, ElementError)
            if taken == count:
                return


class SkipDataset(_Unary):
    """All elements after the first ``count`` (-1: none)."""

    def __init__(self, input_dataset: Dataset, count: Any):
        super().__init__(input_dataset, (count,))
        self._count = count

    def _iterate(self, run):
        count = run.scalar(self._count)
        return iter(()) if count < 0 else itertools.islice(self._input._iterate(run), count, None)


class ShardDataset(_Unary):
    """Elements ``index, index + num_shards, ...`` of the input."""

    def __init__(self, input_dataset: Dataset, num_shards: Any, index: Any):
        super().__init__(input_dataset, (num_shards, index))
        self._num_shards, self._index = num_shards, index

    def _check(self, run) -> None:
        super()._check(run)
        shards, index = run.scalar(self._num_shards), run.scalar(self._index)
        if shards <= 0:
            raise errors.InvalidArgumentError(
                None, None, f"Number of shards must be greater than zero (currently num_shards = {shards}).")
        if not 0 <= index < shards:
            raise errors.InvalidArgumentError(
                None, None, f"Index must be between 0 and {shards - 1} (currently index = {index}).")

    def _iterate(self, run):
        return itertools.islice(self._input._iterate(run), run.scalar(self._index), None,
                                run.scalar(self._num_shards))


class CacheDataset(_Unary):
    """The input's elements, replayed from memory once one pass has completed (in this iterator).

    Raises:
        NotImplementedError: a ``filename`` (dfcore caches in memory only).
    """

    def __init__(self, input_dataset: Dataset, filename: str):
        if filename:
            raise NotImplementedError("dfcore's Dataset.cache() caches in memory only (filename='').")
        super().__init__(input_dataset)

    def _iterate(self, run):
        cached = run.caches.get(self)
        if cached is not None:
            yield from cached
            return
        elements = []
        for element in self._input._iterate(run):
            if not isinstance(element, ElementError):
                elements.append(element)
            yield element
        run.caches[self] = elements


class IgnoreErrorsDataset(_Unary):
    """The input's elements without the failed ones (``tf.data.experimental.ignore_errors``)."""

    def _iterate(self, run):
        return (element for element in self._input._iterate(run) if not isinstance(element, ElementError))


class InterleaveDataset(Dataset):
    """The elements of the datasets ``map_func`` (traced once, returning a Dataset) makes from the input:
    ``cycle_length`` of them open at a time, ``block_length`` elements from each in turn; a finished one is
    replaced by the next input element's dataset when its turn comes.

    Raises:
        TypeError: ``map_func`` does not return a Dataset (TF's wording).
    """

    def __init__(self, input_dataset: Dataset, map_func: Callable, cycle_length: Any, block_length: Any,
                 num_parallel_calls: Any = None):
        self._fn = TracedFunction(map_func, input_dataset._structure, input_dataset._types,
                                  input_dataset._shapes, "interleave")
        inner = self._fn.result
        if not isinstance(inner, Dataset):
            raise TypeError("`map_func` must return a `Dataset` object.")
        super().__init__(inner._structure, inner._types, inner._shapes, (input_dataset,),
                         (cycle_length, block_length, num_parallel_calls))
        self._input = input_dataset
        self._cycle_length, self._block_length = cycle_length, block_length
        self.num_parallel_calls = num_parallel_calls

    def _check(self, run) -> None:
        super()._check(run)
        check_positive(run, self._cycle_length, "cycle_length must be greater than zero.", autotune=True)
        check_positive(run, self._block_length, "block_length must be greater than zero.")
        if self.num_parallel_calls is not None:
            check_positive(run, self.num_parallel_calls, "num_parallel_calls must be greater than zero.",
                           autotune=True)

    def _open(self, run, element):
        if isinstance(element, ElementError):
            return iter((element,))
        try:
            values = self._fn(run, element)
            child = run.child(dict(zip(self._fn.outputs, values)))
            self._fn.result._check(child)
        except errors.OpError as error:
            return iter((ElementError(error),))
        return self._fn.result._iterate(child)

    def _iterate(self, run):
        cycle = run.scalar(self._cycle_length)
        cycle = (os.cpu_count() or 1) if cycle == AUTOTUNE else cycle
        block = run.scalar(self._block_length)
        inputs = self._input._iterate(run)
        slots: list = [None] * cycle
        exhausted, index = False, 0
        while not exhausted or any(s is not None for s in slots):
            if slots[index] is None and not exhausted:
                element = next(inputs, None)
                exhausted = element is None
                slots[index] = None if exhausted else self._open(run, element)
            if slots[index] is not None:
                taken = list(itertools.islice(slots[index], block))
                yield from taken
                if len(taken) < block:
                    slots[index] = None
            index = (index + 1) % cycle
