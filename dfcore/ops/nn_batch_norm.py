"""``tf.nn.fused_batch_norm`` (``FusedBatchNorm``) and its gradient op ``FusedBatchNormGrad``.

Source: ``tensorflow/python/ops/nn_impl.py`` (``fused_batch_norm``), ``core/ops/nn_ops.cc`` (shape
functions), ``core/kernels/fused_batch_norm_op.cc`` (the CPU formulas) and ``nn_grad.py``
(``_FusedBatchNormGrad``), TF 1.x. Per channel c of a 4-D ``x``::

    y = (x - mean_c) * rsqrt(var_c + epsilon) * scale_c + offset_c

In training the batch statistics are used: ``batch_mean`` is their mean, ``batch_variance`` the
Bessel-corrected variance ``var * n / (n - 1)`` (n = elements per channel) that callers feed to
their running averages, and the reserve spaces hold the mean and the *biased* variance the gradient
needs. In inference ``mean``/``variance`` are used and passed through. TF's CPU kernels take float32
(float16 through ``FusedBatchNormV2``); dfcore takes float16/32/64 for all five inputs alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import common_shapes, constant_op
from .array_ops_util import merge_shapes, with_rank
from .op_costs import io_elements
from .op_util import apply_op

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = ["fused_batch_norm"]

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
_MIN_EPSILON = 1.001e-5  # cuDNN's floor, applied by TF's Python wrapper on every device


def _channel_axis(data_format):
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"FusedBatchNorm: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    return 3 if data_format == "NHWC" else 1


def _per_channel(op, x, vectors):
    """Check ``x`` is 4-D and each of ``vectors`` a vector as long as its channel dim; ``(x shape, channels)``."""
    shape = with_rank(op, x.shape, 4)
    channels = shape[_channel_axis(op.get_attr("data_format"))]
    for vector in vectors:
        channels = merge_shapes(op, TensorShape([channels]), with_rank(op, vector.shape, 1))[0]
    return shape, channels


# -- FusedBatchNorm ---------------------------------------------------------------------------
@registry.RegisterShape("FusedBatchNorm")
def _fused_batch_norm_shape(op):
    x, scale, offset, mean, variance = op.inputs
    common_shapes.require_same_dtype(op)
    vectors = [scale, offset] if op.get_attr("is_training") else [scale, offset, mean, variance]
    shape, channels = _per_channel(op, x, vectors)
    vector = (x.dtype.base_dtype, TensorShape([channels]))
    return [(x.dtype.base_dtype, shape)] + [vector] * 4


def _moments(x, axis):
    """Per-channel ``(mean, biased variance, elements per channel)`` of ``x`` (channels on ``axis``), in float64."""
    x = x.astype(np.promote_types(x.dtype, np.float64), copy=False)
    axes = tuple(a for a in range(4) if a != axis)
    return x.mean(axis=axes), x.var(axis=axes), x.size // x.shape[axis]


@registry.RegisterKernel("FusedBatchNorm")
def _fused_batch_norm_kernel(op):
    epsilon, training = op.get_attr("epsilon"), op.get_attr("is_training")
    axis = _channel_axis(op.get_attr("data_format"))
    to_channel = (-1, 1, 1) if axis == 1 else (-1,)

    def compute(x, scale, offset, mean, variance):
        if np.ndim(x) != 4:
            raise errors.InvalidArgumentError(None, op, f"input must be 4-dimensional{list(np.shape(x))}")
        if training:
            mean, variance, count = _moments(x, axis)
            batch_variance = variance * count / max(count - 1, 1)  # Bessel's correction, as TF's kernel
        elif np.shape(mean) != (x.shape[axis],) or np.shape(variance) != (x.shape[axis],):
            raise errors.InvalidArgumentError(None, op, f"estimated_mean and estimated_variance must have "
                                                        f"{x.shape[axis]} elements (the channels of x)")
        else:
            batch_variance = variance
        inv = (np.asarray(variance, np.float64) + epsilon) ** -0.5 * scale
        y = (x - mean.reshape(to_channel)) * inv.reshape(to_channel) + offset.reshape(to_channel)
        dtype = x.dtype
        return (y.astype(dtype), mean.astype(dtype), batch_variance.astype(dtype), mean.astype(dtype),
                np.asarray(variance).astype(dtype))

    return compute


def fused_batch_norm(x: TensorLike, scale: TensorLike, offset: TensorLike, mean: TensorLike = None,
                     variance: TensorLike = None, epsilon: float = 0.001, data_format: str = "NHWC",
                     is_training: bool = True, name: str | None = None) -> tuple:
    """``(y, batch_mean, batch_variance)`` of batch normalization in one op (``FusedBatchNorm``).

    Args:
        x: a 4-D float tensor, ``[N, H, W, C]`` (``NHWC``) or ``[N, C, H, W]`` (``NCHW``).
        scale, offset: ``[C]`` vectors (gamma and beta).
        mean, variance: ``[C]`` population statistics, used when ``is_training`` is False; must be None in
            training, where the batch's statistics are used.
        epsilon: added to the variance; raised to at least 1.001e-5 as TF does (cuDNN's floor).
    Returns:
        ``y`` (x's shape), ``batch_mean`` and ``batch_variance`` ``[C]`` (in training the variance is
        Bessel-corrected, ``n / (n - 1)`` times the one used to normalize; in inference both are passed through).
    Raises:
        ValueError: ``mean``/``variance`` given with ``is_training`` (TF's wording), or an unknown data_format.
        TypeError: dtypes that differ.
        InvalidArgumentError: ``x`` not 4-D, or vectors not as long as the channel dim (names the op).
    Only ``y``'s gradient is propagated (to x, scale and offset), as in TF.
    Source: ``tensorflow/python/ops/nn_impl.py``.
    """
    _channel_axis(data_format)
    with name_scope(name, "FusedBatchNorm", [x, scale, offset]) as scope:
        x = convert_to_tensor(x, name="input")
        if x.dtype.base_dtype not in _FLOATS:
            raise TypeError(f"Value passed to parameter 'x' has DataType {x.dtype.base_dtype.name} not in list of "
                            f"allowed values: {', '.join(d.name for d in _FLOATS)}")
        scale = convert_to_tensor(scale, name="scale")
        offset = convert_to_tensor(offset, name="offset")
        if is_training and (mean is not None or variance is not None):
            raise ValueError("Both 'mean' and 'variance' must be None if is_training is True.")
        dtype = x.dtype.base_dtype
        mean = constant_op.constant([], dtype=dtype) if mean is None else convert_to_tensor(mean, name="mean")
        variance = (constant_op.constant([], dtype=dtype) if variance is None
                    else convert_to_tensor(variance, name="variance"))
        attrs = {"epsilon": max(float(epsilon), _MIN_EPSILON), "data_format": data_format,
                 "is_training": bool(is_training)}
        outputs = apply_op("FusedBatchNorm", [x, scale, offset, mean, variance], attrs, scope).outputs
        return outputs[0], outputs[1], outputs[2]


# -- FusedBatchNormGrad -------------------------------------------------------------------------
@registry.RegisterShape("FusedBatchNormGrad")
def _fused_batch_norm_grad_shape(op):
    dy, x, scale, reserve_1, reserve_2 = op.inputs
    shape, channels = _per_channel(op, x, [scale, reserve_1, reserve_2])
    shape = merge_shapes(op, shape, with_rank(op, dy.shape, 4))
    vector, empty = (x.dtype.base_dtype, TensorShape([channels])), (x.dtype.base_dtype, TensorShape([0]))
    return [(x.dtype.base_dtype, shape), vector, vector, empty, empty]


@registry.RegisterKernel("FusedBatchNormGrad")
def _fused_batch_norm_grad_kernel(op):
    """Training: ``dx = scale * r * (dy - mean(dy) - xc * mean(dy * xc) * r^2)``, r = rsqrt(var + eps), xc the
    centred x; inference: ``dx = dy * scale * r``. Both: ``dscale = sum(dy * xc * r)``, ``doffset = sum(dy)``."""
    epsilon, training = op.get_attr("epsilon"), op.get_attr("is_training")
    axis = _channel_axis(op.get_attr("data_format"))
    axes = tuple(a for a in range(4) if a != axis)
    to_channel = (-1, 1, 1) if axis == 1 else (-1,)

    def compute(dy, x, scale, mean, variance):
        wide = np.promote_types(x.dtype, np.float64)
        dy64 = dy.astype(wide)
        r = ((variance.astype(wide) + epsilon) ** -0.5).reshape(to_channel)
        centred = x.astype(wide) - mean.reshape(to_channel)
        dscale = (dy64 * centred * r).sum(axis=axes)
        doffset = dy64.sum(axis=axes)
        coef = scale.reshape(to_channel) * r
        if training:
            mean_dy = dy64.mean(axis=axes, keepdims=True)
            mean_dy_xc = (dy64 * centred).mean(axis=axes, keepdims=True)
            dx = coef * (dy64 - mean_dy - centred * mean_dy_xc * r ** 2)
        else:
            dx = coef * dy64
        empty = np.zeros([0], x.dtype)
        return dx.astype(x.dtype), dscale.astype(x.dtype), doffset.astype(x.dtype), empty, empty

    return compute


@registry.RegisterGradient("FusedBatchNorm")
def _fused_batch_norm_grad(op, grad_y, *unused_statistics_grads):
    """``(dx, dscale, doffset, None, None)`` from ``y``'s gradient alone (TF ignores the statistics' gradients)."""
    x, scale = op.inputs[0], op.inputs[1]
    attrs = {name: op.get_attr(name) for name in ("epsilon", "data_format", "is_training")}
    saved = op.outputs[3:5] if attrs["is_training"] else op.inputs[3:5]
    outputs = apply_op("FusedBatchNormGrad", [grad_y, x, scale, *saved], attrs, "FusedBatchNormGrad").outputs
    return outputs[0], outputs[1], outputs[2], None, None


# -- costs: per element of x; training adds the two statistics passes ---------------------------
@registry.RegisterCost("FusedBatchNorm")
def _fused_batch_norm_cost(input_shapes, output_shapes, attrs):
    """Inference: a subtract and a multiply-add (3); training: + a sum (1) and a centred square and sum (3)."""
    per_element = 7 if attrs["is_training"] else 3
    return per_element * int(np.prod(input_shapes[0])), io_elements(input_shapes, output_shapes)


@registry.RegisterCost("FusedBatchNormGrad")
def _fused_batch_norm_grad_cost(input_shapes, output_shapes, attrs):
    """Centre, the two products and sums (dscale, doffset), and dx's 5 (training) or 1 (inference) ops."""
    per_element = 10 if attrs["is_training"] else 6
    return per_element * int(np.prod(input_shapes[1])), io_elements(input_shapes, output_shapes)
