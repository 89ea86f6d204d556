"""Nested structures of tensors (tuples, lists, namedtuples, dicts): flatten, pack, compare.

Source: ``tensorflow/python/util/nest.py`` (and ``util/util.cc`` for the messages). Unlike
:mod:`dfcore.data.structure` (tf.data's rules, where a list is one component), lists
are structures here, as in ``tf.nest``. Dict items are ordered by sorted key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def is_sequence(value: Any) -> bool:
    """True for a tuple, list, namedtuple or dict (a structure, not a leaf)."""
    return isinstance(value, (tuple, list, Mapping))


def flatten_once(value: Any) -> list:
    """The direct children of a structure (dict values by sorted key)."""
    if isinstance(value, Mapping):
        return [value[key] for key in sorted(value)]
    return list(value)


_children = flatten_once


def flatten(structure: Any) -> list:
    """The leaves of ``structure`` in order (a leaf gives ``[leaf]``)."""
    if not is_sequence(structure):
        return [structure]
    return [leaf for child in _children(structure) for leaf in flatten(child)]


def _rebuild(template, items):
    if isinstance(template, Mapping):
        return type(template)(zip(sorted(template), items))  # type: ignore[call-arg]  # a concrete dict type
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        return type(template)(*items)
    return type(template)(items)


def pack_sequence_as(structure: Any, flat_sequence: list) -> Any:
    """``flat_sequence`` packed into the shape of ``structure``.

    Raises:
        ValueError: the counts differ (TF's wording).
    """
    flat_sequence = list(flat_sequence)
    count = len(flatten(structure))
    if count != len(flat_sequence):
        raise ValueError(f"Could not pack sequence. Structure had {count} elements, but flat_sequence had "
                         f"{len(flat_sequence)} elements.  Structure: {structure}, flat_sequence: {flat_sequence}.")
    position = 0

    def pack(template):
        nonlocal position
        if not is_sequence(template):
            position += 1
            return flat_sequence[position - 1]
        return _rebuild(template, [pack(child) for child in _children(template)])

    return pack(structure)


def map_structure(fn: Callable[..., Any], *structures: Any) -> Any:
    """``fn`` applied leaf-wise to structures of one shape."""
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in zip(*flats)])


def assert_same_structure(first: Any, second: Any, check_types: bool = True) -> None:
    """Raise unless ``first`` and ``second`` nest the same way.

    Raises:
        ValueError: different numbers of leaves, or a sequence where the other has a leaf.
        TypeError: (``check_types``) sequences of different types at one place.
    """
    n1, n2 = len(flatten(first)), len(flatten(second))
    if n1 != n2:
        raise ValueError(f"The two structures don't have the same number of elements.\n\nFirst structure ({n1} "
                         f"elements): {first}\n\nSecond structure ({n2} elements): {second}")
    _compare(first, second, first, second, check_types)


def _compare(a, b, first, second, check_types):
    if is_sequence(a) != is_sequence(b):
        seq, leaf = (a, b) if is_sequence(a) else (b, a)
        raise ValueError(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: {first}\n\nSecond structure: {second}\n\nMore specifically: Substructure "
            f'"type={type(seq).__name__} str={seq}" is a sequence, while substructure '
            f'"type={type(leaf).__name__} str={leaf}" is not')
    if not is_sequence(a):
        return
    if check_types and type(a) is not type(b):
        raise TypeError(f"The two structures don't have the same sequence type. First structure has type "
                        f"{type(a)}, while second structure has type {type(b)}.")
    if isinstance(a, Mapping) and sorted(a) != sorted(b):
        raise ValueError(f"The two dictionaries don't have the same set of keys. First structure has keys "
                         f"{sorted(a)}, while second structure has keys {sorted(b)}.")
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb):
        raise ValueError(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: {first}\n\nSecond structure: {second}\n\nMore specifically: Substructure {a} "
            f"has {len(ca)} elements, while substructure {b} has {len(cb)} elements")
    for x, y in zip(ca, cb):
        _compare(x, y, first, second, check_types)
