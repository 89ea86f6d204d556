"""``tf.layers.conv2d``: a 2-D convolution layer (NHWC) with TF 1.x's arguments and variable names.

Source: ``tensorflow/python/layers/convolutional.py`` (``conv2d``) and the keras ``Conv2D`` it wraps
(``keras/layers/convolutional.py``). Variables: ``<scope>/kernel``
``[kernel_h, kernel_w, in_channels, filters]`` and ``<scope>/bias`` ``[filters]``; ops:
``conv2d/Conv2D``, ``conv2d/BiasAdd`` and the activation's.
"""

from ..framework.tensor import Tensor
from ..ops import init_ops, nn_conv, nn_ops
from . import base


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
           dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None,
           bias_initializer=init_ops.zeros_initializer(),  # noqa: B008 - TF's default (stateless)
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None) -> Tensor:
    """``activation(conv2d(inputs, kernel) + bias)`` on ``[batch, height, width, channels]`` float inputs.

    Args:
        filters: output channels. kernel_size, strides, dilation_rate: an int or 2 ints.
        padding: ``"valid"`` or ``"same"``, any case. kernel_initializer: default the scope's, else
            glorot_uniform; bias: zeros. name / reuse: as :func:`dfcore.layers.dense` (``conv2d``, ``conv2d_1`` …).
    Returns:
        ``[batch, out_h, out_w, filters]``: ``ceil(in / stride)`` with ``same``,
        ``ceil((in - (k - 1) * dilation) / stride)`` with ``valid``.
    Raises:
        ValueError: inputs not of rank 4 or without a known channel dimension (TF's messages), bad
            ``kernel_size``/``strides``/``padding``/``data_format``, strides and dilation both > 1,
            ``channels_first`` (dfcore runs NHWC).
        TypeError: non-floating inputs. NotImplementedError: a kernel or bias constraint.
    Source: ``tensorflow/python/layers/convolutional.py`` (``conv2d``).
    """
    base.unsupported("Conv2D", kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
    kernel_size = base.normalize_tuple(kernel_size, 2, "kernel_size")
    strides = base.normalize_tuple(strides, 2, "strides")
    dilation_rate = base.normalize_tuple(dilation_rate, 2, "dilation_rate")
    padding = base.normalize_padding(padding)
    base.channels_last(data_format, "Conv2D")
    if max(strides) > 1 and max(dilation_rate) > 1:
        raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
    with base.layer_scope(name, "conv2d", reuse) as layer_name:
        inputs = base.layer_inputs(inputs, layer_name, ndim=4)
        dtype = base.floating_dtype(inputs, "Conv2D")
        channels = base.defined_dim(inputs, -1, "The channel dimension of the inputs should be defined. Found "
                                                "`None`.")
        kernel = base.add_weight("kernel", [*kernel_size, channels, int(filters)], dtype, kernel_initializer,
                                 kernel_regularizer, trainable)
        outputs = nn_conv.conv2d(inputs, kernel, strides=[1, *strides, 1], padding=padding,
                                 dilations=[1, *dilation_rate, 1])
        if use_bias:
            bias = base.add_weight("bias", [int(filters)], dtype, bias_initializer, bias_regularizer, trainable)
            outputs = nn_ops.bias_add(outputs, bias)
        return base.finish(outputs, activation, activity_regularizer)
