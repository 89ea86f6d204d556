"""``MomentumOptimizer``: ``accum = momentum * accum + grad; var -= lr * accum`` (or Nesterov).

Source: ``tensorflow/python/training/momentum.py``. One zeros slot per
variable, ``"momentum"``, named ``<var>/<name>`` (``w/Momentum``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..framework.tensor_conversion import convert_to_tensor
from ..ops import math_ops, training_ops
from .optimizer import Optimizer

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike


class MomentumOptimizer(Optimizer):
    """Momentum SGD; ``learning_rate`` and ``momentum`` may be floats, Tensors or callables.

    With ``use_nesterov=True`` the update is
    ``var -= lr * grad + lr * momentum * accum`` (accum already updated), TF's form.
    """

    def __init__(self, learning_rate: TensorLike, momentum: TensorLike, use_locking: bool = False,
                 name: str = "Momentum", use_nesterov: bool = False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov
        self._learning_rate_tensor = None
        self._momentum_tensor = None

    def _create_slots(self, var_list):
        for var in var_list:
            self._zeros_slot(var, "momentum", self._name)

    def _prepare(self):
        self._learning_rate_tensor = convert_to_tensor(self._call_if_callable(self._learning_rate),
                                                       name="learning_rate")
        self._momentum_tensor = convert_to_tensor(self._call_if_callable(self._momentum), name="momentum")

    def _apply_dense(self, grad, var):
        dtype = var.dtype.base_dtype
        return training_ops.apply_momentum(
            var, self.get_slot(var, "momentum"), math_ops.cast(self._learning_rate_tensor, dtype), grad,
            math_ops.cast(self._momentum_tensor, dtype), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov).op
