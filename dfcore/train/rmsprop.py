"""``RMSPropOptimizer``: gradients divided by a running root mean square (Hinton's lecture 6e), with momentum.

Source: ``tensorflow/python/training/rmsprop.py``. Slots per variable, in this order:
``"rms"`` (initialized to ones), ``"mg"`` (zeros, only if ``centered``) and ``"momentum"``
(zeros), named ``<var>/RMSProp``, ``<var>/RMSProp_1``, … Updates use ``ApplyRMSProp``,
or ``ApplyCenteredRMSProp`` (the mean gradient ``mg`` subtracted from the variance) if centered.
"""

from ..ops import init_ops
from ..ops.training_ops_adaptive import apply_centered_rms_prop, apply_rms_prop
from .optimizer import Hyperparameter, Optimizer


class RMSPropOptimizer(Optimizer):
    """RMSProp; ``learning_rate``, ``decay``, ``momentum`` and ``epsilon`` may be floats, Tensors or callables.

    ``ms = decay * ms + (1 - decay) * grad²``; ``mom = momentum * mom + lr * grad / sqrt(ms + epsilon)``;
    ``var -= mom``.
    """

    def __init__(self, learning_rate: Hyperparameter, decay: Hyperparameter = 0.9, momentum: Hyperparameter = 0.0,
                 epsilon: Hyperparameter = 1e-10, use_locking: bool = False, centered: bool = False,
                 name: str = "RMSProp"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered

    def _create_slots(self, var_list):
        for var in var_list:
            dtype = var.dtype.base_dtype
            self._get_or_make_slot_with_initializer(var, init_ops.Ones(dtype), var.shape, dtype, "rms", self._name)
            if self._centered:
                self._zeros_slot(var, "mg", self._name)
            self._zeros_slot(var, "momentum", self._name)

    def _prepare(self):
        self._prepare_hyper(learning_rate=self._learning_rate, decay=self._decay, momentum=self._momentum,
                            epsilon=self._epsilon)

    def _apply_dense(self, grad, var):
        lr, decay, momentum, epsilon = (self._hyper(name, var) for name in ("learning_rate", "decay", "momentum",
                                                                            "epsilon"))
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return apply_centered_rms_prop(var, self.get_slot(var, "mg"), rms, mom, lr, decay, momentum, epsilon, grad,
                                           use_locking=self._use_locking).op
        return apply_rms_prop(var, rms, mom, lr, decay, momentum, epsilon, grad, use_locking=self._use_locking).op
