"""Batching transformations: ``batch``, ``padded_batch``, and ``map`` then ``batch`` fused and vectorized.

Source: TF's ``core/kernels/data/batch_dataset_op.cc``, ``padded_batch_dataset_op.cc`` and the
``map_and_batch_fusion`` / ``map_vectorization`` rewrites (``core/grappler/optimizers/data/``). A batch
that a failed element falls in is dropped and the error handed on in its place; the next batch starts after
the failed element (as TF's). When ``batch`` reads a ``map`` whose function vectorizes
(:mod:`dfcore.data.function_plan`), directly or through ``repeat`` (which commutes with a function that has
no state), ``batch_size`` input elements are stacked and the function runs once on them; a chunk holding
a failed input element, inputs of different shapes, or a call that fails is mapped per element instead, so
both paths give the same elements and the same errors.
"""

import collections
import itertools
from typing import Any

import numpy as np

from .. import errors
from ..framework import dtypes as dtypes_lib
from ..framework.tensor_shape import TensorShape
from . import structure as nest
from .dataset_ops import Dataset
from .iteration import ElementError
from .transformations import MapDataset, RepeatDataset, check_positive


class BatchDataset(Dataset):
    """Consecutive elements stacked along a new dimension 0; the last batch is dropped if short and
    ``drop_remainder``. Batch dimension: ``batch_size`` when static and ``drop_remainder``, else None."""

    def __init__(self, input_dataset: Dataset, batch_size: Any, drop_remainder: Any):
        static = batch_size if isinstance(batch_size, int) and drop_remainder is True else None
        super().__init__(input_dataset._structure, input_dataset._types,
                         [TensorShape([static]).concatenate(s) for s in input_dataset._shapes], (input_dataset,),
                         (batch_size, drop_remainder))
        self._input = input_dataset
        self._batch_size, self._drop_remainder = batch_size, drop_remainder
        self._fused = _fusable(input_dataset) if type(self) is BatchDataset else None

    def _check(self, run) -> None:
        super()._check(run)
        check_positive(run, self._batch_size, "Batch size must be greater than zero.")

    def _batches(self, run):
        """Lists of ``batch_size`` elements (or an ElementError: the batch it fell in is dropped)."""
        size, drop = run.scalar(self._batch_size), bool(run.value(self._drop_remainder))
        elements = self._input._iterate(run)
        while True:
            batch: list = []
            for element in elements:
                if isinstance(element, ElementError):
                    break
                batch.append(element)
                if len(batch) == size:
                    break
            else:
                element = None
            if isinstance(element, ElementError):
                yield element
                continue
            if not batch or (drop and len(batch) < size):
                return
            yield batch

    def _checked(self, batch: list) -> Any:
        """The batch's components, or the ElementError of elements that cannot be batched together."""
        try:
            return self._combine(batch)
        except errors.OpError as error:
            return ElementError(error)

    def _combine(self, batch: list) -> tuple:
        return tuple(_stack(index, [element[index] for element in batch]) for index in range(len(self._types)))

    def _iterate(self, run):
        if self._fused is not None:
            return self._map_and_batch(run, *self._fused)
        return (batch if isinstance(batch, ElementError) else self._checked(batch) for batch in self._batches(run))

    def _map_and_batch(self, run, mapped: MapDataset, unmapped: Dataset):
        """``mapped``'s function run once per batch of ``unmapped``'s elements where it can (module doc)."""
        size, drop = run.scalar(self._batch_size), bool(run.value(self._drop_remainder))
        inputs = unmapped._iterate(run)
        pending: collections.deque = collections.deque()  # mapped elements (or errors) of chunks run per element
        batch: list = []
        while True:
            if not batch and not pending:
                chunk = list(itertools.islice(inputs, size))
                if not chunk:
                    return
                combined = _vectorized(run, mapped, chunk) if len(chunk) == size else None
                if combined is not None:
                    yield combined
                    continue
                pending.extend(mapped.call(run, element) for element in chunk)
            if not pending:
                element = next(inputs, None)
                if element is None:
                    if batch and not drop:
                        yield self._checked(batch)
                    return
                pending.append(mapped.call(run, element))
            element = pending.popleft()
            if isinstance(element, ElementError):
                batch = []
                yield element
                continue
            batch.append(element)
            if len(batch) == size:
                yield self._checked(batch)
                batch = []


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

    def _combine(self, batch: list) -> tuple:
        return tuple(self._pad(index, [element[index] for element in batch]) for index in range(len(self._types)))

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




def _fusable(dataset: Dataset) -> tuple[MapDataset, Dataset] | None:
    """``(map, the pipeline without it)`` when ``dataset`` is a vectorizable map, possibly under repeats."""
    if isinstance(dataset, MapDataset):
        return (dataset, dataset._input) if dataset.vectorized else None
    if isinstance(dataset, RepeatDataset):
        inner = _fusable(dataset._input)
        return None if inner is None else (inner[0], RepeatDataset(inner[1], dataset._count))
    return None


def _vectorized(run, mapped: MapDataset, chunk: list) -> tuple | None:
    """The batch of ``mapped`` over ``chunk`` from one vectorized call, or None (a failed input element, inputs
    of different shapes, or a failing call: the chunk is then mapped per element)."""
    if any(isinstance(element, ElementError) for element in chunk):
        return None
    stacked = []
    for index in range(len(chunk[0])):
        first = np.shape(chunk[0][index])
        if any(np.shape(element[index]) != first for element in chunk):
            return None
        stacked.append(np.stack([element[index] for element in chunk]))
    try:
        return mapped.call_batched(run, tuple(stacked))
    except errors.OpError:
        return None
