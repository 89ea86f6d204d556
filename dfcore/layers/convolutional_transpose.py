"""``tf.layers.conv2d_transpose``: a transposed 2-D convolution layer (NHWC) with TF 1.x's arguments and
variable names.

Source: ``tensorflow/python/layers/convolutional.py`` (``conv2d_transpose``) and the keras
``Conv2DTranspose`` it wraps. Variables: ``<scope>/kernel`` ``[kernel_h, kernel_w, filters, in_channels]``
and ``<scope>/bias`` ``[filters]``. Output size per spatial dimension (keras' ``deconv_output_length``):
``in * stride`` with ``same``, ``in * stride + max(kernel - stride, 0)`` with ``valid``.
"""

from ..framework.tensor import Tensor
from ..ops import array_ops, array_ops_join, init_ops, nn_ops
from ..ops.nn_conv_transpose import conv2d_transpose as nn_conv2d_transpose
from . import base

__all__ = ["conv2d_transpose"]


def _output_length(size, kernel, stride, padding):
    """The output length of one spatial dimension (``size`` an int or an int32 scalar tensor)."""
    return size * stride + (max(kernel - stride, 0) if padding == "VALID" else 0)


def conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
                     activation=None, use_bias=True, kernel_initializer=None,
                     bias_initializer=init_ops.zeros_initializer(),  # noqa: B008 - TF's default (stateless)
                     kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                     kernel_constraint=None, bias_constraint=None, trainable=True, name=None, reuse=None) -> Tensor:
    """``activation(conv2d_transpose(inputs, kernel) + bias)`` on ``[batch, height, width, channels]`` floats.

    Args: as :func:`dfcore.layers.conv2d` (default name ``conv2d_transpose``).
    Returns:
        ``[batch, out_h, out_w, filters]`` (sizes in the module docstring).
    Raises:
        ValueError: inputs not of rank 4 or without a known channel dimension, bad ``kernel_size``/``strides``/
            ``padding``/``data_format`` (TF's messages). TypeError: non-floating inputs.
        NotImplementedError: a kernel or bias constraint.
    """
    base.unsupported("Conv2DTranspose", kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
    kernel_size = base.normalize_tuple(kernel_size, 2, "kernel_size")
    strides = base.normalize_tuple(strides, 2, "strides")
    padding = base.normalize_padding(padding)
    base.channels_last(data_format, "Conv2DTranspose")
    with base.layer_scope(name, "conv2d_transpose", reuse) as layer_name:
        inputs = base.layer_inputs(inputs, layer_name, ndim=4)
        dtype = base.floating_dtype(inputs, "Conv2DTranspose")
        channels = base.defined_dim(inputs, -1, "The channel dimension of the inputs should be defined. Found "
                                                "`None`.")
        kernel = base.add_weight("kernel", [*kernel_size, int(filters), channels], dtype, kernel_initializer,
                                 kernel_regularizer, trainable)
        static = inputs.shape.as_list()
        dynamic = array_ops.shape(inputs)
        known = [static[1 + i] if static[1 + i] is not None else dynamic[1 + i] for i in range(2)]
        sizes = [_output_length(known[i], kernel_size[i], strides[i], padding) for i in range(2)]
        out_hw = [size if isinstance(size, int) else None for size in sizes]
        output_shape = array_ops_join.stack([dynamic[0], *sizes, int(filters)])
        outputs = nn_conv2d_transpose(inputs, kernel, output_shape, strides=[1, *strides, 1], padding=padding)
        outputs.set_shape([static[0], *out_hw, int(filters)])
        if use_bias:
            bias = base.add_weight("bias", [int(filters)], dtype, bias_initializer, bias_regularizer, trainable)
            outputs = nn_ops.bias_add(outputs, bias)
        return base.finish(outputs, activation, activity_regularizer)

