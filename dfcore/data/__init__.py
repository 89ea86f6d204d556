"""``tf.data``: input pipelines (``Dataset``), their iterators, and TFRecord files.

Source: ``tensorflow/python/data/`` (TF 1.15's ``tf.data`` and ``tf.compat.v1.data``).
"""

from . import experimental
from .dataset_ops import (
    Dataset,
    get_output_classes,
    get_output_shapes,
    get_output_types,
)
from .iterator_ops import Iterator, make_initializable_iterator, make_one_shot_iterator
from .readers import TFRecordDataset

__all__ = [
    "Dataset",
    "Iterator",
    "TFRecordDataset",
    "experimental",
    "get_output_classes",
    "get_output_shapes",
    "get_output_types",
    "make_initializable_iterator",
    "make_one_shot_iterator",
]


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from ..compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.data", name)
