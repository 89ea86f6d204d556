"""``tf.data.Dataset``: an input pipeline described in Python, iterated by a graph op.

Source: ``tensorflow/python/data/ops/dataset_ops.py`` (TF 1.15 ``DatasetV1``). A Dataset
is a tree of Python nodes (sources, transformations); each node knows its element
structure (``output_types``, ``output_shapes``, ``output_classes``: nested tuples and
dicts of ``tf.DType``, ``tf.TensorShape``, ``tf.Tensor``) and the Tensors of the user's
graph it captures (``from_tensor_slices(placeholder)``, a Tensor ``batch_size``). Unlike
TF, no ``*Dataset`` op per node is added to the graph: the iterator's op
(``MakeIterator`` / ``OneShotIterator``, :mod:`dfcore.data.iterator_ops`) takes the
captured Tensors as inputs and builds the pipeline from their values when it runs.
Elements flow as flat tuples of numpy arrays. Argument errors TF detects in a dataset
op's kernel (``batch(0)``, mismatched slice lengths of fed tensors) are raised as
``InvalidArgumentError`` when the iterator is initialized (a one-shot iterator: at the
first ``get_next``).
"""

from collections.abc import Callable
from typing import Any, NoReturn

from ..framework.tensor import Tensor
from . import structure as nest

AUTOTUNE = -1
UNKNOWN_CARDINALITY = -2  # shuffle(UNKNOWN_CARDINALITY): a buffer as large as the input (TF 2.x)


