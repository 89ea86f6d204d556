"""``FtrlOptimizer``: FTRL-proximal (McMahan et al., "Ad Click Prediction", KDD 2013) with L1, L2 and
L2-shrinkage regularization.

Source: ``tensorflow/python/training/ftrl.py`` (TF 1.15). Slots per variable: ``"accum"``
(initialized to ``initial_accumulator_value``, named ``<var>/<accum_name or name>``) and
``"linear"`` (zeros, ``<var>/<linear_name or name>``, made unique: ``w/Ftrl_1``). Updates use
``ApplyFtrl``, or ``ApplyFtrlV2`` when ``l2_shrinkage_regularization_strength`` > 0.
"""

from ..ops import init_ops
from ..ops.training_ops_adaptive import apply_ftrl, apply_ftrl_v2
from .optimizer import Hyperparameter, Optimizer


class FtrlOptimizer(Optimizer):
    """FTRL-proximal; ``learning_rate`` may be a float, a Tensor or a callable.

    Raises:
        ValueError: a negative ``initial_accumulator_value`` or regularization strength, or a positive
            ``learning_rate_power`` (TF's wording).
    """

    def __init__(self, learning_rate: Hyperparameter, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False, name: str = "Ftrl",
                 accum_name: str | None = None, linear_name: str | None = None,
                 l2_shrinkage_regularization_strength: float = 0.0):
        super().__init__(use_locking, name)
        if initial_accumulator_value < 0.0:
            raise ValueError(f"initial_accumulator_value {initial_accumulator_value:f} needs to be positive or zero")
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power {learning_rate_power:f} needs to be negative or zero")
        for label, value in (("l1_regularization_strength", l1_regularization_strength),
                             ("l2_regularization_strength", l2_regularization_strength),
                             ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength)):
            if value < 0.0:
                raise ValueError(f"{label} {value:f} needs to be positive or zero")
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._accum_name = accum_name
        self._linear_name = linear_name

    def _create_slots(self, var_list):
        for var in var_list:
            dtype = var.dtype.base_dtype
            init = init_ops.Constant(self._initial_accumulator_value, dtype=dtype)
            self._get_or_make_slot_with_initializer(var, init, var.shape, dtype, "accum",
                                                    self._accum_name or self._name)
            self._zeros_slot(var, "linear", self._linear_name or self._name)

    def _prepare(self):
        self._prepare_hyper(learning_rate=self._learning_rate, l1_regularization_strength=self._l1,
                            l2_regularization_strength=self._l2,
                            l2_shrinkage_regularization_strength=self._l2_shrinkage,
                            learning_rate_power=self._learning_rate_power)

    def _apply_dense(self, grad, var):
        lr, l1, l2, shrinkage, power = (self._hyper(name, var) for name in (
            "learning_rate", "l1_regularization_strength", "l2_regularization_strength",
            "l2_shrinkage_regularization_strength", "learning_rate_power"))
        accum, linear = self.get_slot(var, "accum"), self.get_slot(var, "linear")
        if self._l2_shrinkage <= 0.0:
            return apply_ftrl(var, accum, linear, grad, lr, l1, l2, power, use_locking=self._use_locking).op
        return apply_ftrl_v2(var, accum, linear, grad, lr, l1, l2, shrinkage, power,
                             use_locking=self._use_locking).op
