"""``tf.layers.batch_normalization`` (TF 1.x's functional batch-norm layer).

Source: ``tensorflow/python/layers/normalization.py`` and the Keras ``BatchNormalization`` layer it
wraps (``keras/layers/normalization.py``, TF 1.x), with ``tf.layers``' naming and collections:

* variables ``<scope>/gamma``, ``beta`` (trainable), ``moving_mean``, ``moving_variance`` (not
  trainable) made with ``tf.get_variable`` in the variable scope ``batch_normalization``
  (``batch_normalization_1``, … for later layers; ``name`` to choose it, ``reuse`` to share it);
* the output is ``FusedBatchNorm``'s for a 4-D input normalized over axis 1 or 3 (``fused=None``),
  else ``tf.nn.moments`` + ``tf.nn.batch_normalization``;
* in training, ``moving = moving - (moving - batch_stat) * (1 - momentum)`` (two ``AssignSub`` ops
  named ``AssignMovingAvg``, colocated with their variables) are added to ``tf.GraphKeys.UPDATE_OPS``;
  run them with the train op (``tf.control_dependencies``). The fused path feeds the Bessel-corrected
  batch variance to the moving variance, the other path the biased one — both as in TF.

``training`` may be a Python bool or a bool tensor. TF builds a ``tf.cond`` for a tensor; dfcore has
none, so it computes both the training and the inference output and picks one with ``tf.where``
(``momentum`` becomes 1 when not training, so the update ops leave the moving statistics unchanged, as
TF's ``smart_cond`` does). Variables take the input's dtype (TF keeps float32 ones for float16 input).
"""

from ..framework.graph import GraphKeys
from ..framework.scopes import add_to_collection, colocate_with, name_scope
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..ops import array_ops, array_ops_where, init_ops, math_ops, state_ops
from ..ops.array_ops_util import constant_value
from ..ops.nn_batch_norm import fused_batch_norm
from ..ops.nn_impl import batch_normalization as nn_batch_normalization, moments
from ..ops.variable_scope import get_variable, variable_scope

__all__ = ["batch_normalization"]


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None, moving_mean_initializer=None,
                        moving_variance_initializer=None, beta_regularizer=None, gamma_regularizer=None,
                        beta_constraint=None, gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None,
                        virtual_batch_size=None, adjustment=None) -> Tensor:
    """Batch normalization over every axis but ``axis``: the inputs' shape and dtype.

    Args:
        inputs: a float tensor of known rank whose ``axis`` dimension (the channels, C) is known.
        axis: the channel axis (an int, or a list of one int).
        momentum, epsilon: of the moving averages and of the variance.
        center, scale: whether to learn ``beta`` / ``gamma`` (``[C]`` each).
        training: Python bool or bool tensor: normalize with the batch's statistics (and add the moving-average
            updates to ``UPDATE_OPS``) or with the moving ones.
        fused: None (fuse when possible), True (require ``FusedBatchNorm``) or False.
    Raises:
        ValueError: unknown rank or channel dim, ``axis`` out of range, ``fused=True`` where it cannot fuse.
        NotImplementedError: ``renorm``, ``virtual_batch_size``, ``adjustment``, constraints, several axes.
    Source: ``tensorflow/python/layers/normalization.py``.
    """
    unsupported = {"renorm": renorm, "virtual_batch_size": virtual_batch_size, "adjustment": adjustment,
                   "beta_constraint": beta_constraint, "gamma_constraint": gamma_constraint}
    used = [key for key, value in unsupported.items() if value not in (None, False)]
    if used:
        raise NotImplementedError(f"dfcore's batch_normalization does not support {', '.join(used)}")
    inputs = convert_to_tensor(inputs, name="inputs")
    ndims, axis = _check_axis(inputs, axis)
    fuse = ndims == 4 and axis in (1, 3)
    if fused and not fuse:
        raise ValueError("Unsupported axis, fused batch norm only supports axis == [1] or axis == [3]")
    fuse = fuse if fused is None else bool(fused)
    channels = inputs.shape[axis].value
    dtype = inputs.dtype.base_dtype
    with variable_scope(name, default_name="batch_normalization", values=[inputs], reuse=reuse):
        def weight(weight_name, initializer, learnable, regularizer=None):
            return get_variable(weight_name, [channels], dtype, initializer=initializer, regularizer=regularizer,
                                trainable=learnable and trainable)

        gamma = weight("gamma", gamma_initializer or init_ops.ones_initializer(), True, gamma_regularizer) \
            if scale else None
        beta = weight("beta", beta_initializer or init_ops.zeros_initializer(), True, beta_regularizer) \
            if center else None
        moving_mean = weight("moving_mean", moving_mean_initializer or init_ops.zeros_initializer(), False)
        moving_variance = weight("moving_variance", moving_variance_initializer or init_ops.ones_initializer(), False)
        statistics = _fused if fuse else _moments_based
        if isinstance(training, bool):
            training_value = training
        else:
            training = convert_to_tensor(training, name="training")
            training_value = constant_value(training)
        if training_value is not None and not training_value:
            return statistics(inputs, axis, gamma, beta, epsilon, moving_mean, moving_variance)[0]
        output, mean, variance = statistics(inputs, axis, gamma, beta, epsilon)
        if training_value is None:
            inferred = statistics(inputs, axis, gamma, beta, epsilon, moving_mean, moving_variance)[0]
            output = array_ops_where.where(training, output, inferred)
            momentum = array_ops_where.where(training, convert_to_tensor(momentum, dtype),
                                             convert_to_tensor(1.0, dtype))
        for variable, value in ((moving_mean, mean), (moving_variance, variance)):
            add_to_collection(GraphKeys.UPDATE_OPS, _assign_moving_average(variable, value, momentum))
        return output


