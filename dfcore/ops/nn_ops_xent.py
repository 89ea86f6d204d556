"""Softmax cross-entropies: the fused ``SoftmaxCrossEntropyWithLogits`` and
``SparseSoftmaxCrossEntropyWithLogits`` ops (outputs: per-row loss and its backprop) and
their TF1 wrappers, which flatten higher-rank inputs to ``[rows, classes]``.

Source: ``tensorflow/python/ops/nn_ops.py``, ``core/ops/nn_ops.cc`` and
``core/kernels/xent_op.cc`` / ``sparse_xent_op.cc`` (error texts). Gradients in
:mod:`dfcore.ops.nn_grad`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import errors
from ..framework import dtypes, registry
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import array_ops, array_ops_join, array_ops_slice, common_shapes, math_ops
from .nn_ops import log_softmax_values, move_axis_to_end
from .op_util import apply_op

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = [
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits",
]


def ensure_xent_args(name: str, sentinel: None, labels: TensorLike, logits: TensorLike) -> None:
    """Raise TF's ValueError for positional use or a missing input of a ``*_with_logits`` function."""
    if sentinel is not None:
        raise ValueError(f"Only call `{name}` with named arguments (labels=..., logits=..., ...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def _flatten_outer_dims(tensor):
    """``tensor`` (of known rank >= 1) reshaped to ``[-1, last_dim]``; unchanged if already rank 2."""
    ndims = tensor.shape.ndims
    if ndims == 2:
        return tensor
    last = tensor.shape.as_list()[-1]
    if last is None:
        last = array_ops_slice.slice(array_ops.shape(tensor), [ndims - 1], [1])
        return array_ops.reshape(tensor, array_ops_join.concat([[-1], last], 0))
    return array_ops.reshape(tensor, [-1, last])


def _outer_shape(tensor):
    """The shape of ``tensor`` without its last dim, as a 1-D int32 tensor (static when known)."""
    outer = tensor.shape[:-1]
    if outer.is_fully_defined():
        return outer.as_list()
    return array_ops_slice.slice(array_ops.shape(tensor), [0], [tensor.shape.ndims - 1])


def _require_rank(tensor, what):
    if tensor.shape.ndims is None:
        raise ValueError(f"{what} needs inputs of known rank, got shape {tensor.shape}")


def softmax_cross_entropy_with_logits_v2(labels: TensorLike, logits: TensorLike, axis: TensorLike = None,
                                         name: str | None = None, dim: TensorLike = None) -> Tensor:
    """Per-example ``-sum(labels * log_softmax(logits), axis)``; gradients flow to both inputs.

    Args:
        labels: a probability distribution along ``axis``, same shape as ``logits`` (cast to its dtype).
        logits: unscaled log-probabilities of known rank; ``axis`` (default last) holds the classes.
    Returns:
        The loss, of logits' shape without ``axis``.
    Raises:
        InvalidArgumentError: the shapes differ (graph construction or run time).
        ValueError: logits of unknown rank.
    Source: ``tensorflow/python/ops/nn_ops.py``.
    """
    axis = axis if axis is not None else (dim if dim is not None else -1)
    with name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = math_ops.cast(convert_to_tensor(labels, name="labels"), logits.dtype.base_dtype)
        _require_rank(logits, "softmax_cross_entropy_with_logits")
        logits, labels = move_axis_to_end(logits, axis), move_axis_to_end(labels, axis)
        if logits.shape.ndims == 2:
            return apply_op("SoftmaxCrossEntropyWithLogits", [logits, labels], {}, scope).outputs[0]
        outer = logits.shape[:-1]
        flat_logits, flat_labels = _flatten_outer_dims(logits), _flatten_outer_dims(labels)
        cost = apply_op("SoftmaxCrossEntropyWithLogits", [flat_logits, flat_labels], {}, scope).outputs[0]
        cost = array_ops.reshape(cost, _outer_shape(logits))
        cost.set_shape(outer)
        return cost


def softmax_cross_entropy_with_logits(_sentinel: None = None, labels: TensorLike = None, logits: TensorLike = None,
                                      dim: TensorLike = -1, name: str | None = None) -> Tensor:
    """TF1's softmax cross-entropy: like the ``_v2`` version, but no gradient flows into ``labels``.

    Raises:
        ValueError: positional arguments, or labels/logits missing.
    Source: ``tensorflow/python/ops/nn_ops.py``.
    """
    ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "softmax_cross_entropy_with_logits_sg", [logits, labels]) as scope:
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=dim, name=scope)


@registry.RegisterShape("SoftmaxCrossEntropyWithLogits")
def _softmax_xent_shape(op):
    features, labels = op.inputs
    common_shapes.require_same_dtype(op)
    for tensor in (features, labels):
        if tensor.shape.ndims not in (None, 2):
            raise common_shapes.shape_error(op, f"Shape must be rank 2 but is rank {tensor.shape.ndims}")
    a = features.shape.as_list() if features.shape.ndims else [None, None]
    b = labels.shape.as_list() if labels.shape.ndims else [None, None]
    for x, y in zip(a, b):
        if x is not None and y is not None and x != y:
            raise common_shapes.shape_error(op, f"Dimensions must be equal, but are {x} and {y}")
    dims = [x if x is not None else y for x, y in zip(a, b)]
    dtype = features.dtype.base_dtype
    return [(dtype, TensorShape(dims[:1])), (dtype, TensorShape(dims))]


def _shape_str(array):
    return "[" + ",".join(map(str, array.shape)) + "]"


