"""Clipping by norm: ``tf.clip_by_norm``, ``tf.global_norm`` and ``tf.clip_by_global_norm``
(``tf.clip_by_value`` lives in :mod:`dfcore.ops.math_ops` and is re-exported here).

Source: ``tensorflow/python/ops/clip_ops.py`` (TF 1.15). All are composites of existing ops, so
their gradients come from those ops. dfcore has no ``IndexedSlices``: every value is a dense Tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..framework.scopes import colocate_with, name_scope
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from . import array_ops, array_ops_join, array_ops_where, constant_op, math_ops
from .math_ops import clip_by_value
from .nn_ops import l2_loss

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = ["clip_by_value", "clip_by_norm", "global_norm", "clip_by_global_norm"]


def clip_by_norm(t: TensorLike, clip_norm: TensorLike, axes: TensorLike = None, name: str | None = None) -> Tensor:
    """``t * clip_norm / max(l2norm(t, axes), clip_norm)``: ``t`` rescaled so that its L2 norm over ``axes``
    (all axes if None) is at most ``clip_norm`` (a positive scalar, or a tensor broadcasting to ``t``).

    Returns a tensor of t's shape and dtype; an all-zero ``t`` stays zero with a zero (not NaN) gradient.
    Raises:
        ValueError: ``clip_norm`` would broadcast ``t`` to a larger shape.
    Source: ``tensorflow/python/ops/clip_ops.py``.
    """
    with name_scope(name, "clip_by_norm", [t, clip_norm]) as scope:
        t = convert_to_tensor(t, name="t")
        l2sum = math_ops.reduce_sum(math_ops.multiply(t, t), axes, keepdims=True)
        pred = math_ops.greater(l2sum, 0)
        l2sum_safe = array_ops_where.where(pred, l2sum, array_ops.ones_like(l2sum))  # no NaN gradient at 0
        l2norm = array_ops_where.where(pred, math_ops.sqrt(l2sum_safe), l2sum)
        intermediate = math_ops.multiply(t, clip_norm)
        t.shape.merge_with(intermediate.shape)
        return array_ops.identity(math_ops.truediv(intermediate, math_ops.maximum(l2norm, clip_norm)), name=scope)


def _check_sequence(t_list: Any) -> list[Any]:
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError("t_list should be a sequence")
    return list(t_list)


def _converted(t_list):
    """``t_list`` as Tensors named ``t_<i>`` (None entries stay None)."""
    return [convert_to_tensor(t, name=f"t_{i}") if t is not None else None for i, t in enumerate(t_list)]


def global_norm(t_list: Sequence[TensorLike | None], name: str | None = None) -> Tensor:
    """``sqrt(sum(l2norm(t) ** 2 for t in t_list))`` as a scalar of the tensors' dtype; None entries are
    ignored. Each ``L2Loss`` is placed with its tensor.

    Raises:
        TypeError: ``t_list`` is not a sequence (TF's wording).
    Source: ``tensorflow/python/ops/clip_ops.py``.
    """
    t_list = _check_sequence(t_list)
    with name_scope(name, "global_norm", t_list):
        half_squared_norms = []
        for value in _converted(t_list):
            if value is not None:
                with colocate_with(value):
                    half_squared_norms.append(l2_loss(value))
        half_squared_norm = math_ops.reduce_sum(array_ops_join.stack(half_squared_norms))
        two = constant_op.constant(2.0, dtype=half_squared_norm.dtype.base_dtype)
        return math_ops.sqrt(math_ops.multiply(half_squared_norm, two), name="global_norm")


def clip_by_global_norm(t_list: Sequence[TensorLike | None], clip_norm: TensorLike, use_norm: TensorLike = None,
                        name: str | None = None) -> tuple:
    """``(list_clipped, global_norm)``: every ``t * clip_norm / max(global_norm, clip_norm)``, with the global
    norm of :func:`global_norm` (or ``use_norm``); None entries stay None. A non-finite norm makes every
    clipped value NaN, as in TF 1.15.

    Each clipped tensor is an ``Identity`` named ``<scope>_<i>`` placed with its input.
    Raises:
        TypeError: ``t_list`` is not a sequence (TF's wording).
    Source: ``tensorflow/python/ops/clip_ops.py``.
    """
    t_list = _check_sequence(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with name_scope(name, "clip_by_global_norm", t_list + [clip_norm]) as scope:
        one = constant_op.constant(1.0, dtype=use_norm.dtype.base_dtype)
        scale_for_finite = math_ops.multiply(
            clip_norm, math_ops.minimum(math_ops.truediv(1.0, use_norm), math_ops.truediv(one, clip_norm)))
        scale = math_ops.add(scale_for_finite, math_ops.subtract(use_norm, use_norm))  # NaN if use_norm is not finite
        clipped: list[Tensor | None] = []
        for i, value in enumerate(_converted(t_list)):
            if value is None:
                clipped.append(None)
                continue
            with colocate_with(value):
                clipped.append(array_ops.identity(math_ops.multiply(value, scale), name=f"{scope}_{i}"))
        return clipped, use_norm
