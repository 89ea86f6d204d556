"""Iterators over datasets: ``make_one_shot_iterator``, ``make_initializable_iterator``,
``Iterator.from_structure`` and ``Iterator.from_string_handle``, with their graph ops.

Source: ``tensorflow/python/data/ops/iterator_ops.py`` (TF 1.15). Ops (all stateful, CPU-only,
kernels in :mod:`dfcore.data.iterator_kernels`):

* ``IteratorV2`` outputs the iterator's handle (dtype ``string_ref``, as dfcore's queues; TF's is a
  ``resource``); the iterator is one object per session (``shared_name``, else the op's name);
* ``MakeIterator(handle, *captured)`` (the ``initializer``) starts a new pass over the dataset from the
  current values of the Tensors the dataset captures (TF's takes a ``variant`` dataset tensor instead);
  re-running it restarts the iterator and stops the previous pass's threads;
* ``OneShotIterator(*captured)`` outputs a handle and initializes its iterator on first use;
* ``IteratorGetNext(handle)`` outputs one element, one output per component, with the dataset's dtypes
  and static shapes. At the end: ``OutOfRangeError("End of sequence")``; before initialization:
  ``FailedPreconditionError`` (TF's wording);
* ``IteratorToStringHandle`` / ``IteratorFromStringHandleV2``: a string scalar naming the iterator in
  its session (TF's is a serialized ``ResourceHandleProto``).
"""

import weakref
from typing import Any

from ..framework import dtypes as dtypes_lib
from ..framework.graph import graph_of
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from ..ops.op_util import apply_op, apply_op1
from . import iterator_kernels, structure as nest
from .dataset_ops import Dataset

_PIPELINES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _register(op, dataset: Dataset, tensors: list) -> None:
    _PIPELINES.setdefault(op.graph, {})[op.name] = (dataset, tensors)


iterator_kernels.set_pipeline_lookup(lambda op: _PIPELINES.get(op.graph, {}).get(op.name))


def _attrs(types: list, shapes: list) -> dict:
    return {"output_types": list(types), "output_shapes": [TensorShape(s) for s in shapes]}


class Iterator(nest.ElementStructure):
    """An iterator: its handle Tensor, element structure, and (if made for one dataset) ``initializer``."""

    def __init__(self, handle: Tensor, structure: Any, types: list, shapes: list, initializer=None):
        self._handle = handle
        self._structure, self._types, self._shapes = structure, list(types), list(shapes)
        self._initializer = initializer

    @property
    def initializer(self):
        """The ``MakeIterator`` op (re)starting the iterator.

        Raises:
            ValueError: the iterator was not made for one dataset (TF's wording).
        """
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    def make_initializer(self, dataset: Dataset, name: str | None = None):
        """A ``MakeIterator`` op starting this iterator on ``dataset``.

        Raises:
            TypeError: ``dataset``'s structure or dtypes differ from the iterator's (TF's wording).
        """
        if dataset._types != self._types:
            raise TypeError(f"Expected output types {self.output_types} but got dataset with output types "
                            f"{dataset.output_types}.")
        nest.assert_same_structure(self.output_types, dataset.output_types)
        for mine, theirs in zip(self._shapes, dataset._shapes):
            if not mine.is_compatible_with(theirs):
                raise TypeError(f"Expected output shapes compatible with {self.output_shapes} but got dataset "
                                f"with output shapes {dataset.output_shapes}.")
        tensors = dataset._captured_tensors()
        op = apply_op("MakeIterator", [self._handle] + tensors, {}, name or "MakeIterator")
        _register(op, dataset, tensors)
        return op

    def get_next(self, name: str | None = None) -> Any:
        """The next element: the nested structure of the outputs of one ``IteratorGetNext`` op."""
        op = apply_op("IteratorGetNext", [self._handle], _attrs(self._types, self._shapes),
                      name or "IteratorGetNext")
        return nest.pack_as(self._structure, op.outputs)

    def string_handle(self, name: str | None = None) -> Tensor:
        """A string scalar naming this iterator, to feed to :meth:`from_string_handle`'s placeholder."""
        return apply_op1("IteratorToStringHandle", [self._handle], {}, name or "IteratorToStringHandle")

    @staticmethod
    def from_structure(output_types: Any, output_shapes: Any = None, shared_name: str | None = None,
                       output_classes: Any = None) -> "Iterator":
        """An iterator of this structure, started on any matching dataset by :meth:`make_initializer`."""
        structure, types, shapes = nest.element_spec(output_types, output_shapes)
        handle = apply_op1("IteratorV2", [], dict(_attrs(types, shapes), shared_name=shared_name or "",
                                                 container=""), "Iterator")
        return Iterator(handle, structure, types, shapes)

    @staticmethod
    def from_string_handle(string_handle: Any, output_types: Any, output_shapes: Any = None,
                           output_classes: Any = None) -> "Iterator":
        """The iterator a string handle (fed at run time) names (TF's feedable iterator)."""
        structure, types, shapes = nest.element_spec(output_types, output_shapes)
        string_handle = convert_to_tensor(string_handle, dtype=dtypes_lib.string)
        handle = apply_op1("IteratorFromStringHandleV2", [string_handle], _attrs(types, shapes),
                           "IteratorFromStringHandle")
        return Iterator(handle, structure, types, shapes)


def make_initializable_iterator(dataset: Dataset, shared_name: str | None = None) -> Iterator:
    """An iterator over ``dataset`` with an ``initializer`` op (TF's ``tf.data.make_initializable_iterator``)."""
    tensors = dataset._captured_tensors()
    with graph_of(tensors).as_default():
        iterator = Iterator.from_structure(dataset.output_types, dataset.output_shapes, shared_name)
        iterator._initializer = iterator.make_initializer(dataset)
    return iterator


def make_one_shot_iterator(dataset: Dataset) -> Iterator:
    """An iterator over ``dataset`` that starts on first use (TF's ``tf.data.make_one_shot_iterator``).

    Raises:
        ValueError: the dataset captures a placeholder (TF's "Cannot capture a placeholder ... by value.").
    """
    tensors = dataset._captured_tensors()
    for tensor in tensors:
        if tensor.op.type == "Placeholder":
            raise ValueError(f"Cannot capture a placeholder (name:{tensor.op.name}, type:Placeholder) by value.")
    op = apply_op("OneShotIterator", tensors, _attrs(dataset._types, dataset._shapes), "OneShotIterator")
    _register(op, dataset, tensors)
    return Iterator(op.outputs[0], dataset._structure, dataset._types, dataset._shapes)

