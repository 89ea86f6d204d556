"""``AdadeltaOptimizer``: steps scaled by the ratio of running RMS of updates and of gradients (Zeiler 2012).

Source: ``tensorflow/python/training/adadelta.py``. Two zeros slots per variable,
``"accum"`` and ``"accum_update"`` (``<var>/Adadelta`` and ``<var>/Adadelta_1``).
"""

from ..ops.training_ops_adaptive import apply_adadelta
from .optimizer import Hyperparameter, Optimizer


class AdadeltaOptimizer(Optimizer):
    """Adadelta; ``learning_rate``, ``rho`` and ``epsilon`` may be floats, Tensors or callables."""

    def __init__(self, learning_rate: Hyperparameter = 0.001, rho: Hyperparameter = 0.95,
                 epsilon: Hyperparameter = 1e-08, use_locking: bool = False, name: str = "Adadelta"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._rho = rho
        self._epsilon = epsilon

    def _create_slots(self, var_list):
        for var in var_list:
            self._zeros_slot(var, "accum", self._name)
            self._zeros_slot(var, "accum_update", self._name)

    def _prepare(self):
        self._prepare_hyper(lr=self._lr, rho=self._rho, epsilon=self._epsilon)

    def _apply_dense(self, grad, var):
        return apply_adadelta(var, self.get_slot(var, "accum"), self.get_slot(var, "accum_update"),
                              self._hyper("lr", var), self._hyper("rho", var), self._hyper("epsilon", var), grad,
                              use_locking=self._use_locking).op
