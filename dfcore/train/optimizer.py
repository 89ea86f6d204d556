"""``Optimizer``: the base class of TF1's optimizers (``minimize`` = compute + apply).

Source: ``tensorflow/python/training/optimizer.py``. ``compute_gradients``
returns ``(gradient, variable)`` pairs; ``apply_gradients`` creates the slots
(``<var>/<Name>``), then under the name scope ``<Name>`` one update op per
variable (``<Name>/update_<var>/Apply…``, colocated with the variable), and
returns the train op: a group named ``<Name>``, or, with ``global_step``, an
``AssignAdd`` of the global step named ``<Name>`` that runs after the updates.
Subclasses implement ``_create_slots``, ``_prepare``, ``_apply_dense`` and
optionally ``_finish``.
"""

from collections.abc import Callable, MappingView

from ..framework import dtypes
from ..framework.graph import GraphKeys, executing_eagerly, get_default_graph, graph_of
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..ops import control_flow_ops, gradients_impl, math_ops, state_ops, variables
from . import slot_creator

#: What an optimizer accepts for a hyperparameter such as ``learning_rate``: a number, a scalar Tensor
#: (a placeholder, a schedule) or a callable returning either, called when the updates are built.
Hyperparameter = float | Tensor | Callable[[], float | Tensor]


