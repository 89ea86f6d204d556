"""nn functions built from other ops: ``sigmoid_cross_entropy_with_logits``, ``moments``,
``batch_normalization`` (and TF 1.x's ``batch_norm_with_global_normalization``), ``l2_normalize``,
``zero_fraction``.

Source: ``tensorflow/python/ops/nn_impl.py``. No op types of their own: their
gradients come from the ops they are built of.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..framework import dtypes
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from . import array_ops, array_ops_layout, array_ops_where, math_ops
from .nn_ops_xent import ensure_xent_args

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["sigmoid_cross_entropy_with_logits", "moments", "batch_normalization",
           "batch_norm_with_global_normalization", "l2_normalize", "zero_fraction"]


def sigmoid_cross_entropy_with_logits(_sentinel: None = None, labels: TensorLike = None, logits: TensorLike = None,
                                      name: str | None = None) -> Tensor:
    """Elementwise logistic loss ``max(x, 0) - x * z + log(1 + exp(-|x|))`` (x = logits, z = labels).

    Stable for large ``|x|``; the result has the logits' shape and dtype.
    Raises:
        ValueError: positional arguments, missing inputs, or shapes that differ (TF's wording).
    Source: ``tensorflow/python/ops/nn_impl.py``.
    """
    ensure_xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, dtype=logits.dtype.base_dtype, name="labels")
        if not labels.shape.is_compatible_with(logits.shape):
            raise ValueError(f"logits and labels must have the same shape ({logits.shape} vs {labels.shape})")
        zeros = array_ops.zeros_like(logits)
        cond = math_ops.greater_equal(logits, zeros)  # TF's two-tap where: the gradient at 0 is sigmoid(0) - z
        relu_logits = array_ops_where.where(cond, logits, zeros)
        neg_abs_logits = array_ops_where.where(cond, math_ops.negative(logits), logits)
        return math_ops.add(math_ops.subtract(relu_logits, math_ops.multiply(logits, labels)),
                            math_ops.log1p(math_ops.exp(neg_abs_logits)), name=scope)


def moments(x: TensorLike, axes: TensorLike, shift: None = None, name: str | None = None, keep_dims: bool | None = None,
            keepdims: bool | None = None) -> tuple[Tensor, Tensor]:
    """The ``(mean, variance)`` of ``x`` over ``axes`` (float16 is computed in float32).

    Args:
        axes: a list of ints; the reduced dims are dropped unless ``keepdims``.
        shift: unused, as in TF.
    Source: ``tensorflow/python/ops/nn_impl.py``.
    """
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with name_scope(name, "moments", [x, axes]):
        x = convert_to_tensor(x)
        y = math_ops.cast(x, dtypes.float32) if x.dtype == dtypes.float16 else x
        mean = math_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        deviation = math_ops.squared_difference(y, array_ops.stop_gradient(mean))
        variance = math_ops.reduce_mean(deviation, axes, keepdims=True, name="variance")
        if not keep:
            mean = array_ops_layout.squeeze(mean, axes)
            variance = array_ops_layout.squeeze(variance, axes)
        if x.dtype == dtypes.float16:
            return math_ops.cast(mean, dtypes.float16), math_ops.cast(variance, dtypes.float16)
        return mean, variance


def batch_normalization(x: TensorLike, mean: TensorLike, variance: TensorLike, offset: TensorLike, scale: TensorLike,
                        variance_epsilon: TensorLike, name: str | None = None) -> Tensor:
    """``(x - mean) * scale / sqrt(variance + variance_epsilon) + offset``, built as TF does:
    ``x * inv + (offset - mean * inv)`` with ``inv = rsqrt(variance + variance_epsilon) * scale``.

    ``mean``, ``variance``, ``offset`` and ``scale`` broadcast against ``x`` (e.g. ``[C]`` for NHWC, or the
    ``keep_dims`` output of :func:`moments`); ``offset`` or ``scale`` may be None. The result has x's shape
    and dtype. Raises ``InvalidArgumentError`` where shapes do not broadcast.
    Source: ``tensorflow/python/ops/nn_impl.py``.
    """
    with name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        x = convert_to_tensor(x, name="x")
        inv = math_ops.rsqrt(math_ops.add(variance, variance_epsilon))
        if scale is not None:
            inv = math_ops.multiply(inv, scale)
        mean_inv = math_ops.multiply(mean, inv)
        shift = math_ops.subtract(offset, mean_inv) if offset is not None else math_ops.negative(mean_inv)
        dtype = x.dtype.base_dtype
        return math_ops.add(math_ops.multiply(x, math_ops.cast(inv, dtype)), math_ops.cast(shift, dtype))


def batch_norm_with_global_normalization(t: TensorLike = None, m: TensorLike = None, v: TensorLike = None,
                                         beta: TensorLike = None, gamma: TensorLike = None,
                                         variance_epsilon: TensorLike = None,
                                         scale_after_normalization: bool | None = None, name: str | None = None,
                                         input: TensorLike = None, mean: TensorLike = None,
                                         variance: TensorLike = None) -> Tensor:
    """TF 1.x's older form of :func:`batch_normalization`: ``t`` (or ``input``) normalized by ``m``/``v`` (or
    ``mean``/``variance``), shifted by ``beta`` and scaled by ``gamma`` only if ``scale_after_normalization``."""
    return batch_normalization(t if t is not None else input, m if m is not None else mean,
                               v if v is not None else variance, beta, gamma if scale_after_normalization else None,
                               variance_epsilon, name=name or "batchnorm")


def l2_normalize(x: TensorLike, axis: TensorLike = None, epsilon: float = 1e-12, name: str | None = None,
                 dim: TensorLike = None) -> Tensor:
    """``x / sqrt(max(sum(x ** 2, axis), epsilon))``: unit L2 norm along ``axis`` (an int or a list;
    None: all axes); the result has x's shape and dtype.

    Raises:
        ValueError: both ``axis`` and its old name ``dim`` given (TF's wording).
    Source: ``tensorflow/python/ops/nn_impl.py``.
    """
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    with name_scope(name, "l2_normalize", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        square_sum = math_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
        x_inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, x_inv_norm, name=scope)


def zero_fraction(value: TensorLike, name: str | None = None) -> Tensor:
    """The fraction of ``value``'s elements that are zero, a float32 scalar (``tf.nn.zero_fraction``;
    the CIFAR-10 tutorial summarizes the sparsity of its activations with it).

    Source: ``tensorflow/python/ops/nn_impl.py``.
    """
    with name_scope(name, "zero_fraction", [value]):
        value = convert_to_tensor(value, name="value")
        is_zero = math_ops.equal(value, array_ops.zeros([], value.dtype.base_dtype))
        return array_ops.identity(math_ops.reduce_mean(math_ops.cast(is_zero, dtypes.float32)), "fraction")