class Dataset(nest.ElementStructure):
    """Base class: ``_structure`` (nested leaf indices), ``_types`` and ``_shapes`` (flat lists)."""

    def __init__(self, structure: Any, types: list, shapes: list, inputs: tuple = (), tensors: tuple = ()):
        self._structure = structure
        self._types = list(types)
        self._shapes = list(shapes)
        self._inputs = tuple(inputs)
        self._tensors = tuple(t for t in tensors if isinstance(t, Tensor))

    def _captured_tensors(self) -> list:
        """The user-graph Tensors this pipeline reads, each once, inputs first."""
        seen: dict = {}
        for dataset in self._inputs:
            for tensor in dataset._captured_tensors():
                seen.setdefault(tensor, None)
        for tensor in self._tensors:
            seen.setdefault(tensor, None)
        return list(seen)

    def _check(self, run) -> None:
        """Validate arguments with their run-time values (kernel-time checks); raises InvalidArgumentError."""
        for dataset in self._inputs:
            dataset._check(run)

    def _iterate(self, run):
        """A Python iterator over the elements (flat tuples of numpy arrays) in context ``run``."""
        raise NotImplementedError

    def __iter__(self) -> NoReturn:
        raise RuntimeError("__iter__() is only supported inside of tf.function or when eager execution is "
                           "enabled.")

    # -- sources ----------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors: Any) -> "Dataset":
        """Elements are the slices of ``tensors`` (nested tuples/dicts of arrays or Tensors) along dimension 0.

        Raises:
            ValueError: the components' static first dimensions differ ("Dimensions 3 and 4 are not compatible").
        """
        return sources.TensorSliceDataset(tensors)

    @staticmethod
    def from_tensors(tensors: Any) -> "Dataset":
        """A dataset of one element, ``tensors``."""
        return sources.TensorDataset(tensors)

    @staticmethod
    def range(*args: int) -> "Dataset":
        """int64 scalars as Python's ``range(start, stop, step)``."""
        return sources.RangeDataset(*args)

    @staticmethod
    def from_generator(generator: Callable, output_types: Any, output_shapes: Any = None,
                       args: tuple | None = None) -> "Dataset":
        """Elements produced by ``generator(*args)``, converted to ``output_types`` and checked against
        ``output_shapes`` (at ``get_next``: InvalidArgumentError naming the generator)."""
        return sources.GeneratorDataset(generator, output_types, output_shapes, args or ())

    @staticmethod
    def zip(datasets: Any) -> "Dataset":
        """Elements are tuples (or dicts) of the elements of ``datasets``; ends with the shortest."""
        return sources.ZipDataset(datasets)

    def concatenate(self, dataset: "Dataset") -> "Dataset":
        """This dataset's elements, then ``dataset``'s (same structure and dtypes; raises TypeError otherwise)."""
        return sources.ConcatenateDataset(self, dataset)

    # -- transformations -------------------------------------------------------------
    def map(self, map_func: Callable, num_parallel_calls: int | None = None, *,
            simulated_cost_s: float | None = None) -> "Dataset":
        """``map_func`` applied to each element; traced once (see :mod:`dfcore.data.function`);
        ``num_parallel_calls`` elements in flight on a thread pool, order kept. ``simulated_cost_s``
        (dfcore only, not in TF): the host CPU time of one call on the simulated clock
        (:mod:`dfcore.data.pipeline_sim`); None: the cost model's estimate of the traced ops."""
        return transformations.MapDataset(self, map_func, num_parallel_calls, simulated_cost_s)

    def filter(self, predicate: Callable) -> "Dataset":
        """The elements for which ``predicate`` (traced once; a scalar bool) is True."""
        return transformations.FilterDataset(self, predicate)

    def batch(self, batch_size: int, drop_remainder: bool = False) -> "Dataset":
        """Consecutive elements stacked along a new dimension 0 (the last batch may be short)."""
        return batching.BatchDataset(self, batch_size, drop_remainder)

    def padded_batch(self, batch_size: int, padded_shapes: Any, padding_values: Any = None,
                     drop_remainder: bool = False) -> "Dataset":
        """Batches whose components are padded to ``padded_shapes`` (None or -1: the longest in the batch)."""
        return batching.PaddedBatchDataset(self, batch_size, padded_shapes, padding_values, drop_remainder)

    def shuffle(self, buffer_size: int, seed: int | None = None,
                reshuffle_each_iteration: bool | None = None) -> "Dataset":
        """Elements drawn at random from a buffer of ``buffer_size`` refilled from the input (TF's semantics)."""
        return transformations.ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count: int | None = None) -> "Dataset":
        """The input ``count`` times (None or -1: forever)."""
        return transformations.RepeatDataset(self, count)

    def take(self, count: int) -> "Dataset":
        """The first ``count`` elements (-1: all)."""
        return transformations.TakeDataset(self, count)

    def skip(self, count: int) -> "Dataset":
        """All but the first ``count`` elements (-1: none)."""
        return transformations.SkipDataset(self, count)

    def shard(self, num_shards: int, index: int) -> "Dataset":
        """Every ``num_shards``-th element, starting with element ``index``."""
        return transformations.ShardDataset(self, num_shards, index)

    def cache(self, filename: str = "") -> "Dataset":
        """The input's elements, kept in memory after the first full pass (only ``filename=""``)."""
        return transformations.CacheDataset(self, filename)

    def interleave(self, map_func: Callable, cycle_length: int = AUTOTUNE, block_length: int = 1,
                   num_parallel_calls: int | None = None) -> "Dataset":
        """Elements of the datasets ``map_func`` makes from ``cycle_length`` input elements at a time,
        ``block_length`` from each in turn."""
        return transformations.InterleaveDataset(self, map_func, cycle_length, block_length, num_parallel_calls)

    def flat_map(self, map_func: Callable) -> "Dataset":
        """The elements of the datasets ``map_func`` makes from each input element, one dataset after another."""
        return transformations.InterleaveDataset(self, map_func, 1, 1)

    def ignore_errors(self) -> "Dataset":
        """The elements without those whose computation failed (TF 2.x's ``Dataset.ignore_errors``)."""
        return transformations.IgnoreErrorsDataset(self)

    def apply(self, transformation_func: Callable[["Dataset"], "Dataset"]) -> "Dataset":
        """``transformation_func(self)``, which must return a Dataset (TF's wording otherwise)."""
        dataset = transformation_func(self)
        if not isinstance(dataset, Dataset):
            raise TypeError("`transformation_func` must return a Dataset.")
        return dataset

    def prefetch(self, buffer_size: int) -> "Dataset":
        """The same elements, produced ahead by a background thread into a buffer of ``buffer_size``
        (``tf.data.experimental.AUTOTUNE``: 2)."""
        return prefetch.PrefetchDataset(self, buffer_size)

    # -- iterators ---------------------------------------------------------------------
    def make_one_shot_iterator(self) -> "iterator_ops.Iterator":
        """An iterator initialized on first use (no initializer). Raises ValueError if the pipeline
        captures a placeholder (TF's "Cannot capture a placeholder ... by value.")."""
        return iterator_ops.make_one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name: str | None = None) -> "iterator_ops.Iterator":
        """An iterator whose ``initializer`` op (re)starts it from the captured Tensors' current values."""
        return iterator_ops.make_initializable_iterator(self, shared_name)


def get_output_types(dataset_or_iterator: Any) -> Any:
    """The nested ``tf.DType`` of a dataset's or iterator's elements (TF's ``tf.data.get_output_types``)."""
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator: Any) -> Any:
    """The nested ``tf.TensorShape`` of a dataset's or iterator's elements."""
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator: Any) -> Any:
    """The nested component classes (``tf.Tensor``) of a dataset's or iterator's elements."""
    return dataset_or_iterator.output_classes


from . import batching, iterator_ops, prefetch, sources, transformations  # noqa: E402 - they subclass Dataset, defined above
