"""``tf.python_io``: TF 1.x's older name for the TFRecord writer and reader (see :mod:`dfcore.io`)."""

from .io import TFRecordWriter, tf_record_iterator

__all__ = ["TFRecordWriter", "tf_record_iterator"]


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.python_io", name)
