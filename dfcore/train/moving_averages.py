"""``ExponentialMovingAverage``: shadow variables tracking decayed averages.

Source: ``tensorflow/python/training/moving_averages.py``. ``apply(var_list)``
creates, per variable ``v``, a non-trainable shadow ``v/ExponentialMovingAverage``
(colocated with ``v``, initialized to ``v``'s initial value, or to zeros for a
Tensor), adds ``v`` to ``MOVING_AVERAGE_VARIABLES``, and returns one op
updating every shadow: ``shadow -= (1 - decay) * (shadow - v)``, computed on the caller's
device and assigned on the shadow's, grouped by ``tf.group`` (one ``NoOp`` on the shadows'
device when they share one). With ``num_updates`` the decay is
``min(decay, (1 + num_updates) / (10 + num_updates))``, on the caller's device.
"""

from ..framework import dtypes
from ..framework.graph import GraphKeys, get_default_graph, graph_of
from ..framework.tensor_conversion import convert_to_tensor
from ..ops import control_flow_ops, math_ops, state_ops, variables
from . import slot_creator


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """Stage ``variable -= (variable - value) * (1 - decay)``; returns the update's output.

    Placement as TF's graph mode (the default strategy's ``update`` runs the update in the caller's
    device scope): ``1 - decay``, the ``Sub`` and the ``Mul`` follow the caller's device scope; only
    the ``AssignSub`` is colocated with ``variable`` (TF colocates an op writing a ref with its variable;
    TF 1.15's default strategy colocated the whole update, TF 2's graph mode does not). With ``zero_debias``
    ``variable`` is instead assigned ``biased / (1 - decay^t)``, ``biased`` being the same
    average started at zero and ``t`` a count of updates (variables ``<variable>/biased`` and
    ``<variable>/local_step``, colocated with it). A Variable ``value`` is read here,
    inside the caller's control dependencies and colocated with it, where TF's snapshot
    ``<value>/read`` lives: under ``with control_dependencies([train_op])`` the average sees
    the trained value (TF gets this from its in-place buffers; dfcore's buffers are immutable).
    Source: TF ``moving_averages.assign_moving_average``.
    """
    graph = graph_of([variable, value, decay])
    with graph.as_default(), graph.name_scope(name or "AssignMovingAvg") as scope:
        decay = convert_to_tensor(1.0 - decay, name="decay")
        if decay.dtype.base_dtype is not variable.dtype.base_dtype:
            decay = math_ops.cast(decay, variable.dtype.base_dtype)
        if isinstance(value, variables.Variable):
            with graph.colocate_with(value.op):
                value = value.read_value()
        if zero_debias:
            return _zero_debias(variable, value, decay, scope)
        update_delta = (variable - value) * decay
        with graph.colocate_with(variable.op):  # TF's graph colocates an op that writes a ref with its variable
            return state_ops.assign_sub(variable, update_delta, name=scope)


def _zero_debias(unbiased_var, value, one_minus_decay, scope):
    """Assign ``unbiased_var`` the debiased average ``biased / (1 - decay^t)`` (TF 1.15's ``_zero_debias``)."""
    graph = unbiased_var.graph
    dtype = unbiased_var.dtype.base_dtype
    biased = slot_creator.create_zeros_slot(unbiased_var, "biased")
    local_step = slot_creator.create_slot(
        unbiased_var, lambda: convert_to_tensor(0, dtype=dtype, name="zeros"), "local_step")
    biased_delta = (biased - value) * one_minus_decay
    one = convert_to_tensor(1, dtype=dtype)
    with graph.colocate_with(unbiased_var.op):  # the writes of refs, with their variables (as TF's graph)
        update_biased = state_ops.assign_sub(biased, biased_delta)
        update_local_step = local_step.assign_add(one)
    bias_factor = 1 - math_ops.pow(1.0 - one_minus_decay, update_local_step)
    unbiased = update_biased / bias_factor
    with graph.colocate_with(unbiased_var.op):
        return state_ops.assign(unbiased_var, unbiased, name=scope)


class ExponentialMovingAverage:
    """Maintain moving averages of variables (or tensors) with exponential decay.

    Args:
        decay: a float or scalar Tensor, typically close to 1 (0.999).
        num_updates: optional step count (e.g. the global step) making early decay smaller.
        zero_debias: correct the zero initialization of averages of Tensors (not Variables).
        name: suffix of the shadow variables and name scope of the ops.
    """

    def __init__(self, decay, num_updates=None, zero_debias=False, name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages = {}

    @property
    def name(self):
        return self._name

    def apply(self, var_list=None):
        """Create shadows for ``var_list`` (default: trainable variables); return the update op.

        Variables (those of ``var_list`` and a ``num_updates`` variable) are read inside the caller's
        control dependencies: under ``control_dependencies([apply_gradient_op])`` the averages and the
        decay see the step's updated weights and global step (TF sees them through its in-place buffers).
        Source: TF ``moving_averages.ExponentialMovingAverage.apply``.

        Raises:
            TypeError: a variable is not half, float or double (TF's wording).
            ValueError: an average was already computed for a variable (TF's wording).
        """
        if var_list is None:
            var_list = variables.trainable_variables()
        var_list = list(var_list)
        zero_debias_true = set()
        for var in var_list:
            if var.dtype.base_dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
            if var in self._averages:
                raise ValueError(f"Moving average already computed for: {var.name}")
            if isinstance(var, variables.Variable):
                avg = slot_creator.create_slot(var, var.initialized_value, self._name)
                var.graph.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
            else:
                avg = slot_creator.create_zeros_slot(
                    var, self._name, colocate_with_primary=var.op.type in ("Variable", "VariableV2"))
                if self._zero_debias:
                    zero_debias_true.add(avg)
            self._averages[var] = avg
        graph = graph_of(var_list)
        with graph.as_default(), graph.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                num_updates = self._num_updates
                if isinstance(num_updates, variables.Variable):  # read here, as assign_moving_average reads var
                    num_updates = num_updates.read_value()
                num_updates = math_ops.cast(num_updates, dtypes.float32, name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = [assign_moving_average(self._averages[var], var, decay,
                                             zero_debias=self._averages[var] in zero_debias_true)
                       for var in var_list]
            return control_flow_ops.group(*updates, name=scope)

    def average(self, var):
        """The shadow variable of ``var``, or None."""
        return self._averages.get(var)

    def average_name(self, var):
        """The name the shadow of ``var`` has (or would have): ``<var op name>/<name>``."""
        if var in self._averages:
            return self._averages[var].op.name
        return get_default_graph().unique_name(f"{var.op.name}/{self._name}", mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables=None):
        """A ``{checkpoint name: variable}`` map restoring the averages into the variables themselves.

        Moving-averaged variables (default: trainable + ``MOVING_AVERAGE_VARIABLES``)
        map from their shadow's name; every other global variable from its own name.
        """
        if moving_avg_variables is None:
            moving_avg_variables = variables.trainable_variables() + variables.moving_average_variables()
        moving_avg_variables = set(moving_avg_variables)
        name_map = {self.average_name(v): v for v in moving_avg_variables}
        for v in variables.global_variables():
            if v not in moving_avg_variables and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map
