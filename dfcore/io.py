"""``tf.io`` (the TFRecord part): ``TFRecordWriter`` and ``tf_record_iterator``.

Source: ``tensorflow/python/lib/io/tf_record.py``; the format is in :mod:`dfcore.data.tfrecord`.
"""

from .data.tfrecord import TFRecordWriter, tf_record_iterator

__all__ = ["TFRecordWriter", "tf_record_iterator"]


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.io", name)
