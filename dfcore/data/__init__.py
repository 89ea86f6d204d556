"""``tf.data``: input pipelines (``Dataset``), their iterators, and TFRecord files.

Source: ``tensorflow/python/data/`` (TF 1.15's ``tf.data`` and ``tf.compat.v1.data``).
"""

from . import experimental
from .dataset_ops import Dataset
from .iterator_ops import Iterator, make_initializable_iterator, make_one_shot_iterator
from .readers import TFRecordDataset

__all__ = ["Dataset", "Iterator", "TFRecordDataset", "experimental", "make_initializable_iterator", "make_one_shot_iterator"]
