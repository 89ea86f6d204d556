"""``AdagradOptimizer``: ``accum += grad²; var -= lr * grad / sqrt(accum)`` (Duchi et al. 2011).

Source: ``tensorflow/python/training/adagrad.py``. One slot per variable,
``"accumulator"`` (``<var>/Adagrad``), initialized to ``initial_accumulator_value``.
"""

from ..ops import init_ops
from ..ops.training_ops_adaptive import apply_adagrad
from .optimizer import Hyperparameter, Optimizer


class AdagradOptimizer(Optimizer):
    """Adagrad; ``learning_rate`` may be a float, a Tensor or a callable.

    Raises:
        ValueError: ``initial_accumulator_value`` ≤ 0 (TF's wording).
    """

    def __init__(self, learning_rate: Hyperparameter, initial_accumulator_value: float = 0.1, use_locking: bool = False,
                 name: str = "Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list):
        for var in var_list:
            dtype = var.dtype.base_dtype
            init = init_ops.Constant(self._initial_accumulator_value, dtype=dtype)
            self._get_or_make_slot_with_initializer(var, init, var.shape, dtype, "accumulator", self._name)

    def _prepare(self):
        self._prepare_hyper(learning_rate=self._learning_rate)

    def _apply_dense(self, grad, var):
        return apply_adagrad(var, self.get_slot(var, "accumulator"), self._hyper("learning_rate", var), grad,
                             use_locking=self._use_locking).op
