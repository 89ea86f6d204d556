"""``tf.io`` (the TFRecord part): ``TFRecordWriter`` and ``tf_record_iterator``.

Source: ``tensorflow/python/lib/io/tf_record.py``; the format is in :mod:`dfcore.data.tfrecord`.
"""

from .data.tfrecord import TFRecordWriter, tf_record_iterator

__all__ = ["TFRecordWriter", "tf_record_iterator"]
