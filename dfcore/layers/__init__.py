"""``tf.layers``: TF 1.x's functional layers, each creating its variables with ``tf.get_variable``.

Source: ``tensorflow/python/layers/layers.py`` (TF 1.x API names).
"""

from .convolutional import conv2d
from .core import dense, dropout, flatten
from .pooling import max_pooling2d

__all__ = [
    "conv2d",
    "dense",
    "dropout",
    "flatten",
    "max_pooling2d",
]