@registry.RegisterArrayKernel("SoftmaxCrossEntropyWithLogits")
def _softmax_xent_kernel(op, backend):
    xp, total = backend.xp, backend.reducer("sum")

    def compute(features, labels):
        if features.shape != labels.shape:
            raise errors.InvalidArgumentError(
                None, op, f"logits and labels must be same size: logits_size={_shape_str(features)} "
                f"labels_size={_shape_str(labels)}")
        log_probs = log_softmax_values(features, backend)
        with backend.quiet():  # 0 * -inf (a -inf logit): nan, silently (TF)
            loss = -total(labels * log_probs, axis=1)
        dtype = features.dtype
        return xp.astype(loss, dtype, copy=False), xp.astype(xp.exp(log_probs) - labels, dtype, copy=False)

    return compute


def _check_sparse_shapes(labels_shape, logits_shape):
    """TF's static checks of the sparse cross-entropy's inputs (ValueError with TF's wording)."""
    if logits_shape.ndims == 0:
        raise ValueError(f"Logits cannot be scalars - received shape {logits_shape}.")
    if logits_shape.ndims is None or labels_shape.ndims is None:
        return
    if labels_shape.ndims != logits_shape.ndims - 1:
        raise ValueError(f"Rank mismatch: Rank of labels (received {labels_shape.ndims}) should equal rank of "
                         f"logits minus 1 (received {logits_shape.ndims}).")
    if not labels_shape.is_compatible_with(logits_shape[:-1]):
        raise ValueError(f"Shape mismatch: The shape of labels (received {labels_shape}) should equal the shape "
                         f"of logits except for the last dimension (received {logits_shape}).")


def sparse_softmax_cross_entropy_with_logits(_sentinel: None = None, labels: TensorLike = None,
                                             logits: TensorLike = None, name: str | None = None) -> Tensor:
    """Per-example ``-log_softmax(logits)[label]`` for integer class ``labels`` (int32/int64).

    Args:
        labels: ``[d0, ..., dr-1]`` class indices in ``[0, num_classes)``.
        logits: ``[d0, ..., dr-1, num_classes]`` unscaled log-probabilities.
    Returns:
        The loss, with the shape of ``labels`` and the dtype of ``logits``.
    Raises:
        ValueError: positional arguments, scalar logits, or ranks/shapes that do not fit (TF's wording).
        InvalidArgumentError (at run time): a label outside ``[0, num_classes)``, e.g.
            ``Received a label value of 10 which is outside the valid range of [0, 10).  Label values: 1 10``.
    Source: ``tensorflow/python/ops/nn_ops.py``.
    """
    ensure_xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = convert_to_tensor(labels)
        logits = convert_to_tensor(logits)
        _check_sparse_shapes(labels.shape, logits.shape)
        op_name = name or "SparseSoftmaxCrossEntropyWithLogits"
        if logits.shape.ndims == 2:
            return apply_op("SparseSoftmaxCrossEntropyWithLogits", [logits, labels], {}, op_name).outputs[0]
        _require_rank(logits, "sparse_softmax_cross_entropy_with_logits")
        static_shape = labels.shape
        flat_logits = _flatten_outer_dims(logits)
        flat_labels = array_ops.reshape(labels, [-1])
        cost = apply_op("SparseSoftmaxCrossEntropyWithLogits", [flat_logits, flat_labels], {}, op_name).outputs[0]
        cost = array_ops.reshape(cost, array_ops.shape(labels))
        cost.set_shape(static_shape)
        return cost


@registry.RegisterShape("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_shape(op):
    features, labels = op.inputs
    if labels.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"Value passed to parameter 'labels' has DataType {labels.dtype.base_dtype.name} not in "
                        "list of allowed values: int32, int64")
    if features.shape.ndims not in (None, 2):
        raise common_shapes.shape_error(op, f"Shape must be rank 2 but is rank {features.shape.ndims}")
    if labels.shape.ndims not in (None, 1):
        raise common_shapes.shape_error(op, f"Shape must be rank 1 but is rank {labels.shape.ndims}")
    dims = features.shape.as_list() if features.shape.ndims else [None, None]
    batch = labels.shape.as_list()[0] if labels.shape.ndims else None
    if dims[0] is not None and batch is not None and dims[0] != batch:
        raise common_shapes.shape_error(op, f"Dimensions must be equal, but are {dims[0]} and {batch}")
    dims[0] = dims[0] if dims[0] is not None else batch
    dtype = features.dtype.base_dtype
    return [(dtype, TensorShape(dims[:1])), (dtype, TensorShape(dims))]


@registry.RegisterArrayKernel("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_kernel(op, backend):
    """``(loss, backprop)``: ``-log_softmax(features)[i, labels[i]]`` and ``softmax(features) - one_hot(labels)``,
    both of features' dtype (every step keeps it; no cast)."""
    xp, lowest, highest = backend.xp, backend.reducer("min"), backend.reducer("max")

    def compute(features, labels):
        if features.shape[0] != labels.shape[0]:
            raise errors.InvalidArgumentError(
                None, op, f"logits and labels must have the same first dimension, got logits shape "
                f"{_shape_str(features)} and labels shape {_shape_str(labels)}")
        num_classes = features.shape[1]
        low, high = (int(lowest(labels)), int(highest(labels))) if labels.shape[0] else (0, 0)
        if low < 0 or high >= num_classes:
            host = backend.to_host(labels)
            raise errors.InvalidArgumentError(
                None, op, f"Received a label value of {low if low < 0 else high} which is outside the valid range "
                f"of [0, {num_classes}).  Label values: {' '.join(str(v) for v in host.reshape(-1))}")
        log_probs = log_softmax_values(features, backend)
        backprop = backend.add_to_columns(xp.exp(log_probs), labels, -1)
        return -backend.take_columns(log_probs, labels), backprop

    return compute
