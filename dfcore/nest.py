"""``tf.nest``: nested structures of tensors (tuples, lists, namedtuples, dicts).

Source: ``tensorflow/python/util/nest.py``; the rules live in :mod:`dfcore.framework.nest`.
"""

from .framework.nest import assert_same_structure, flatten, is_sequence as is_nested, map_structure, pack_sequence_as

__all__ = ["assert_same_structure", "flatten", "is_nested", "map_structure", "pack_sequence_as"]
