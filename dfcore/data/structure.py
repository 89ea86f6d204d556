"""Element structures of a dataset: nested tuples and dicts of components, flattened and packed.

Source: ``tensorflow/python/data/util/nest.py`` and ``structure.py``. As in tf.data, a
tuple (or namedtuple) and a dict are structure; a list is *not*: it is one component
(converted to an array), and dict keys are visited in sorted order. At run time an
element is a flat tuple of numpy arrays, one per component.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from ..framework import dtypes as dtypes_lib
from ..framework.tensor import Tensor
from ..framework.tensor_shape import TensorShape


def is_structure(value: Any) -> bool:
    return isinstance(value, (tuple, dict))


def flatten(value: Any) -> list:
    """The components of ``value`` in tf.data's order (dict keys sorted)."""
    if isinstance(value, dict):
        return [c for key in sorted(value) for c in flatten(value[key])]
    if isinstance(value, tuple):
        return [c for item in value for c in flatten(item)]
    return [value]


def pack_as(structure: Any, flat: list | tuple) -> Any:
    """``flat`` components arranged as ``structure``.

    Raises:
        ValueError: ``flat`` has a different number of components.
    """
    flat = list(flat)
    if len(flat) != len(flatten(structure)):
        raise ValueError(f"Structure has {len(flatten(structure))} components, got {len(flat)}.")
    packed, _ = _pack(structure, flat)
    return packed


def _pack(structure, flat):
    if isinstance(structure, dict):
        items = {}
        for key in sorted(structure):
            items[key], flat = _pack(structure[key], flat)
        return {key: items[key] for key in structure}, flat
    if isinstance(structure, tuple):
        parts = []
        for item in structure:
            value, flat = _pack(item, flat)
            parts.append(value)
        return (type(structure)(*parts) if hasattr(structure, "_fields") else tuple(parts)), flat
    return flat[0], flat[1:]


def indices(structure: Any) -> Any:
    """``structure`` with its leaves replaced by their positions (a dataset's structure template)."""
    return pack_as(structure, list(range(len(flatten(structure)))))


def map_structure(fn: Callable, structure: Any) -> Any:
    return pack_as(structure, [fn(c) for c in flatten(structure)])


def assert_same_structure(a: Any, b: Any) -> None:
    """Raises TypeError/ValueError (TF's wording) when ``a`` and ``b`` nest differently."""
    if is_structure(a) != is_structure(b) or type(a) is not type(b) and is_structure(a):
        raise TypeError(f"The two structures don't have the same sequence type. First structure {a!r}, "
                        f"second structure {b!r}.")
    if isinstance(a, dict):
        if sorted(a) != sorted(b):
            raise ValueError(f"The two structures don't have the same keys: {sorted(a)} and {sorted(b)}.")
        for key in a:
            assert_same_structure(a[key], b[key])
    elif isinstance(a, tuple):
        if len(a) != len(b):
            raise ValueError(f"The two structures don't have the same number of elements: {len(a)} and {len(b)}.")
        for x, y in zip(a, b):
            assert_same_structure(x, y)


def element_spec(output_types: Any, output_shapes: Any) -> tuple:
    """``(structure, flat DTypes, flat TensorShapes)`` of nested ``output_types``/``output_shapes`` as a user gives
    them (``from_generator``, ``Iterator.from_structure``); no shapes means unknown shapes.

    Raises:
        TypeError, ValueError: the two structures differ, or a type is not a dtype.
    """
    types = [dtypes_lib.as_dtype(t) for t in flatten(output_types)]
    if output_shapes is None:
        shapes = [TensorShape(None)] * len(types)
    else:
        assert_same_structure(output_types, output_shapes)
        shapes = [TensorShape(s) for s in flatten(output_shapes)]
    return indices(output_types), types, shapes


class ElementStructure:
    """The element properties datasets and iterators share, from ``_structure``, ``_types`` and ``_shapes``."""

    _structure: Any
    _types: list
    _shapes: list

    @property
    def output_types(self) -> Any:
        """The nested ``tf.DType`` of an element."""
        return pack_as(self._structure, self._types)

    @property
    def output_shapes(self) -> Any:
        """The nested static ``tf.TensorShape`` of an element (unknown dimensions are None)."""
        return pack_as(self._structure, self._shapes)

    @property
    def output_classes(self) -> Any:
        """The nested class of an element's components (always ``tf.Tensor``: dfcore has no sparse tensors)."""
        return pack_as(self._structure, [Tensor] * len(self._types))


def component_spec(value: Any) -> tuple:
    """``(DType, TensorShape)`` of one normalized component (a Tensor or a numpy array)."""
    if isinstance(value, Tensor):
        return value.dtype.base_dtype, value.shape
    return dtypes_lib.as_dtype(value.dtype), TensorShape(value.shape)


def normalize_element(value: Any) -> tuple[Any, list]:
    """``(structure, components)`` of a user's element: lists become arrays, scalars arrays, Tensors stay."""
    structure = _normalize(value)
    return structure, flatten(structure)


def _normalize(value):
    if isinstance(value, dict):
        return {key: _normalize(v) for key, v in value.items()}
    if isinstance(value, tuple):
        items = [_normalize(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, Tensor):
        return value
    array = np.asarray(value)
    if array.dtype.kind in "SU":
        array = array.astype(object)
    elif array.dtype == np.float64 and not isinstance(value, np.ndarray):
        array = array.astype(np.float32)
    elif array.dtype == np.int64 and not isinstance(value, (np.ndarray, np.integer)):
        array = array.astype(np.int32)
    return array
