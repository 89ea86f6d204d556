"""``tf.layers.dense``, ``tf.layers.dropout`` and ``tf.layers.flatten`` (TF 1.x functional layers).

Source: ``tensorflow/python/layers/core.py`` and the keras layers it wraps
(``keras/layers/core.py``: ``Dense``, ``Dropout``, ``Flatten``). Variables: ``<scope>/kernel``
``[in, units]`` and ``<scope>/bias`` ``[units]``; ops: ``dense/MatMul``, ``dense/BiasAdd`` and the
activation's (``dense/Relu``).
"""

import numpy as np

from ..framework import dtypes
from ..framework.scopes import name_scope
from ..framework.tensor import Tensor
from ..ops import array_ops, array_ops_join, array_ops_layout, init_ops, math_ops, nn_ops
from ..ops.array_ops_util import constant_value
from . import base


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=init_ops.zeros_initializer(),  # noqa: B008 - TF's default (stateless)
          kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
          bias_constraint=None, trainable=True, name=None, reuse=None) -> Tensor:
    """``activation(inputs @ kernel + bias)`` on the last dimension of ``inputs``.

    Args:
        inputs: float Tensor ``[..., in]`` of rank ≥ 2 with ``in`` known; rank > 2 contracts the last axis.
        units: output size. kernel_initializer: default the scope's, else glorot_uniform; bias: zeros.
        name: the variable scope, exactly (a second layer of that name needs ``reuse``); without it
            ``dense``, ``dense_1`` … reuse: True or ``tf.AUTO_REUSE`` shares the scope's variables.
    Returns:
        A Tensor ``[..., units]`` of the inputs' dtype.
    Raises:
        ValueError: rank < 2, or the last dimension is None (TF's "The last dimension of the inputs to
            `Dense` should be defined. Found `None`."); a shared kernel of another shape.
        TypeError: non-floating inputs. NotImplementedError: a kernel or bias constraint.
    Source: ``tensorflow/python/layers/core.py`` (``dense``).
    """
    base.unsupported("Dense", kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
    units = int(units)
    if units <= 0:
        raise ValueError(f"Dense: units must be a positive integer, got {units}")
    with base.layer_scope(name, "dense", reuse) as layer_name:
        inputs = base.layer_inputs(inputs, layer_name, min_ndim=2)
        dtype = base.floating_dtype(inputs, "Dense")
        last_dim = base.defined_dim(inputs, -1, "The last dimension of the inputs to `Dense` should be defined. "
                                                "Found `None`.")
        kernel = base.add_weight("kernel", [last_dim, units], dtype, kernel_initializer, kernel_regularizer,
                                 trainable)
        outputs = _matmul_last_axis(inputs, kernel, units)
        if use_bias:
            bias = base.add_weight("bias", [units], dtype, bias_initializer, bias_regularizer, trainable)
            outputs = nn_ops.bias_add(outputs, bias)
        return base.finish(outputs, activation, activity_regularizer)


def _matmul_last_axis(inputs, kernel, units):
    """``inputs @ kernel`` over the last axis: one MatMul for a matrix, else reshape, MatMul, reshape back."""
    if inputs.shape.ndims == 2:
        return math_ops.matmul(inputs, kernel)
    with name_scope(None, "Tensordot"):
        flat = array_ops.reshape(inputs, [-1, kernel.shape.as_list()[0]])
        outer = array_ops.shape(inputs)[:-1]
        outputs = array_ops.reshape(math_ops.matmul(flat, kernel), array_ops_join.concat([outer, [units]], 0))
    outputs.set_shape(inputs.shape.as_list()[:-1] + [units])
    return outputs


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None) -> Tensor:
    """Zero each element with probability ``rate`` and scale the rest by ``1 / (1 - rate)`` while training.

    Args:
        inputs: a float Tensor. rate: in ``[0, 1)``. noise_shape: as ``tf.nn.dropout``.
        training: a Python bool or a scalar bool Tensor (e.g. a placeholder).
    Returns:
        A Tensor like ``inputs``: ``inputs`` itself through an ``Identity`` when not training.
    Raises:
        TypeError: ``training`` is neither a bool nor a bool Tensor. ValueError: as ``tf.nn.dropout``.
    Source: ``tensorflow/python/layers/core.py`` (``dropout``); keras ``Dropout.call``. TF picks the branch
    with ``tf.cond``; for a Tensor ``training`` dfcore drops with ``rate * cast(training)`` instead (the same
    values; the random draw is made in both modes).
    """
    with base.layer_scope(name, "dropout", None) as layer_name:
        inputs = base.layer_inputs(inputs, layer_name)
        training = _static_bool(training)
        if training is False:
            return array_ops.identity(inputs)
        if training is not True:
            rate = math_ops.multiply(math_ops.cast(rate, inputs.dtype.base_dtype),
                                     math_ops.cast(training, inputs.dtype.base_dtype), name="rate")
        return nn_ops.dropout(inputs, noise_shape=noise_shape, seed=seed, rate=rate)


def _static_bool(training):
    """``training`` as a Python bool when it is known now, else the bool Tensor itself."""
    if isinstance(training, Tensor):
        if training.dtype.base_dtype is not dtypes.bool:
            raise TypeError(f"dropout: training must be a bool Tensor, got {training.dtype.base_dtype.name}")
        known = constant_value(training)
        return training if known is None else bool(known)
    if isinstance(training, (bool, np.bool_)) or training in (0, 1):
        return bool(training)
    raise TypeError(f"`pred` must be a Tensor, or a Python bool, or 1 or 0. Found instead: {training!r}")


def flatten(inputs, name=None, data_format="channels_last") -> Tensor:
    """``[batch, d1, d2, …]`` → ``[batch, d1 * d2 * …]`` (channels moved last first for ``channels_first``).

    Returns:
        A Tensor of the inputs' dtype, its second dimension known when ``d1, d2, …`` are.
    Raises:
        ValueError: rank-0 inputs (TF's InputSpec message), or an unknown ``data_format``.
    Source: ``tensorflow/python/layers/core.py`` (``flatten``); keras ``Flatten.call``.
    """
    last = base.channels_last(data_format, "Flatten", allow_first=True)
    with base.layer_scope(name, "flatten", None) as layer_name:
        inputs = base.layer_inputs(inputs, layer_name, min_ndim=1)
        rank = inputs.shape.ndims
        if not last and rank is not None and rank > 2:
            inputs = array_ops_layout.transpose(inputs, [0, *range(2, rank), 1])
        dims: list = inputs.shape.as_list() if rank is not None else [None, None]
        if rank is not None and None not in dims[1:]:
            outputs = array_ops.reshape(inputs, [-1, int(np.prod(dims[1:], dtype=np.int64))])
        elif dims[0] is not None:
            outputs = array_ops.reshape(inputs, [dims[0], -1])
        else:
            outputs = array_ops.reshape(inputs, array_ops_join.stack([array_ops.shape(inputs)[0], -1]))
        return outputs
