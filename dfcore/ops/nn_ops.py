"""Neural-network ops (``tf.nn``): activations, softmax, ``bias_add``, ``l2_loss``, dropout;
this module also gathers the softmax cross-entropies (:mod:`nn_ops_xent`) and the
composite functions of :mod:`nn_impl` (sigmoid cross-entropy, moments, batch_normalization,
l2_normalize). Normalization ops, top-k and embeddings have modules of their own (``nn_lrn``,
``nn_batch_norm``, ``nn_topk``, ``embedding_ops``), gathered by :mod:`dfcore.nn`.

Source: ``tensorflow/python/ops/nn_ops.py`` and ``core/ops/nn_ops.cc``. Each op
has a shape function and an array kernel (:mod:`dfcore.backends`) here; gradients (and the ``*Grad`` ops
they use) live in :mod:`dfcore.ops.nn_grad`.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

from .. import errors
from ..framework import registry
from ..framework.scopes import name_scope
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import array_ops, array_ops_layout, common_shapes, math_ops, random_ops
from .op_util import apply_op1, convert_same_dtype

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = [
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "softplus",
    "softmax",
    "log_softmax",
    "bias_add",
    "l2_loss",
    "xw_plus_b",
    "dropout",
    "sigmoid",
    "tanh",
]

sigmoid = math_ops.sigmoid  # tf.nn.sigmoid / tf.nn.tanh are math_ops' ops under nn names, as in TF
tanh = math_ops.tanh


# -- activations -------------------------------------------------------------------
def _relu(op, backend):
    xp = backend.xp
    zeros: dict = {}  # dtype -> 0-d zero, made once (xp.zeros costs 0.5 us a call)

    def compute(x):
        zero = zeros.get(x.dtype)
        if zero is None:
            zero = zeros[x.dtype] = xp.zeros((), dtype=x.dtype)
        return xp.maximum(x, zero)

    return compute


def _relu6(op, backend):
    xp = backend.xp
    return lambda x: xp.clip(x, xp.zeros((), dtype=x.dtype), xp.asarray(6, dtype=x.dtype))


def _leaky_relu(op, backend):
    alpha, xp = op.get_attr("alpha"), backend.xp
    return lambda x: xp.where(x > 0, x, x * xp.asarray(alpha, dtype=x.dtype))


def _elu(op, backend):
    xp = backend.xp
    return lambda x: xp.where(x > 0, x, xp.expm1(xp.minimum(x, xp.zeros((), dtype=x.dtype))))


def _softplus(op, backend):
    xp = backend.xp
    return lambda x: xp.logaddexp(x, xp.zeros((), dtype=x.dtype))


ACTIVATIONS = {"Relu": _relu, "Relu6": _relu6, "LeakyRelu": _leaky_relu, "Elu": _elu, "Softplus": _softplus}

for _op_type, _factory in ACTIVATIONS.items():
    registry.RegisterShape(_op_type)(common_shapes.unchanged)
    registry.RegisterArrayKernel(_op_type)(_factory)


def relu(features: TensorLike, name: str | None = None) -> Tensor:
    """``max(features, 0)`` elementwise (``Relu``). Source: ``gen_nn_ops.relu``."""
    return apply_op1("Relu", [features], {}, name or "Relu")


def relu6(features: TensorLike, name: str | None = None) -> Tensor:
    """``min(max(features, 0), 6)`` elementwise (``Relu6``). Source: ``nn_ops.relu6``."""
    with name_scope(name, "Relu6", [features]) as scope:
        return apply_op1("Relu6", [convert_to_tensor(features, name="features")], {}, scope)


def leaky_relu(features: TensorLike, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """``features`` where positive, else ``alpha * features`` (``LeakyRelu``); ints become float32.

    Source: ``tensorflow/python/ops/nn_ops.py``.
    """
    with name_scope(name, "LeakyRelu", [features, alpha]) as scope:
        features = convert_to_tensor(features, name="features")
        if features.dtype.is_integer:
            features = math_ops.to_float(features)
        return apply_op1("LeakyRelu", [features], {"alpha": float(alpha)}, scope)


def elu(features: TensorLike, name: str | None = None) -> Tensor:
    """``features`` where positive, else ``exp(features) - 1`` (``Elu``). Source: ``gen_nn_ops.elu``."""
    return apply_op1("Elu", [features], {}, name or "Elu")


def softplus(features: TensorLike, name: str | None = None) -> Tensor:
    """``log(exp(features) + 1)`` elementwise, computed stably (``Softplus``). Source: ``gen_nn_ops.softplus``."""
    return apply_op1("Softplus", [features], {}, name or "Softplus")


# -- softmax -----------------------------------------------------------------------
def _rank_at_least_1(op):
    x = op.inputs[0]
    if x.shape.ndims == 0:
        raise common_shapes.shape_error(op, "Shape must be at least rank 1 but is rank 0")
    return [(x.dtype.base_dtype, x.shape)]


def log_softmax_values(x: Any, backend: Any) -> Any:
    """Numerically stable ``log(softmax(x))`` over the last axis of an array of ``backend``
    (``x - max - log(sum(exp(x - max)))``, reductions through :meth:`Backend.reducer`). A row holding inf or
    -inf gives nan silently, as TF (``inf - inf`` is numpy's only float error here; one ``quiet`` for all)."""
    xp = backend.xp
    with backend.quiet():
        shifted = x - backend.reducer("max")(x, axis=-1, keepdims=True)
        return shifted - xp.log(backend.reducer("sum")(xp.exp(shifted), axis=-1, keepdims=True))


def _softmax_kernel(op, backend):
    xp, amax, total, quiet = backend.xp, backend.reducer("max"), backend.reducer("sum"), backend.quiet

    def compute(x):
        with quiet():  # inf - inf: nan, silently (TF)
            e = xp.exp(x - amax(x, axis=-1, keepdims=True))
            return e / total(e, axis=-1, keepdims=True)

    return compute


registry.RegisterShape("Softmax")(_rank_at_least_1)
registry.RegisterShape("LogSoftmax")(_rank_at_least_1)
registry.RegisterArrayKernel("Softmax")(_softmax_kernel)
registry.RegisterArrayKernel("LogSoftmax")(lambda op, backend: lambda x: log_softmax_values(x, backend))


def _check_axis(axis, ndims):
    if not -ndims <= axis < ndims:
        raise errors.InvalidArgumentError(
            None, None, f"Dimension ({axis}) must be in the range [{-ndims}, {ndims}) where {ndims} is the number "
            "of dimensions in the input.")


def move_axis_to_end(tensor: Tensor, axis: int) -> Tensor:
    """``tensor`` transposed so ``axis`` comes last (unchanged if it already is); rank must be known.

    Raises:
        InvalidArgumentError: ``axis`` out of range (TF's wording).
    """
    ndims = tensor.shape.ndims
    if axis == -1 or axis == ndims - 1:
        return tensor
    _check_axis(axis, ndims)
    axis %= ndims
    return array_ops_layout.transpose(tensor, [i for i in range(ndims) if i != axis] + [axis])


def _softmax(op_type, logits, axis, name):
    """``op_type`` over ``axis``: a non-last axis is swapped with the last one around the op (as TF)."""
    logits = convert_to_tensor(logits)
    ndims = logits.shape.ndims
    if axis is None or axis == -1 or (ndims is not None and axis == ndims - 1):
        return apply_op1(op_type, [logits], {}, name or op_type)
    if ndims is None:
        raise ValueError(f"{op_type} over axis {axis} needs logits of known rank")
    _check_axis(axis, ndims)
    perm = list(range(ndims))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    output = apply_op1(op_type, [array_ops_layout.transpose(logits, perm)], {}, op_type)
    return array_ops_layout.transpose(output, perm, name=name or "transpose")


def softmax(logits: TensorLike, axis: TensorLike = None, name: str | None = None, dim: TensorLike = None) -> Tensor:
    """``exp(logits) / reduce_sum(exp(logits), axis)``, stable, over the last axis (``Softmax``).

    Raises:
        InvalidArgumentError: rank-0 logits (graph construction), or ``axis`` out of range.
    Source: ``tensorflow/python/ops/nn_ops.py``.
    """
    return _softmax("Softmax", logits, axis if axis is not None else dim, name)


def log_softmax(logits: TensorLike, axis: TensorLike = None, name: str | None = None, dim: TensorLike = None) -> Tensor:
    """``logits - log(reduce_sum(exp(logits), axis))``, stable, over the last axis (``LogSoftmax``).

    Raises:
        InvalidArgumentError: rank-0 logits (graph construction), or ``axis`` out of range.
    Source: ``tensorflow/python/ops/nn_ops.py``.
    """
    return _softmax("LogSoftmax", logits, axis if axis is not None else dim, name)


# -- bias_add ----------------------------------------------------------------------
def channel_axis(data_format: str, ndims: int) -> int:
    """The channel axis of a ``data_format`` (``NHWC``-like: last; ``NCHW``-like: 1)."""
    return 1 if data_format.startswith("NC") else ndims - 1


@registry.RegisterShape("BiasAdd")
def _bias_add_shape(op):
    value, bias = op.inputs
    common_shapes.require_same_dtype(op)
    if value.shape.ndims is not None and value.shape.ndims < 2:
        raise common_shapes.shape_error(op, f"Shape must be at least rank 2 but is rank {value.shape.ndims}")
    if bias.shape.ndims not in (None, 1):
        raise common_shapes.shape_error(op, f"Shape must be rank 1 but is rank {bias.shape.ndims}")
    if value.shape.ndims is None:
        return [(value.dtype.base_dtype, value.shape)]
    dims = value.shape.as_list()
    axis = channel_axis(op.get_attr("data_format"), len(dims))
    channels = bias.shape.as_list()[0] if bias.shape.ndims == 1 else None
    if dims[axis] is not None and channels is not None and dims[axis] != channels:
        raise common_shapes.shape_error(op, f"Dimensions must be equal, but are {dims[axis]} and {channels}")
    dims[axis] = dims[axis] if dims[axis] is not None else channels
    return [(value.dtype.base_dtype, TensorShape(dims))]


@registry.RegisterArrayKernel("BiasAdd")
def _bias_add_kernel(op, backend):
    data_format, xp = op.get_attr("data_format"), backend.xp

    def compute(value, bias):
        axis = channel_axis(data_format, value.ndim)
        if value.shape[axis] != bias.shape[0]:
            raise errors.InvalidArgumentError(
                None, op, f"Must provide as many biases as the last dimension of the input tensor: "
                f"[{bias.shape[0]}] vs. [{','.join(map(str, value.shape))}]")
        return value + xp.reshape(bias, (-1,) + (1,) * (value.ndim - 1 - axis))

    return compute


def bias_add(value: TensorLike, bias: TensorLike, data_format: str | None = None, name: str | None = None) -> Tensor:
    """``value + bias`` with the 1-D ``bias`` added along the channel axis (last for ``NHWC``).

    Raises:
        InvalidArgumentError: ``value`` of rank < 2, ``bias`` not 1-D, or channel counts that differ.
        TypeError: the dtypes differ.
    Source: ``tensorflow/python/ops/nn_ops.py``.
    """
    with name_scope(name, "BiasAdd", [value, bias]) as scope:
        value, bias = convert_same_dtype([value, bias], "BiasAdd")
        return apply_op1("BiasAdd", [value, bias], {"data_format": data_format or "NHWC"}, scope)


# -- l2_loss -----------------------------------------------------------------------
registry.RegisterShape("L2Loss")(lambda op: [(op.inputs[0].dtype.base_dtype, TensorShape([]))])


@registry.RegisterArrayKernel("L2Loss")
def _l2_loss_kernel(op, backend):
    xp = backend.xp
    return lambda t: xp.asarray(xp.sum(xp.square(t)) / 2, dtype=t.dtype)


def l2_loss(t: TensorLike, name: str | None = None) -> Tensor:
    """``sum(t ** 2) / 2`` as a scalar of t's dtype (``L2Loss``). Source: ``gen_nn_ops.l2_loss``."""
    return apply_op1("L2Loss", [t], {}, name or "L2Loss")


def xw_plus_b(x: TensorLike, weights: TensorLike, biases: TensorLike, name: str | None = None) -> Tensor:
    """``matmul(x, weights) + biases`` (``MatMul`` then ``BiasAdd``). Source: ``nn_ops.py``."""
    with name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        return bias_add(math_ops.matmul(x, weights), biases, name=scope)


# -- dropout -----------------------------------------------------------------------
def dropout(x: TensorLike, keep_prob: TensorLike = None, noise_shape: TensorLike = None, seed: int | None = None,
            name: str | None = None, rate: TensorLike = None) -> Tensor:
    """``x / keep_prob`` where a uniform draw keeps the element, else 0 (TF1's ``tf.nn.dropout``).

    Args:
        keep_prob: the probability to keep each element (a float or a scalar tensor,
            e.g. a placeholder); or give ``rate = 1 - keep_prob`` instead.
        noise_shape: the shape of the keep/drop draws, broadcast against x's shape.
    Returns:
        A tensor of x's shape and dtype; ``keep_prob == 1`` (a Python number) returns ``x`` itself.
    Raises:
        ValueError: both or neither of keep_prob and rate, a float rate outside ``[0, 1)``, or a non-float x.
    Source: ``tensorflow/python/ops/nn_ops.py`` (``dropout`` and ``dropout_v2``).
    """
    if keep_prob is not None and rate is not None:
        raise ValueError("Cannot specify both 'rate' and 'keep_prob'.")
    if keep_prob is not None:
        try:
            rate = 1.0 - keep_prob
        except TypeError:
            raise ValueError(f"keep_prob must be a floating point number or Tensor (got {keep_prob!r})") from None
    if rate is None:
        raise ValueError("You must provide a rate to dropout.")
    with name_scope(name, "dropout", [x]):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError(f"x has to be a floating point tensor since it's going to be scaled. Got a "
                             f"{x.dtype.base_dtype.name} tensor instead.")
        if isinstance(rate, numbers.Real):
            if not 0 <= float(rate) < 1:
                raise ValueError(f"rate must be a scalar tensor or a float in the range [0, 1), got {rate:g}")
            if rate == 0:
                return x
        rate = convert_to_tensor(rate, dtype=x.dtype.base_dtype, name="rate")
        if not rate.shape.is_compatible_with(TensorShape([])):
            raise ValueError(f"Shapes {rate.shape} and () are incompatible")
        known = array_ops.constant_value(rate)
        if known is not None and known == 0:
            return x
        random_tensor = random_ops.random_uniform(_noise_shape(x, noise_shape), seed=seed, dtype=x.dtype.base_dtype)
        scale = 1 / (1 - rate)
        keep_mask = math_ops.greater_equal(random_tensor, rate)
        ret = x * scale * math_ops.cast(keep_mask, x.dtype.base_dtype)
        ret.set_shape(x.shape)
        return ret


def _noise_shape(x, noise_shape):
    """``noise_shape`` with its None dims filled from x's static shape; x's dynamic shape when None."""
    if noise_shape is None:
        return array_ops.shape(x)
    if isinstance(noise_shape, Tensor):
        return noise_shape
    dims = list(TensorShape(noise_shape).as_list())
    if x.shape.ndims == len(dims):
        dims = [xd if nd is None else nd for nd, xd in zip(dims, x.shape.as_list())]
    if None in dims:
        raise ValueError(f"noise_shape {noise_shape} has unknown dimensions that x's shape {x.shape} does not fill")
    return dims
