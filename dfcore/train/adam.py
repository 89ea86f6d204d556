"""``AdamOptimizer``: Adam with TF1's bias correction through ``beta1_power``/``beta2_power``.

Source: ``tensorflow/python/training/adam.py``. Slots ``"m"`` and ``"v"``
(``<var>/Adam`` and ``<var>/Adam_1``); non-slot variables ``beta1_power`` and
``beta2_power`` (initialized to ``beta1``/``beta2``, colocated with the
first variable by name) are multiplied by ``beta1``/``beta2`` after every
step's updates, so step ``t`` uses ``beta^t``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..framework.graph import get_default_graph, init_scope_graph
from ..framework.tensor_conversion import convert_to_tensor
from ..ops import control_flow_ops, math_ops, state_ops, training_ops
from .optimizer import Optimizer

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba); hyperparameters may be floats, Tensors or callables."""

    def __init__(self, learning_rate: TensorLike = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-08, use_locking: bool = False, name: str = "Adam"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon
        self._lr_t = self._beta1_t = self._beta2_t = self._epsilon_t = None

    def _get_beta_accumulators(self):
        graph = init_scope_graph()  # in a tf.function being traced: the eager context's, where they were made
        return self._get_non_slot_variable("beta1_power", graph), self._get_non_slot_variable("beta2_power", graph)

    def _create_slots(self, var_list):
        first_var = min(var_list, key=lambda x: x.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var)
        self._create_non_slot_variable(self._beta2, "beta2_power", first_var)
        for var in var_list:
            self._zeros_slot(var, "m", self._name)
            self._zeros_slot(var, "v", self._name)

    def _prepare(self):
        self._lr_t = convert_to_tensor(self._call_if_callable(self._lr), name="learning_rate")
        self._beta1_t = convert_to_tensor(self._call_if_callable(self._beta1), name="beta1")
        self._beta2_t = convert_to_tensor(self._call_if_callable(self._beta2), name="beta2")
        self._epsilon_t = convert_to_tensor(self._call_if_callable(self._epsilon), name="epsilon")

    def _apply_dense(self, grad, var):
        dtype = var.dtype.base_dtype
        beta1_power, beta2_power = self._get_beta_accumulators()
        return training_ops.apply_adam(
            var, self.get_slot(var, "m"), self.get_slot(var, "v"), math_ops.cast(beta1_power, dtype),
            math_ops.cast(beta2_power, dtype), math_ops.cast(self._lr_t, dtype), math_ops.cast(self._beta1_t, dtype),
            math_ops.cast(self._beta2_t, dtype), math_ops.cast(self._epsilon_t, dtype), grad,
            use_locking=self._use_locking).op

    def _finish(self, update_ops, name_scope):
        """After the updates: ``beta1_power *= beta1``, ``beta2_power *= beta2``; group all."""
        beta1_power, beta2_power = self._get_beta_accumulators()
        graph = get_default_graph()  # the updates' graph (a traced function's, when the accumulators are eager)
        with graph.control_dependencies(update_ops), graph.colocate_with(beta1_power.op):
            update_beta1 = state_ops.assign(beta1_power, math_ops.multiply(beta1_power, self._beta1_t),
                                            use_locking=self._use_locking)
            update_beta2 = state_ops.assign(beta2_power, math_ops.multiply(beta2_power, self._beta2_t),
                                            use_locking=self._use_locking)
        return control_flow_ops.group(*update_ops + [update_beta1, update_beta2], name=name_scope)
