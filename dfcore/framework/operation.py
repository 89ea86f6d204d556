"""``Operation``: a node of the dataflow graph.

Source: ``tensorflow/python/framework/ops.py`` (class ``Operation``) and
``node_def.proto``. An op has a unique name, a type registered in
:mod:`dfcore.framework.registry`, data inputs (Tensors), control inputs
(Operations), attrs, a requested device, and outputs computed by its shape function.
"""

from . import registry
from .default_session import default_session_for
from .graph_def import make_node_def
from .tensor import Tensor


class Operation:
    """A node of a Graph; create ops with the op constructors, not directly."""

    def __init__(self, graph, op_type, name, inputs, attrs, control_inputs, device):
        self._graph = graph
        self._type = op_type
        self._name = name
        self._inputs = list(inputs)
        self._control_inputs = []
        self._attrs = dict(attrs)
        self._device = device or ""
        self._id = graph._next_id()
        self._outputs = []
        self._control_outputs = []
        self._assigned_device = None
        self._control_flow_context = None  # the cond branch or loop body that built this op, if any
        specs = registry.shape_function(op_type)(self)
        self._outputs = [Tensor(self, i, dtype, shape) for i, (dtype, shape) in enumerate(specs)]
        for tensor in self._inputs:
            tensor._consumers.append(self)
        for op in control_inputs:
            self._add_control_input(op)

    # -- identity -------------------------------------------------------------
    @property
    def graph(self):
        return self._graph

    @property
    def name(self):
        return self._name

    @property
    def type(self):
        return self._type

    @property
    def inputs(self):
        return tuple(self._inputs)

    @property
    def outputs(self):
        return list(self._outputs)

    @property
    def control_inputs(self):
        return list(self._control_inputs)

    @property
    def device(self):
        """The requested device string (possibly partial), as in ``NodeDef.device``."""
        return self._device

    def _set_device(self, device):
        self._device = device or ""

    @property
    def assigned_device(self):
        """The full device the placer assigned, or None before placement (dfcore)."""
        return self._assigned_device

    @property
    def colocation_groups(self):
        return list(self._attrs.get("_class", [f"loc:@{self._name}"]))

    def values(self):
        return tuple(self._outputs)

    def get_attr(self, name):
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.") from None

    def _set_attr(self, name, value):
        self._attrs[name] = value

    @property
    def attrs(self):
        return dict(self._attrs)

    # -- structure ------------------------------------------------------------
    def _add_control_input(self, op):
        """Add a control input after construction (TF's private method of this name)."""
        if not isinstance(op, Operation):
            raise TypeError(f"op must be an Operation: {op!r}")
        if op.graph is not self._graph:
            raise ValueError(f"{op.name} must be from the same graph as {self._name}")
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            op._control_outputs.append(self)

    def _remove_control_input(self, op):
        """Drop control input ``op`` (a loop body's op may not wait on an op outside the loop's frame)."""
        self._control_inputs.remove(op)
        op._control_outputs.remove(self)

    def _add_control_inputs(self, ops):
        for op in ops:
            self._add_control_input(op)

    def _update_input(self, index, tensor):
        """Replace data input ``index`` (used by graph rewrites)."""
        old = self._inputs[index]
        old._consumers.remove(self)
        self._inputs[index] = tensor
        tensor._consumers.append(self)

    def _get_control_flow_context(self):
        """The control-flow context (cond branch, loop body) this op was built in, or None (TF's method)."""
        return self._control_flow_context

    # -- export and running ---------------------------------------------------
    @property
    def node_def(self):
        """This op as TF's ``NodeDef`` message (``input`` lists ``^ctrl`` for control inputs; ``device`` is the
        assigned device once placed, else the requested one)."""
        inputs = [_input_name(t) for t in self._inputs] + [f"^{op.name}" for op in self._control_inputs]
        return make_node_def(self._name, self._type, inputs, self._assigned_device or self._device, self._attrs)

    def run(self, feed_dict=None, session=None):
        """Run this op in ``session`` (default: the default session)."""
        default_session_for(self, session, "run()").run(self, feed_dict)

    def __repr__(self):
        return f"<tf.Operation '{self._name}' type={self._type}>"

    def __str__(self):
        return str(self.node_def)


def _input_name(tensor):
    return tensor.op.name if tensor.value_index == 0 else tensor.name
