"""What every ``tf.layers`` function shares: its variable scope, its weights, its input checks and outputs.

Source: ``tensorflow/python/layers/base.py`` (TF 1.x ``Layer._set_scope``, ``add_weight``,
``__call__``) and ``keras/engine/input_spec.py`` (``assert_input_compatibility``, whose messages
the checks below keep). A layer call opens a variable scope named after the layer (``dense``,
``dense_1`` …, or exactly ``name`` if given), creates its weights
there with ``tf.get_variable`` (so ``<scope>/kernel``, shared on reuse) and builds its ops in the
scope's name scope (``dense/MatMul``).
"""

import contextlib

from ..framework import dtypes
from ..framework.graph import GraphKeys, get_default_graph
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..ops import variable_scope as vs


@contextlib.contextmanager
def layer_scope(name, default_name, reuse):
    """The variable scope of one layer call; yields the layer's name (the scope's last component).

    As TF's functional layers (``_scope=name``, ``Layer._set_scope``): a given ``name`` is the scope exactly, so
    a second layer of that name needs ``reuse`` (else ``get_variable`` raises "Variable fc/kernel already
    exists"); without a name the scope is ``default_name`` made unique (``dense``, ``dense_1``), or exactly
    ``default_name`` with ``reuse`` (True or ``tf.AUTO_REUSE``), which shares the weights created there.
    """
    if name or reuse:
        scope = vs.variable_scope(name or default_name, reuse=reuse or None)
    else:
        scope = vs.variable_scope(None, default_name=default_name)
    with scope as opened:
        yield opened.name.rsplit("/", 1)[-1]


def layer_inputs(inputs, layer_name, ndim=None, min_ndim=None) -> Tensor:
    """``inputs`` as a Tensor whose rank the layer accepts.

    Raises:
        ValueError: TF's ``Input 0 of layer <name> is incompatible with the layer: expected ndim=4, found
            ndim=3. Full shape received: [...]`` (or ``min_ndim``).
    """
    inputs = convert_to_tensor(inputs, name="inputs")
    rank = inputs.shape.ndims
    if ndim is not None and rank != ndim:
        _incompatible(layer_name, f"expected ndim={ndim}, found ndim={rank}", inputs)
    if min_ndim is not None and rank is not None and rank < min_ndim:
        _incompatible(layer_name, f"expected min_ndim={min_ndim}, found ndim={rank}", inputs)
    return inputs


def _incompatible(layer_name, detail, inputs):
    shape = inputs.shape.as_list() if inputs.shape.ndims is not None else None
    raise ValueError(f"Input 0 of layer {layer_name} is incompatible with the layer: {detail}. "
                     f"Full shape received: {shape}")


def floating_dtype(inputs, class_name) -> dtypes.DType:
    """The layer's dtype, taken from its inputs as TF 1.x layers do.

    Raises:
        TypeError: a non-floating input (TF's ``Unable to build `Dense` layer with non-floating point dtype``).
    """
    dtype = inputs.dtype.base_dtype
    if not dtype.is_floating:
        raise TypeError(f"Unable to build `{class_name}` layer with non-floating point dtype {dtype.name}")
    return dtype


def defined_dim(inputs, axis, message) -> int:
    """The static size of ``inputs``' dimension ``axis``; ValueError with ``message`` when it is unknown."""
    size = inputs.shape.as_list()[axis] if inputs.shape.ndims is not None else None
    if size is None:
        raise ValueError(message)
    return size


def add_weight(name, shape, dtype, initializer, regularizer, trainable):
    """The weight ``<layer scope>/<name>`` from ``tf.get_variable`` (created, or shared on reuse)."""
    return vs.get_variable(name, shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer,
                           trainable=trainable)


def finish(outputs, activation, activity_regularizer):
    """Apply ``activation`` and add ``activity_regularizer(outputs)`` to ``REGULARIZATION_LOSSES``."""
    if activation is not None:
        outputs = activation(outputs)
    if activity_regularizer is not None:
        with get_default_graph().name_scope("ActivityRegularizer"):
            get_default_graph().add_to_collection(GraphKeys.REGULARIZATION_LOSSES, activity_regularizer(outputs))
    return outputs


def unsupported(layer_class, **arguments):
    """Raise NotImplementedError for the arguments (weight constraints) dfcore's layers do not implement."""
    given = sorted(name for name, value in arguments.items() if value is not None)
    if given:
        raise NotImplementedError(f"dfcore's {layer_class} layer does not support {', '.join(given)}; leave "
                                  f"{'them' if len(given) > 1 else 'it'} None")


def channels_last(data_format, layer_class, allow_first=False) -> bool:
    """Check ``data_format``; True for ``channels_last``.

    Raises:
        ValueError: an unknown format (TF's wording), or ``channels_first`` where dfcore's NHWC kernels
            cannot run it (unless ``allow_first``).
    """
    value = str(data_format).lower()
    if value not in ("channels_first", "channels_last"):
        raise ValueError('The `data_format` argument must be one of "channels_first", "channels_last". Received: '
                         f"{data_format}")
    if value == "channels_first" and not allow_first:
        raise ValueError(f"dfcore's {layer_class} runs NHWC kernels only (as TF's CPU kernels): use "
                         "data_format='channels_last'")
    return value == "channels_last"


def normalize_tuple(value, n, name) -> tuple:
    """``value`` as a tuple of ``n`` ints (an int is repeated), as keras' ``conv_utils.normalize_tuple``.

    Raises:
        ValueError: TF's ``The `kernel_size` argument must be a tuple of 2 integers. Received: ...``.
    """
    if isinstance(value, int):
        return (value,) * n
    message = f"The `{name}` argument must be a tuple of {n} integers. Received: {value}"
    try:
        values = tuple(value)
    except TypeError:
        raise ValueError(message) from None
    if len(values) != n:
        raise ValueError(message)
    for item in values:
        if not isinstance(item, int) or isinstance(item, bool):
            raise ValueError(f"{message} including element {item} of type {type(item)}")
    return values


def normalize_padding(value) -> str:
    """``"VALID"`` or ``"SAME"`` from ``padding`` in any case (keras' ``normalize_padding``).

    Raises:
        ValueError: any other value (TF's wording; ``causal`` is for ``Conv1D`` only).
    """
    padding = str(value).lower()
    if padding not in ("valid", "same"):
        raise ValueError('The `padding` argument must be a list/tuple or one of "valid", "same" (or "causal", only '
                         f"for `Conv1D). Received: {padding}")
    return padding.upper()
