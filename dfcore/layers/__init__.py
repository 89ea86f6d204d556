"""``tf.layers``: TF 1.x's functional layers, each creating its variables with ``tf.get_variable``.

Source: ``tensorflow/python/layers/layers.py`` (TF 1.x API names).
"""

from .convolutional import conv2d
from .convolutional_transpose import conv2d_transpose
from .core import dense, dropout, flatten
from .normalization import batch_normalization
from .pooling import average_pooling2d, max_pooling2d

__all__ = [
    "average_pooling2d",
    "batch_normalization",
    "conv2d",
    "conv2d_transpose",
    "dense",
    "dropout",
    "flatten",
    "max_pooling2d",
]


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from ..compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.layers", name)