def _check_axis(inputs, axis):
    """``(rank, axis as a non-negative int)``; raises as the docstring of :func:`batch_normalization` says."""
    ndims = inputs.shape.ndims
    if ndims is None:
        raise ValueError(f"Input has undefined rank: {inputs.shape}")
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if len(axes) != 1:
        raise NotImplementedError(f"dfcore's batch_normalization normalizes over one axis, got axis={axis}")
    if not -ndims <= axes[0] < ndims:
        raise ValueError(f"Invalid axis: {axes[0]}")
    axis = axes[0] % ndims
    if inputs.shape[axis].value is None:
        raise ValueError(f"Input has undefined `axis` dimension. Input shape: {inputs.shape}")
    return ndims, axis


def _fused(inputs, axis, gamma, beta, epsilon, moving_mean=None, moving_variance=None):
    """``(output, batch mean, Bessel-corrected batch variance)`` of ``FusedBatchNorm`` (batch statistics
    unless the moving ones are given)."""
    channels = [inputs.shape[axis].value]
    dtype = inputs.dtype.base_dtype
    gamma = gamma if gamma is not None else array_ops.ones(channels, dtype)
    beta = beta if beta is not None else array_ops.zeros(channels, dtype)
    return fused_batch_norm(inputs, gamma, beta, moving_mean, moving_variance, epsilon=epsilon,
                            data_format="NCHW" if axis == 1 else "NHWC", is_training=moving_mean is None)


def _moments_based(inputs, axis, gamma, beta, epsilon, moving_mean=None, moving_variance=None):
    """``(output, batch mean, biased batch variance)`` from ``tf.nn.moments`` and ``tf.nn.batch_normalization``
    (the moving statistics instead of the batch's when given)."""
    ndims = inputs.shape.ndims
    reduction_axes = [i for i in range(ndims) if i != axis]
    if moving_mean is None:
        mean, variance = moments(inputs, reduction_axes)
    else:
        mean, variance = convert_to_tensor(moving_mean), convert_to_tensor(moving_variance)

    def broadcast(v):
        if v is None or axis == ndims - 1:
            return v
        shape = [1] * ndims
        shape[axis] = inputs.shape[axis].value
        return array_ops.reshape(v, shape)

    output = nn_batch_normalization(inputs, broadcast(mean), broadcast(variance), broadcast(beta), broadcast(gamma),
                                    epsilon)
    output.set_shape(inputs.shape)
    return output, mean, variance


def _assign_moving_average(variable, value, momentum):
    """``variable -= (variable - value) * (1 - momentum)``, an ``AssignSub`` named ``AssignMovingAvg``."""
    with name_scope(None, "AssignMovingAvg", [variable, value, momentum]) as scope:
        with colocate_with(variable):
            decay = convert_to_tensor(1.0 - momentum, name="decay")
            if decay.dtype.base_dtype is not variable.dtype.base_dtype:
                decay = math_ops.cast(decay, variable.dtype.base_dtype)
            update_delta = math_ops.multiply(math_ops.subtract(variable, math_ops.cast(value, variable.dtype)), decay)
            return state_ops.assign_sub(variable, update_delta, name=scope)
