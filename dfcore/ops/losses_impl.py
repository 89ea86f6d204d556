"""``tf.losses``: weighted losses added to the ``LOSSES`` collection, TF1's way.

Source: ``tensorflow/python/ops/losses/losses_impl.py`` and ``losses/util.py``.
Each loss computes per-element losses, multiplies them by ``weights``
(broadcast), reduces them as ``reduction`` says (:class:`Reduction`), casts back
to the input dtype and adds the result to ``loss_collection``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..framework import dtypes
from ..framework.graph import GraphKeys
from ..framework.scopes import add_to_collection, get_collection, name_scope
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from . import array_ops, math_ops, nn_impl, nn_ops_xent

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = [
    "Reduction",
    "compute_weighted_loss",
    "add_loss",
    "get_losses",
    "get_regularization_losses",
    "get_regularization_loss",
    "get_total_loss",
    "absolute_difference",
    "mean_squared_error",
    "sigmoid_cross_entropy",
    "softmax_cross_entropy",
    "sparse_softmax_cross_entropy",
]

REGULARIZATION_LOSSES = GraphKeys.REGULARIZATION_LOSSES


class Reduction:
    """How a weighted loss is reduced to its result (TF1's keys)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE, cls.SUM_OVER_NONZERO_WEIGHTS,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key: str) -> None:
        """Raises ValueError ``Invalid Reduction Key <key>.`` for an unknown key."""
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


# -- collection helpers ------------------------------------------------------------
def add_loss(loss: Tensor, loss_collection: str | None = GraphKeys.LOSSES) -> None:
    """Add ``loss`` to ``loss_collection`` (nothing if the collection is None). Source: ``losses/util.py``."""
    if loss_collection:
        add_to_collection(loss_collection, loss)


def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES) -> list[Any]:
    """The losses in ``loss_collection`` whose names match ``scope``."""
    return get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list[Any]:
    """The tensors in the ``regularization_losses`` collection whose names match ``scope``."""
    return get_collection(REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope: str | None = None, name: str = "total_regularization_loss") -> Tensor:
    """The sum of the regularization losses, or a float32 zero if there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return convert_to_tensor(0.0, dtype=dtypes.float32, name=name)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope: str | None = None) -> Tensor:
    """``add_n`` of the ``LOSSES`` collection (plus regularization losses).

    Raises:
        ValueError: no losses to sum (from ``add_n``).
    """
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    return math_ops.add_n(losses, name=name)


# -- weighting and reduction -------------------------------------------------------
def _check_broadcastable(weights, losses):
    """Static version of TF's ``assert_broadcastable``: weights are a scalar, or of the losses'
    rank with each dim 1 or equal.

    Raises:
        ValueError: TF's ``weights can not be broadcast to values.`` message.
    """
    w, v = weights.shape, losses.shape
    if w.ndims in (None, 0) or v.ndims is None:
        return
    ok = w.ndims == v.ndims and all(a in (1, None) or b is None or a == b for a, b in zip(w.as_list(), v.as_list()))
    if not ok:
        raise ValueError(f"weights can not be broadcast to values. values.rank={v.ndims}. weights.rank={w.ndims}. "
                         f"values.shape={v}. weights.shape={w}.")


def _num_elements(losses):
    """The number of elements of ``losses`` as a float32 scalar."""
    with name_scope(None, "num_elements"):
        return math_ops.reduce_sum(array_ops.ones_like(losses, dtype=dtypes.float32))


def _num_present(losses, weights):
    """The number of elements of ``losses`` whose (broadcast) weight is nonzero, as float32."""
    if isinstance(weights, float) and weights != 0.0:
        return _num_elements(losses)
    with name_scope(None, "num_present"):
        weights = math_ops.cast(weights, dtypes.float32)
        present = math_ops.cast(math_ops.not_equal(weights, 0.0), dtypes.float32)
        present = math_ops.multiply(present, array_ops.ones_like(losses, dtype=dtypes.float32))
        return math_ops.reduce_sum(present)


def _safe_mean(total, count):
    """``total / count``, 0 where ``count`` is 0 (TF's ``div_no_nan``, built from elementwise ops)."""
    is_zero = math_ops.cast(math_ops.equal(count, 0.0), dtypes.float32)
    nonzero = math_ops.subtract(1.0, is_zero)
    return math_ops.multiply(math_ops.divide(total, math_ops.add(count, is_zero)), nonzero, name="value")


def compute_weighted_loss(losses: TensorLike, weights: TensorLike = 1.0, scope: str | None = None,
                          loss_collection: str = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """``losses * weights`` reduced by ``reduction``, in the dtype of ``losses``; added to ``loss_collection``.

    Raises:
        ValueError: an unknown reduction, or weights that cannot broadcast to losses.
    """
    Reduction.validate(reduction)
    with name_scope(scope, "weighted_loss", (losses, weights)):
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype.base_dtype
        raw_weights = weights
        losses = math_ops.cast(losses, dtypes.float32)
        weights = math_ops.cast(weights, dtypes.float32)
        _check_broadcastable(weights, losses)
        weighted_losses = math_ops.multiply(losses, weights)
        if reduction == Reduction.NONE:
            loss = weighted_losses
        else:
            loss = math_ops.reduce_sum(weighted_losses)
            if reduction == Reduction.MEAN:
                loss = _safe_mean(loss, math_ops.reduce_sum(math_ops.multiply(array_ops.ones_like(losses), weights)))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_mean(loss, _num_present(losses, raw_weights))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_mean(loss, _num_elements(losses))
        loss = math_ops.cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


# -- losses ------------------------------------------------------------------------
def _require(value, what):
    if value is None:
        raise ValueError(f"{what} must not be None.")


def _assert_compatible(a, b):
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"Shapes {a.shape} and {b.shape} are incompatible")


def _regression_loss(default_name, fn, labels, predictions, weights, scope, loss_collection, reduction):
    _require(labels, "labels")
    _require(predictions, "predictions")
    with name_scope(scope, default_name, (predictions, labels, weights)) as scope:
        predictions = math_ops.cast(predictions, dtypes.float32)
        labels = math_ops.cast(labels, dtypes.float32)
        _assert_compatible(predictions, labels)
        return compute_weighted_loss(fn(predictions, labels), weights, scope, loss_collection, reduction=reduction)


def mean_squared_error(labels: TensorLike, predictions: TensorLike, weights: TensorLike = 1.0, scope: str | None = None,
                       loss_collection: str = GraphKeys.LOSSES,
                       reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted ``(predictions - labels) ** 2``, reduced by ``reduction`` (float32 scalar by default).

    Raises:
        ValueError: labels or predictions None, or shapes that differ.
    Source: ``tensorflow/python/ops/losses/losses_impl.py``.
    """
    return _regression_loss("mean_squared_error", math_ops.squared_difference, labels, predictions, weights, scope,
                            loss_collection, reduction)


def absolute_difference(labels: TensorLike, predictions: TensorLike, weights: TensorLike = 1.0,
                        scope: str | None = None, loss_collection: str = GraphKeys.LOSSES,
                        reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted ``|predictions - labels|``, reduced by ``reduction``.

    Raises:
        ValueError: labels or predictions None, or shapes that differ.
    Source: ``tensorflow/python/ops/losses/losses_impl.py``.
    """
    return _regression_loss("absolute_difference", lambda p, y: math_ops.abs(math_ops.subtract(p, y)), labels,
                            predictions, weights, scope, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels: TensorLike, logits: TensorLike, weights: TensorLike = 1.0,
                          label_smoothing: float = 0, scope: str | None = None, loss_collection: str = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted ``sigmoid_cross_entropy_with_logits``; labels smoothed toward 1/2 by ``label_smoothing``.

    Raises:
        ValueError: an input None, or shapes that differ.
    Source: ``tensorflow/python/ops/losses/losses_impl.py``.
    """
    _require(multi_class_labels, "multi_class_labels")
    _require(logits, "logits")
    with name_scope(scope, "sigmoid_cross_entropy_loss", (logits, multi_class_labels, weights)) as scope:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(multi_class_labels, logits.dtype.base_dtype)
        _assert_compatible(logits, labels)
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = nn_impl.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)


def softmax_cross_entropy(onehot_labels: TensorLike, logits: TensorLike, weights: TensorLike = 1.0,
                          label_smoothing: float = 0, scope: str | None = None, loss_collection: str = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted ``softmax_cross_entropy_with_logits_v2`` per example (no gradient into the labels).

    ``label_smoothing`` mixes the one-hot labels with ``1/num_classes``.
    Raises:
        ValueError: an input None, shapes that differ, or smoothing with an unknown class count.
    Source: ``tensorflow/python/ops/losses/losses_impl.py``.
    """
    _require(onehot_labels, "onehot_labels")
    _require(logits, "logits")
    with name_scope(scope, "softmax_cross_entropy_loss", (logits, onehot_labels, weights)) as scope:
        logits = convert_to_tensor(logits)
        onehot_labels = math_ops.cast(onehot_labels, logits.dtype.base_dtype)
        _assert_compatible(logits, onehot_labels)
        if label_smoothing > 0:
            num_classes = logits.shape.merge_with(onehot_labels.shape).as_list()[-1]
            if num_classes is None:
                raise ValueError("label_smoothing needs a known number of classes")
            onehot_labels = onehot_labels * (1.0 - label_smoothing) + label_smoothing / num_classes
        onehot_labels = array_ops.stop_gradient(onehot_labels, name="labels_stop_gradient")
        losses = nn_ops_xent.softmax_cross_entropy_with_logits_v2(labels=onehot_labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)


def _squeeze_last(tensor, rank):
    """``tensor`` without its last dim if that dim is 1 and its rank is ``rank`` + 1."""
    dims = tensor.shape.as_list() if tensor.shape.ndims is not None else None
    if dims is None or len(dims) != rank + 1 or dims[-1] != 1 or dims[:-1].count(None) > 1:
        return tensor
    return array_ops.reshape(tensor, [-1 if d is None else d for d in dims[:-1]])


def sparse_softmax_cross_entropy(labels: TensorLike, logits: TensorLike, weights: TensorLike = 1.0,
                                 scope: str | None = None, loss_collection: str = GraphKeys.LOSSES,
                                 reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted ``sparse_softmax_cross_entropy_with_logits``; ``labels`` of shape ``[batch, 1]`` are squeezed.

    Raises:
        ValueError: an input None, or ranks/shapes that do not fit.
        InvalidArgumentError (at run time): a label outside ``[0, num_classes)``.
    Source: ``tensorflow/python/ops/losses/losses_impl.py``.
    """
    _require(labels, "labels")
    _require(logits, "logits")
    with name_scope(scope, "sparse_softmax_cross_entropy_loss", (logits, labels, weights)) as scope:
        logits = convert_to_tensor(logits)
        labels = convert_to_tensor(labels)
        if logits.shape.ndims is not None:
            labels = _squeeze_last(labels, logits.shape.ndims - 1)
            if isinstance(weights, Tensor):
                weights = _squeeze_last(weights, logits.shape.ndims - 1)
        losses = nn_ops_xent.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)