class Optimizer:
    """Base class of optimizers; use a subclass such as ``GradientDescentOptimizer``.

    Args:
        use_locking: passed to the update ops (dfcore's updates are always serialized).
        name: the optimizer's name: prefix of its ops and suffix of its slots.
    Raises:
        ValueError: ``name`` is empty.
    """

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots = {}
        self._non_slot_dict = {}
        self._hyper_tensors = {}

    def get_name(self):
        return self._name

    # -- the two phases --------------------------------------------------------------
    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                 colocate_gradients_with_ops=False, name=None, grad_loss=None):
        """Add ops that minimize ``loss`` by updating ``var_list``; returns the train Operation.

        Raises:
            ValueError: no variables, or no variable receives a gradient (TF's wording).
        """
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients, aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        vars_with_grad = [v for g, v in grads_and_vars if g is not None]
        if not vars_with_grad:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not support gradients, "
                f"between variables {[str(v) for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                          colocate_gradients_with_ops=False, grad_loss=None):
        """``[(gradient or None, variable), ...]`` of ``loss`` for ``var_list`` (default: trainable variables).

        Raises:
            ValueError: an invalid gate, a non-float loss, or no variables ("No variables to optimize.").
        """
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError(
                f"gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH. "
                f"Not {gate_gradients}")
        if callable(loss):
            return _tape_gradients(loss, var_list, grad_loss)
        if executing_eagerly():
            raise RuntimeError("`loss` passed to Optimizer.compute_gradients should be a function when eager "
                               "execution is enabled.")
        loss = convert_to_tensor(loss)
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            self._assert_valid_dtypes([convert_to_tensor(grad_loss)])
        with loss.graph.as_default():
            var_list = variables.trainable_variables() if var_list is None else _flatten(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        for var in var_list:
            _check_variable(var)
        grads = gradients_impl.gradients(
            loss, [v._ref() for v in var_list], grad_ys=grad_loss,
            gate_gradients=gate_gradients == Optimizer.GATE_OP, aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == Optimizer.GATE_GRAPH:
            grads = control_flow_ops.tuple(grads)
        grads_and_vars = list(zip(grads, var_list))
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Apply ``(gradient, variable)`` pairs; increment ``global_step`` after the updates if given.

        Returns:
            The train Operation (also added to the ``train_op`` collection).
        Raises:
            TypeError: a gradient is not convertible to a Tensor.
            ValueError: the list is empty or every gradient is None (TF's wording).
        """
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for grad, var in grads_and_vars:
            if grad is not None:
                try:
                    grad = convert_to_tensor(grad)
                except (TypeError, ValueError):
                    raise TypeError(
                        f"Gradient must be convertible to a Tensor or IndexedSlices, or None: {grad}") from None
            _check_variable(var)
            converted.append((grad, var))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: {[str(v) for _, v in converted]}.")
        graph = graph_of(var_list)
        with slot_creator.init_scope(graph):
            self._create_slots(var_list)
        update_ops = []
        with graph.as_default(), graph.name_scope(name or self._name) as scope:
            self._prepare()
            for grad, var in converted:
                if grad is None:
                    continue
                with graph.name_scope("update_" + var.op.name), graph.colocate_with(var.op):
                    update_ops.append(self._apply_dense(grad, var))
            if global_step is None:
                train_op = self._finish(update_ops, scope)
            else:
                with graph.control_dependencies([self._finish(update_ops, "update")]):
                    with graph.colocate_with(global_step.op):
                        train_op = state_ops.assign_add(global_step, 1, name=scope).op
        collection = graph.get_collection_ref(GraphKeys.TRAIN_OP)
        if train_op not in collection and not executing_eagerly():  # an eager loop would grow it every step
            collection.append(train_op)
        return train_op

    # -- slots -----------------------------------------------------------------------
    def get_slot_names(self):
        """Sorted names of the slots this optimizer creates (``["momentum"]``, ``["m", "v"]``)."""
        return sorted(self._slots)

    def get_slot(self, var, name):
        """The slot variable ``name`` of ``var``, or None."""
        named_slots = self._slots.get(name)
        if not named_slots:
            return None
        return named_slots.get(slot_creator.var_key(var))

    def variables(self):
        """The optimizer's slot and non-slot variables in the default graph, sorted by name."""
        graph = get_default_graph()
        found = [v for (_, g), v in self._non_slot_dict.items() if g is graph]
        for named_slots in self._slots.values():
            found.extend(v for (g, _), v in named_slots.items() if g is graph)
        return sorted(found, key=lambda v: v.name)

    def _slot_dict(self, slot_name):
        return self._slots.setdefault(slot_name, {})

    def _zeros_slot(self, var, slot_name, op_name):
        """The zeros slot ``slot_name`` of ``var``, created as ``<var>/<op_name>`` the first time."""
        return self._get_or_make(var, slot_name, lambda: slot_creator.create_zeros_slot(var, op_name))

    def _get_or_make_slot_with_initializer(self, var, initializer, shape, dtype, slot_name, op_name):
        """The slot ``slot_name`` of ``var``, created as ``<var>/<op_name>`` from ``initializer`` the first time."""
        return self._get_or_make(var, slot_name, lambda: slot_creator.create_slot_with_initializer(
            var, initializer, shape, dtype, op_name))

    def _get_or_make(self, var, slot_name, make):
        named_slots = self._slot_dict(slot_name)
        key = slot_creator.var_key(var)
        if key not in named_slots:
            named_slots[key] = make()
        return named_slots[key]

    def _create_non_slot_variable(self, initial_value, name, colocate_with):
        """A variable shared by all of the optimizer's variables (Adam's ``beta1_power``), one per graph."""
        graph = colocate_with.graph
        key = (name, graph)
        var = self._non_slot_dict.get(key)
        if var is None:
            with graph.as_default(), graph.colocate_with(colocate_with.op):
                var = variables.Variable(initial_value, name=name, trainable=False)
            self._non_slot_dict[key] = var
        return var

    def _get_non_slot_variable(self, name, graph):
        return self._non_slot_dict.get((name, graph))

    # -- subclass hooks --------------------------------------------------------------
    def _create_slots(self, var_list):
        """Create the slots of ``var_list`` (none by default)."""

    def _prepare(self):
        """Convert hyperparameters to tensors, inside the optimizer's name scope."""

    def _apply_dense(self, grad, var):
        raise NotImplementedError()

    def _finish(self, update_ops, name_scope):
        """The op that completes a step: a group of the updates named ``name_scope``."""
        return control_flow_ops.group(*update_ops, name=name_scope)

    @staticmethod
    def _call_if_callable(param):
        return param() if callable(param) else param

    def _prepare_hyper(self, **values):
        """Convert hyperparameters (floats, Tensors or callables) to tensors named after them (``learning_rate``)."""
        self._hyper_tensors = {name: convert_to_tensor(self._call_if_callable(value), name=name)
                               for name, value in values.items()}

    def _hyper(self, name, var):
        """The hyperparameter tensor ``name`` cast to ``var``'s dtype (call after :meth:`_prepare_hyper`)."""
        return math_ops.cast(self._hyper_tensors[name], var.dtype.base_dtype)

    def _valid_dtypes(self):
        return {dtypes.float16, dtypes.float32, dtypes.float64}

    def _assert_valid_dtypes(self, tensors):
        valid = self._valid_dtypes()
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in valid:
                raise ValueError(f"Invalid type {dtype!r} for {t.name}, expected: {sorted(d.name for d in valid)}.")


def _tape_gradients(loss, var_list, grad_loss):
    """TF's ``compute_gradients`` for a callable ``loss``: call it under a GradientTape (eager, or in a
    ``tf.function`` being traced); without ``var_list``, the trainable variables it read."""
    from ..eager.backprop import GradientTape  # here: the eager package builds on the runtime, as train/ does

    with GradientTape() as tape:
        if var_list is not None:
            tape.watch(_flatten(var_list))
        loss_value = loss()
    var_list = list(tape.watched_variables()) if var_list is None else _flatten(var_list)
    if not var_list:
        raise ValueError("No variables to optimize.")
    grads = tape.gradient(loss_value, var_list, grad_loss)
    return list(zip(grads, var_list))


def _flatten(var_list):
    """The variables of ``var_list``: nested lists and tuples, a dict's values, and dict views (``d.values()``),
    as TF's ``nest.flatten``."""
    if isinstance(var_list, dict):
        return list(var_list.values())
    if isinstance(var_list, (list, tuple, MappingView)):
        return [v for item in var_list for v in _flatten(item)]
    return [var_list]


def _check_variable(var):
    if not isinstance(var, variables.Variable):
        raise NotImplementedError(f"Trying to optimize unsupported type {var!r}")
