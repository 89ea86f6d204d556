"""Source datasets (slices, tensors, ranges, generators) and the ones combining datasets (zip, concatenate).

Source: ``tensorflow/python/data/ops/dataset_ops.py`` (``TensorSliceDataset``,
``TensorDataset``, ``RangeDataset``, ``Dataset.from_generator``, ``ZipDataset``,
``ConcatenateDataset``) and their kernels in ``core/kernels/data/``.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import errors
from ..framework import dtypes as dtypes_lib
from ..framework.tensor_shape import Dimension, TensorShape
from . import structure as nest
from .dataset_ops import Dataset
from .iteration import ElementError


def most_specific_shape(a: TensorShape, b: TensorShape) -> TensorShape:
    """The most specific shape compatible with both (dims that differ become unknown)."""
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_tuple(), b.as_tuple())])


class TensorSliceDataset(Dataset):
    """The slices of nested components along dimension 0 (components: arrays or captured Tensors)."""

    def __init__(self, tensors: Any):
        structure, self._components = nest.normalize_element(tensors)
        specs = [nest.component_spec(c) for c in self._components]
        batch = Dimension(None)
        for index, (_, shape) in enumerate(specs):
            if shape.ndims == 0:
                raise ValueError(f"Component {index} of from_tensor_slices is a scalar; slicing needs rank >= 1.")
            batch = batch.merge_with(shape[0])
        super().__init__(nest.indices(structure), [t for t, _ in specs], [s[1:] for _, s in specs],
                         tensors=tuple(self._components))

    def _check(self, run) -> None:
        lengths = {int(np.shape(run.value(c))[0]) for c in self._components}
        if len(lengths) > 1:
            raise errors.InvalidArgumentError(
                None, None, "All components must have the same size in the 0th dimension, got "
                f"{[int(np.shape(run.value(c))[0]) for c in self._components]}")

    def _iterate(self, run):
        arrays = [run.value(c) for c in self._components]
        for i in range(arrays[0].shape[0]):
            yield tuple(a[i] for a in arrays)


class TensorDataset(Dataset):
    """One element: the nested components themselves."""

    def __init__(self, tensors: Any):
        structure, self._components = nest.normalize_element(tensors)
        specs = [nest.component_spec(c) for c in self._components]
        super().__init__(nest.indices(structure), [t for t, _ in specs], [s for _, s in specs],
                         tensors=tuple(self._components))

    def _iterate(self, run):
        yield tuple(np.asarray(run.value(c)) for c in self._components)


class RangeDataset(Dataset):
    """int64 scalars ``start, start + step, ...`` below ``stop`` (Python's ``range``; Tensor arguments allowed).

    Raises:
        ValueError: no argument or more than three; InvalidArgumentError at run time: ``step == 0``.
    """

    def __init__(self, *args: Any):
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid arguments to RangeDataset: {args}")
        self._args = (0, args[0], 1) if len(args) == 1 else (args + (1,))[:3]
        super().__init__(0, [dtypes_lib.int64], [TensorShape([])], tensors=self._args)

    def _check(self, run) -> None:
        if run.scalar(self._args[2]) == 0:
            raise errors.InvalidArgumentError(None, None, "step must be a non-zero integer.")

    def _iterate(self, run):
        for value in range(*(run.scalar(a) for a in self._args)):
            yield (np.int64(value),)


class GeneratorDataset(Dataset):
    """The elements a Python generator yields, converted to ``output_types`` (TF's ``from_generator``).

    Raises at ``get_next``: InvalidArgumentError when an element has the wrong structure, dtype or
    shape, or when the generator raises (the message names the generator).
    """

    def __init__(self, generator: Callable, output_types: Any, output_shapes: Any, args: tuple):
        if not callable(generator):
            raise TypeError("`generator` must be callable.")
        self._generator, self._args = generator, args
        self._name = getattr(generator, "__name__", type(generator).__name__)
        super().__init__(*nest.element_spec(output_types, output_shapes))

    def _convert(self, value: Any) -> tuple:
        try:
            nest.assert_same_structure(self.output_types, value)
        except (TypeError, ValueError) as error:
            raise errors.InvalidArgumentError(
                None, None, f"`generator` {self._name} yielded an element that did not match the expected "
                f"structure: {error}") from None
        converted = []
        for item, dtype, shape in zip(nest.flatten(value), self._types, self._shapes):
            try:
                array = np.asarray(item, dtype=dtype.as_numpy_dtype)
            except (TypeError, ValueError):
                raise errors.InvalidArgumentError(
                    None, None, f"`generator` {self._name} yielded an element that could not be converted to "
                    f"the expected type. The expected type was {dtype.name}, but the yielded element was "
                    f"{item!r}.") from None
            if not shape.is_compatible_with(array.shape):
                raise errors.InvalidArgumentError(
                    None, None, f"`generator` {self._name} yielded an element of shape {array.shape} where an "
                    f"element of shape {shape} was expected.")
            converted.append(array)
        return tuple(converted)

    def _iterate(self, run):
        try:
            source = iter(self._generator(*self._args))
        except Exception as error:
            raise self._failed(error) from error
        while True:
            run.check_stopped()
            try:
                value = next(source)
            except StopIteration:
                return
            except Exception as error:
                raise self._failed(error) from error
            yield self._convert(value)

    def _failed(self, error: Exception) -> errors.InvalidArgumentError:
        return errors.InvalidArgumentError(
            None, None, f"{type(error).__name__}: {error} [raised by the generator '{self._name}']")


class ZipDataset(Dataset):
    """Tuples (or dicts) of the elements of nested ``datasets``; ends when the shortest ends.

    Raises:
        TypeError: a leaf of ``datasets`` is not a Dataset (TF's wording).
    """

    def __init__(self, datasets: Any):
        self._datasets = nest.flatten(datasets)
        for dataset in self._datasets:
            if not isinstance(dataset, Dataset):
                raise TypeError(f"The argument to `Dataset.zip()` must be a (nested) structure of `Dataset` "
                                f"objects, got {type(dataset).__name__}.")
        structure = nest.indices(nest.pack_as(datasets, [d._structure for d in self._datasets]))
        super().__init__(structure, [t for d in self._datasets for t in d._types],
                         [s for d in self._datasets for s in d._shapes], inputs=tuple(self._datasets))

    def _iterate(self, run):
        for parts in zip(*(d._iterate(run) for d in self._datasets)):
            failed = next((part for part in parts if isinstance(part, ElementError)), None)
            yield failed if failed is not None else tuple(c for part in parts for c in part)


class ConcatenateDataset(Dataset):
    """The elements of ``first`` then of ``second``.

    Raises:
        TypeError: different structures or dtypes (TF's "Two datasets to concatenate have different types").
    """

    def __init__(self, first: Dataset, second: Dataset):
        if first._types != second._types:
            raise TypeError(f"Two datasets to concatenate have different types {first.output_types} and "
                            f"{second.output_types}")
        nest.assert_same_structure(first.output_types, second.output_types)
        shapes = [most_specific_shape(a, b) for a, b in zip(first._shapes, second._shapes)]
        super().__init__(first._structure, first._types, shapes, inputs=(first, second))

    def _iterate(self, run):
        for dataset in self._inputs:
            yield from dataset._iterate(run)
