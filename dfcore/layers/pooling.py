"""``tf.layers.max_pooling2d`` and ``average_pooling2d``: 2-D pooling (NHWC) with TF 1.x's arguments.

Source: ``tensorflow/python/layers/pooling.py`` and the keras ``MaxPooling2D`` / ``AveragePooling2D`` they
wrap (``keras/layers/pooling.py``). No variables; the ops are ``max_pooling2d/MaxPool`` and
``average_pooling2d/AvgPool``.
"""

from ..framework.tensor import Tensor
from ..ops import nn_pool
from . import base


def _pooling2d(pool, class_name, default_name, inputs, pool_size, strides, padding, data_format, name):
    pool_size = base.normalize_tuple(pool_size, 2, "pool_size")
    strides = base.normalize_tuple(strides, 2, "strides")
    padding = base.normalize_padding(padding)
    base.channels_last(data_format, class_name)
    with base.layer_scope(name, default_name, None) as layer_name:
        inputs = base.layer_inputs(inputs, layer_name, ndim=4)
        return pool(inputs, ksize=[1, *pool_size, 1], strides=[1, *strides, 1], padding=padding)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None) -> Tensor:
    """The maximum over each ``pool_size`` window of ``[batch, height, width, channels]`` inputs.

    Args:
        pool_size, strides: an int or 2 ints. padding: ``"valid"`` or ``"same"``, any case.
    Returns:
        ``[batch, out_h, out_w, channels]`` of the inputs' dtype (sizes as :func:`dfcore.layers.conv2d`).
    Raises:
        ValueError: inputs not of rank 4 (TF's message), bad ``pool_size``/``strides``/``padding``/
            ``data_format``, ``channels_first`` (dfcore runs NHWC).
    Source: ``tensorflow/python/layers/pooling.py`` (``max_pooling2d``).
    """
    return _pooling2d(nn_pool.max_pool, "MaxPooling2D", "max_pooling2d", inputs, pool_size, strides, padding,
                      data_format, name)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None) -> Tensor:
    """The mean over each ``pool_size`` window of ``[batch, height, width, channels]`` inputs (with ``same``
    padding, of the window's real inputs only); arguments, output and errors as :func:`max_pooling2d`.
    Source: ``tensorflow/python/layers/pooling.py`` (``average_pooling2d``).
    """
    return _pooling2d(nn_pool.avg_pool, "AveragePooling2D", "average_pooling2d", inputs, pool_size, strides,
                      padding, data_format, name)
