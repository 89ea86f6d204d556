"""``tf.nn.conv2d_transpose`` (NHWC): the transpose (gradient) of ``conv2d``, and the gradient of the
``Conv2DBackpropInput`` op it builds.

Source: ``tensorflow/python/ops/nn_ops.py`` (``conv2d_transpose``) and ``nn_grad.py``
(``_Conv2DBackpropInputGrad``): ``conv2d_transpose(value, filter, output_shape)`` is
``Conv2DBackpropInput(output_shape, filter, value)``, with ``filter`` ``[height, width, output_channels,
in_channels]``. Its gradients: with respect to ``value`` a ``conv2d`` of the incoming gradient by the same
filter, with respect to ``filter`` a ``Conv2DBackpropFilter`` of the incoming gradient and ``value``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..framework import dtypes, registry
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from . import array_ops
from .nn_conv import conv2d, conv2d_backprop_filter, conv2d_backprop_input

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["conv2d_transpose"]


def conv2d_transpose(value: TensorLike = None, filter: TensorLike = None, output_shape: TensorLike = None,
                     strides: Any = None, padding: str = "SAME", data_format: str = "NHWC",
                     name: str | None = None, input: TensorLike = None, filters: TensorLike = None,
                     dilations: Sequence[int] | None = None) -> Tensor:
    """``[batch, out_h, out_w, output_channels]`` (``output_shape``, a 4-vector) from ``value``
    ``[batch, h, w, in_channels]``; ``input``/``filters`` are TF's newer argument names.

    Raises:
        ValueError: ``value``'s channels differ from ``filter``'s last dimension, or ``output_shape``'s from
            its third (TF's wording); NHWC only.
    """
    value = value if value is not None else input
    filter = filter if filter is not None else filters
    if data_format != "NHWC":
        raise ValueError("data_format has to be NHWC in dfcore")
    with name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as name:
        value = convert_to_tensor(value, name="value")
        filter = convert_to_tensor(filter, name="filter")
        in_channels, filter_in = value.shape.as_list()[3:4], filter.shape.as_list()[3:4]
        if in_channels and filter_in and None not in (in_channels[0], filter_in[0]) and in_channels != filter_in:
            raise ValueError(f"input channels does not match filter's input channels, {in_channels[0]} != "
                             f"{filter_in[0]}")
        output_shape = convert_to_tensor(output_shape, dtype=dtypes.int32, name="output_shape")
        shape = array_ops.constant_value(output_shape)
        if shape is not None and filter.shape.ndims == 4 and filter.shape.as_list()[2] not in (None, int(shape[3])):
            raise ValueError(f"output_shape does not match filter's output channels, {int(shape[3])} != "
                             f"{filter.shape.as_list()[2]}")
        return conv2d_backprop_input(output_shape, filter, value, strides, padding,
                                     dilations=dilations or (1, 1, 1, 1), name=name)


@registry.RegisterGradient("Conv2DBackpropInput")
def _conv2d_backprop_input_grad(op, grad):
    attrs = {key: op.get_attr(key) for key in ("strides", "padding", "dilations")}
    _, filter, out_backprop = op.inputs
    return (None,
            conv2d_backprop_filter(grad, array_ops.shape(filter), out_backprop, **attrs),
            conv2d(grad, filter, **attrs))
