"""``tf.io``: ``TFRecordWriter`` and ``tf_record_iterator``; ``parse_example``, ``parse_single_example``
and ``FixedLenFeature``; ``matching_files`` and ``match_filenames_once``; the queues TF 1.x also lists here.

Source: ``tensorflow/python/lib/io/tf_record.py`` (the format is in :mod:`dfcore.data.tfrecord`) and
``tensorflow/python/ops/parsing_ops.py`` (:mod:`dfcore.ops.parsing_ops`).
"""

from . import io_gfile as gfile
from .data.tfrecord import TFRecordWriter, tf_record_iterator
from .ops.data_flow_ops import PaddingFIFOQueue, QueueBase, RandomShuffleQueue
from .ops.decode_raw_op import decode_raw
from .ops.io_ops import matching_files
from .ops.parsing_ops import FixedLenFeature, parse_example, parse_single_example
from .train.input import match_filenames_once

__all__ = ["FixedLenFeature", "PaddingFIFOQueue", "QueueBase", "RandomShuffleQueue", "TFRecordWriter", "decode_raw",
           "gfile", "match_filenames_once", "matching_files", "parse_example", "parse_single_example",
           "tf_record_iterator"]


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.io", name)
