"""Dataset transformations: map, filter, batch, padded_batch, shuffle, repeat, take, skip, shard, cache, interleave.

Source: ``tensorflow/python/data/ops/dataset_ops.py`` (TF 1.15) and the kernels in
``core/kernels/data/`` (``batch_dataset_op.cc``, ``shuffle_dataset_op.cc`` ...), whose
argument checks and messages are kept; they raise ``InvalidArgumentError`` when the
iterator is initialized.
"""

import itertools
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import errors
from ..framework import dtypes as dtypes_lib, input_events
from ..framework.tensor_shape import TensorShape
from ..ops.random_ops import get_seed
from . import prefetch, structure as nest
from .dataset_ops import AUTOTUNE, Dataset
from .function import TracedFunction


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
        super().__init__(nest.indices(self._fn.output_structure), self._fn.output_types, self._fn.output_shapes,
                         (input_dataset,))
        self._input = input_dataset
        #: the parallelism asked for (``AUTOTUNE`` stays ``AUTOTUNE``: the simulated clock resolves it itself)
        self.num_parallel_calls = num_parallel_calls
        self._parallel = (os.cpu_count() or 1) if num_parallel_calls == AUTOTUNE else (num_parallel_calls or 1)

    @property
    def simulated_cost_s(self) -> float:
        """Host CPU seconds of one call on the simulated clock: the ``map(simulated_cost_s=...)`` given, else
        the cost model's estimate of the traced ops (:meth:`TracedFunction.estimated_cost_s`)."""
        return self._fn.estimated_cost_s() if self._simulated_cost_s is None else float(self._simulated_cost_s)

    def _iterate(self, run):
        elements = self._input._iterate(run)
        stage = "ParallelMap" if self._parallel > 1 else "Map"

        def call(element):
            return input_events.timed(stage, lambda: self._fn(run, element))

        if self._parallel <= 1:
            return (call(element) for element in elements)
        return prefetch.ordered_parallel_map(run, elements, call, self._parallel)


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
        return (element for element in self._input._iterate(run) if self._fn(run, element)[0])


class BatchDataset(_Unary):
    """Consecutive elements stacked along a new dimension 0; the last batch is dropped if short and
    ``drop_remainder``. Batch dimension: ``batch_size`` when static and ``drop_remainder``, else None."""

    def __init__(self, input_dataset: Dataset, batch_size: Any, drop_remainder: Any):
        static = batch_size if isinstance(batch_size, int) and drop_remainder is True else None
        super().__init__(input_dataset, (batch_size, drop_remainder),
                         [TensorShape([static]).concatenate(s) for s in input_dataset._shapes])
        self._batch_size, self._drop_remainder = batch_size, drop_remainder

    def _check(self, run) -> None:
        super()._check(run)
        if run.scalar(self._batch_size) <= 0:
            raise errors.InvalidArgumentError(None, None, "Batch size must be greater than zero.")

    def _batches(self, run):
        size, drop = run.scalar(self._batch_size), bool(run.value(self._drop_remainder))
        elements = self._input._iterate(run)
        while True:
            batch = list(itertools.islice(elements, size))
            if not batch or (drop and len(batch) < size):
                return
            yield batch

    def _iterate(self, run):
        for batch in self._batches(run):
            yield tuple(_stack(index, [element[index] for element in batch]) for index in range(len(self._types)))


def _stack(index: int, values: list) -> np.ndarray:
    first = np.shape(values[0])
    for position, value in enumerate(values):
        if np.shape(value) != first:
            raise errors.InvalidArgumentError(
                None, None, f"Cannot batch tensors with different shapes in component {index}. First element had "
                f"shape {list(first)} and element {position} had shape {list(np.shape(value))}.")
    return np.stack(values)


