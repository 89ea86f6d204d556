"""``_FusedConv2D``: ``Conv2D`` followed by ``BiasAdd`` and optionally ``Relu``, as one kernel.

Source: ``tensorflow/core/ops/nn_ops.cc`` (``REGISTER_OP("_FusedConv2D")``) and
``core/kernels/conv_ops_fused_impl.h``. Only the graph optimizer's remapper creates it
(:mod:`dfcore.runtime.grappler.remapper`); it has no gradient, as in TF. Inputs ``input`` [batch, height, width,
in_channels], ``filter`` [filter_height, filter_width, in_channels, out_channels] and ``num_args`` = 1 bias
[out_channels], all of dtype ``T`` (float16, float32, float64); output as :func:`dfcore.nn.conv2d`'s. Attrs: those
of ``Conv2D`` (``strides``, ``padding``, ``dilations``, ``data_format`` NHWC) plus ``fused_ops`` (``["BiasAdd"]``
or ``["BiasAdd", "Relu"]``), ``epsilon`` (unused), ``num_args``, ``T``. The kernel runs ``Conv2D``'s kernel and
adds the bias and clips at zero in place, the same float operations in the same order as the kernels it
replaces, so its output is bit for bit theirs, without two more passes over fresh memory (numpy only, like
``Conv2D``).

Raises (at run time): ``InvalidArgumentError`` when the bias length is not the output depth (``BiasAdd``'s
wording), and ``Conv2D``'s errors.
"""

import math

import numpy as np

from .. import errors
from ..framework import registry
from . import nn_conv
from .fused_matmul import FUSED_OPS

registry.RegisterShape("_FusedConv2D")(nn_conv.conv2d_shape)


def _fused_compute(op, conv):
    """``compute(*args, x, f, bias)``: ``conv(*args, x, f)`` (``Conv2D``'s kernel, plain or out=), then the bias
    and the ReLU in place."""
    fused = tuple(op.get_attr("fused_ops"))
    if fused not in FUSED_OPS:
        raise errors.UnimplementedError(None, op, f"Fusion is not implemented: [{','.join(fused)}]")
    relu = fused == ("BiasAdd", "Relu")

    def compute(*inputs):
        *head, bias = inputs
        out = conv(*head)
        if bias.shape != (out.shape[-1],):
            raise errors.InvalidArgumentError(
                None, op, f"Must provide as many biases as the last dimension of the input tensor: "
                f"[{','.join(map(str, bias.shape))}] vs. [{','.join(map(str, out.shape))}]")
        np.add(out, bias, out=out)
        if relu:
            np.maximum(out, np.zeros((), out.dtype), out=out)
        return out

    return compute


@registry.RegisterKernel("_FusedConv2D")
def _fused_conv2d_kernel(op):
    return _fused_compute(op, registry.kernel("Conv2D").build(op))


@registry.RegisterOutKernel("_FusedConv2D")
def _fused_conv2d_out_kernel(op):
    """``_FusedConv2D`` writing into a buffer of the device's allocator (bit for bit)."""
    return _fused_compute(op, registry.out_kernel("Conv2D").factory(op))


@registry.RegisterCost("_FusedConv2D")
def _fused_conv2d_cost(input_shapes, output_shapes, attrs):
    """``Conv2D``'s flops plus one per output element per fused op."""
    flops, elements = nn_conv.conv2d_cost(input_shapes[:2], output_shapes, attrs)
    return flops + len(attrs.get("fused_ops", ())) * math.prod(output_shapes[0]), elements + math.prod(input_shapes[2])
