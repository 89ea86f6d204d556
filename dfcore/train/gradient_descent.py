"""``GradientDescentOptimizer``: ``var -= learning_rate * grad``.

Source: ``tensorflow/python/training/gradient_descent.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..framework.tensor_conversion import convert_to_tensor
from ..ops import math_ops, training_ops
from .optimizer import Optimizer

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent; ``learning_rate`` may be a float, a Tensor (placeholder) or a callable.

    Ops: ``<name>/learning_rate`` and ``<name>/update_<var>/ApplyGradientDescent``.
    """

    def __init__(self, learning_rate: TensorLike, use_locking: bool = False, name: str = "GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_tensor = None

    def _prepare(self):
        learning_rate = self._call_if_callable(self._learning_rate)
        self._learning_rate_tensor = convert_to_tensor(learning_rate, name="learning_rate")

    def _apply_dense(self, grad, var):
        lr = math_ops.cast(self._learning_rate_tensor, var.dtype.base_dtype)
        return training_ops.apply_gradient_descent(var, lr, grad, use_locking=self._use_locking).op