class PaddedBatchDataset(BatchDataset):
    """Batches whose components are padded with ``padding_values`` (default 0, b"" for strings) to
    ``padded_shapes`` (nested like the element; None or -1 dims: the longest in the batch).

    Raises:
        ValueError: ``padded_shapes`` of another rank than a component (at construction);
        InvalidArgumentError at ``get_next``: a component larger than its padded shape (TF's wording).
    """

    def __init__(self, input_dataset: Dataset, batch_size: Any, padded_shapes: Any, padding_values: Any,
                 drop_remainder: Any):
        super().__init__(input_dataset, batch_size, drop_remainder)
        element_types = input_dataset.output_types
        nest.assert_same_structure(element_types, padded_shapes)
        self._padded = [TensorShape([None if d in (None, -1) else d for d in np.reshape(s, -1).tolist()])
                        if not isinstance(s, TensorShape) else s for s in nest.flatten(padded_shapes)]
        for shape, padded in zip(input_dataset._shapes, self._padded):
            if shape.ndims is not None and shape.ndims != padded.ndims:
                raise ValueError(f"The padded shape {padded} is not compatible with the corresponding input "
                                 f"component shape {shape}.")
        if padding_values is None:
            self._padding = [b"" if t == dtypes_lib.string else 0 for t in self._types]
        else:
            self._padding = nest.flatten(padding_values)
        self._shapes = [TensorShape([s[0].value]).concatenate(p) for s, p in zip(self._shapes, self._padded)]

    def _iterate(self, run):
        for batch in self._batches(run):
            yield tuple(self._pad(index, [element[index] for element in batch]) for index in range(len(self._types)))

    def _pad(self, index: int, values: list) -> np.ndarray:
        longest = np.max([np.shape(v) for v in values], axis=0) if values[0].ndim else ()
        target = [int(m) if p is None else p for m, p in zip(longest, self._padded[index].as_tuple())]
        out = np.full([len(values)] + target, self._padding[index], dtype=self._types[index].as_numpy_dtype)
        for row, value in enumerate(values):
            if any(v > t for v, t in zip(np.shape(value), target)):
                raise errors.InvalidArgumentError(
                    None, None, "Attempted to pad to a smaller size than the input element.")
            out[(row,) + tuple(slice(0, v) for v in np.shape(value))] = value
        return out


class ShuffleDataset(_Unary):
    """TF's shuffle: a buffer of ``buffer_size`` elements filled from the input; each output is drawn
    uniformly from the buffer and its slot refilled with the next input element; once the input ends the
    buffer drains at random. Seeds follow TF1's graph/op seed rules (:func:`get_seed`); with a seed the
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
        if run.scalar(self._buffer_size) <= 0:
            raise errors.InvalidArgumentError(None, None, "buffer_size must be greater than zero.")

    def _iterate(self, run):
        epoch = run.count(self) if self._reshuffle else 0
        rng = np.random.Generator(np.random.Philox([run.seed(self, self._seeds), epoch]))
        size, buffer = run.scalar(self._buffer_size), []
        for element in self._input._iterate(run):
            buffer.append(element)
            if len(buffer) == size:
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
    """The first ``count`` elements (-1: all)."""

    def __init__(self, input_dataset: Dataset, count: Any):
        super().__init__(input_dataset, (count,))
        self._count = count

    def _iterate(self, run):
        count = run.scalar(self._count)
        elements = self._input._iterate(run)
        return elements if count < 0 else itertools.islice(elements, count)


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
            elements.append(element)
            yield element
        run.caches[self] = elements


class InterleaveDataset(Dataset):
    """The elements of the datasets ``map_func`` (traced once, returning a Dataset) makes from the input:
    ``cycle_length`` of them open at a time, ``block_length`` elements from each in turn; a finished one is
    replaced by the next input element's dataset when its turn comes.

    Raises:
        TypeError: ``map_func`` does not return a Dataset (TF's wording).
    """

    def __init__(self, input_dataset: Dataset, map_func: Callable, cycle_length: Any, block_length: Any):
        self._fn = TracedFunction(map_func, input_dataset._structure, input_dataset._types,
                                  input_dataset._shapes, "interleave")
        inner = self._fn.result
        if not isinstance(inner, Dataset):
            raise TypeError("`map_func` must return a `Dataset` object.")
        super().__init__(inner._structure, inner._types, inner._shapes, (input_dataset,),
                         (cycle_length, block_length))
        self._input = input_dataset
        self._cycle_length, self._block_length = cycle_length, block_length

    def _open(self, run, element):
        values = self._fn(run, element)
        child = run.child(dict(zip(self._fn.outputs, values)))
        self._fn.result._check(child)
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
