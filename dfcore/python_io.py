"""``tf.python_io``: TF 1.x's older name for the TFRecord writer and reader (see :mod:`dfcore.io`)."""

from .io import TFRecordWriter, tf_record_iterator

__all__ = ["TFRecordWriter", "tf_record_iterator"]
