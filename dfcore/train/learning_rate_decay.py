"""Learning-rate schedules of TF 1.x: ``exponential_decay``, ``piecewise_constant``, ``polynomial_decay``.

Source: ``tensorflow/python/training/learning_rate_decay.py`` (TF 1.x), whose graph-mode
functions build the ops of ``keras/optimizer_v2/learning_rate_schedule.py``: each returns a
scalar Tensor computed from the global step every time it is evaluated, so it can be passed as
an optimizer's ``learning_rate``. Where TF builds ``tf.cond``/``tf.case`` (dfcore has no
functional conditionals), the same values come from ops without branches (see each function).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..framework import dtypes
from ..framework.scopes import name_scope
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..ops import array_ops_gather, array_ops_join, math_ops

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike


def _require_global_step(global_step, function):
    if global_step is None:
        raise ValueError(f"global_step is required for {function}.")


def exponential_decay(learning_rate: TensorLike, global_step: TensorLike, decay_steps: TensorLike,
                      decay_rate: TensorLike, staircase: bool = False, name: str | None = None) -> Tensor:
    """``learning_rate * decay_rate ** (global_step / decay_steps)``; with ``staircase`` the exponent is floored.

    Args:
        learning_rate: a float scalar (or scalar Tensor): the rate at step 0; its dtype is the result's.
        global_step: an integer scalar Tensor or Variable (``tf.train.get_or_create_global_step()``).
        decay_steps, decay_rate: scalars, cast to ``learning_rate``'s dtype.
    Returns:
        A scalar Tensor named after the ``ExponentialDecay`` scope (or ``name``).
    Raises:
        ValueError: ``global_step`` is None (TF's wording).
    Source: ``tensorflow/python/training/learning_rate_decay.py`` (``exponential_decay``).
    """
    _require_global_step(global_step, "exponential_decay")
    with name_scope(name, "ExponentialDecay", [learning_rate, global_step, decay_steps, decay_rate]) as scope:
        learning_rate = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = learning_rate.dtype.base_dtype
        p = math_ops.truediv(math_ops.cast(global_step, dtype), math_ops.cast(decay_steps, dtype))
        if staircase:
            p = math_ops.floor(p)
        return math_ops.multiply(learning_rate, math_ops.pow(math_ops.cast(decay_rate, dtype), p), name=scope)


def polynomial_decay(learning_rate: TensorLike, global_step: TensorLike, decay_steps: TensorLike,
                     end_learning_rate: TensorLike = 0.0001, power: TensorLike = 1.0, cycle: bool = False,
                     name: str | None = None) -> Tensor:
    """``(learning_rate - end_learning_rate) * (1 - step / decay_steps) ** power + end_learning_rate``.

    Without ``cycle`` the step is clipped at ``decay_steps`` (the rate stays at ``end_learning_rate``);
    with ``cycle`` ``decay_steps`` is multiplied by ``ceil(step / decay_steps)`` (1 at step 0), so the
    schedule restarts. TF builds that multiplier with ``tf.cond(step == 0, 1, ceil(...))``; here it is
    ``maximum(ceil(step / decay_steps), 1)``, equal for every step ≥ 0.

    Returns:
        A scalar Tensor of ``learning_rate``'s dtype named after the ``PolynomialDecay`` scope (or ``name``).
    Raises:
        ValueError: ``global_step`` is None (TF's wording).
    Source: ``tensorflow/python/training/learning_rate_decay.py`` (``polynomial_decay``).
    """
    _require_global_step(global_step, "polynomial_decay")
    with name_scope(name, "PolynomialDecay", [learning_rate, global_step, decay_steps, end_learning_rate,
                                              power]) as scope:
        learning_rate = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = learning_rate.dtype.base_dtype
        end_learning_rate = math_ops.cast(end_learning_rate, dtype)
        power = math_ops.cast(power, dtype)
        step = math_ops.cast(global_step, dtype)
        steps = math_ops.cast(decay_steps, dtype)
        if cycle:
            multiplier = math_ops.maximum(math_ops.ceil(math_ops.truediv(step, steps)), math_ops.cast(1, dtype))
            steps = math_ops.multiply(steps, multiplier)
        else:
            step = math_ops.minimum(step, steps)
        p = math_ops.truediv(step, steps)
        decayed = math_ops.multiply(learning_rate - end_learning_rate, math_ops.pow(1 - p, power))
        return math_ops.add(decayed, end_learning_rate, name=scope)


def piecewise_constant(x: TensorLike, boundaries: Sequence[Any], values: Sequence[Any],
                       name: str | None = None) -> Tensor:
    """``values[0]`` while ``x <= boundaries[0]``, ``values[i]`` for ``boundaries[i-1] < x <= boundaries[i]``,
    ``values[-1]`` once ``x > boundaries[-1]``.

    Args:
        x: a scalar Tensor (usually the global step). boundaries: increasing scalars of ``x``'s dtype
            (int32 boundaries are promoted for an int64 ``x``, as in TF). values: one more scalar than
            ``boundaries``, all of one dtype.
    Returns:
        A scalar Tensor of the values' dtype. TF selects with ``tf.case``; here the index of the interval,
        ``sum(x > boundaries)``, gathers from the stacked values (same result, no branches).
    Raises:
        ValueError: the lengths do not match, a boundary's dtype differs from ``x``'s, or the values'
            dtypes differ (TF's wording).
    Source: ``tensorflow/python/training/learning_rate_decay.py`` (``piecewise_constant``).
    """
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with name_scope(name, "PiecewiseConstant", [x]) as scope:
        x = convert_to_tensor(x)
        boundaries = [_boundary(convert_to_tensor(b), x.dtype.base_dtype) for b in boundaries]
        values = [convert_to_tensor(v) for v in values]
        for v in values[1:]:
            if v.dtype.base_dtype != values[0].dtype.base_dtype:
                raise ValueError("Values must have elements all with the same dtype "
                                 f"({values[0].dtype.base_dtype} vs {v.dtype.base_dtype}).")
        above = [math_ops.cast(math_ops.greater(x, b), dtypes.int32) for b in boundaries]
        index = math_ops.add_n(above, name="interval")
        return array_ops_gather.gather(array_ops_join.stack(values), index, name=scope)


def _boundary(b, x_dtype):
    """``b`` in ``x``'s dtype: an int32 boundary is cast for an int64 ``x``; any other mismatch raises."""
    if b.dtype.base_dtype == x_dtype:
        return b
    if b.dtype.base_dtype == dtypes.int32 and x_dtype == dtypes.int64:
        return math_ops.cast(b, x_dtype)
    raise ValueError(f"Boundaries ({b.dtype.base_dtype}) must have the same dtype as x ({x_dtype}).")


#: TF 1.x's other name for :func:`piecewise_constant`.
piecewise_constant_decay = piecewise_constant
