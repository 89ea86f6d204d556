"""``Graph``: a dataflow graph of Operations, with TF1's scopes and collections.

Source: ``tensorflow/python/framework/ops.py`` (class ``Graph``). Op names are
unique per graph (``MatMul``, ``MatMul_1``, ``layer1/MatMul``), built by
:meth:`Graph.unique_name` with TF's case-insensitive counter. Scopes stack:
name scopes, control dependencies, device functions (innermost wins field by
field) and colocation. :func:`graph_of` picks the graph an op of some inputs goes to (TF's
``ops._get_graph_from_inputs``).
"""

import contextlib
import re
import threading

from . import device as device_lib
from .attr_value import to_attr_value
from .default_stack import DefaultStack
from .graph_def import make_graph_def
from .operation import Operation
from .tensor import Tensor

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


class GraphKeys:
    """Standard collection names (TF's values)."""

    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    MODEL_VARIABLES = "model_variables"
    GLOBAL_STEP = "global_step"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    SUMMARIES = "summaries"
    SUMMARY_OP = "summary_op"
    QUEUE_RUNNERS = "queue_runners"
    TRAIN_OP = "train_op"
    UPDATE_OPS = "update_ops"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    SAVERS = "savers"
    VARIABLES = GLOBAL_VARIABLES


class Graph:
    """A TensorFlow-1-style computation graph.

    Raises:
        RuntimeError: when an op is added after :meth:`finalize`.
    """

    def __init__(self):
        self._lock = threading.RLock()
        self._ops = []
        self._ops_by_name = {}
        self._names_in_use = {}
        self._name_stack = ""
        self._control_dependencies_stack = []
        self._device_function_stack = []
        self._colocation_stack = []
        self._collections = {}
        self._finalized = False
        self._control_flow_context = None  # the cond/while being built (dfcore.ops.control_flow_context)
        self._last_id = 0
        self.seed = None

    # -- ops ------------------------------------------------------------------
    def _next_id(self):
        self._last_id += 1
        return self._last_id

    @property
    def version(self):
        return self._last_id

    def create_op(self, op_type, inputs, attrs=None, name=None):
        """Create an Operation of ``op_type`` with the active scopes applied.

        Args:
            op_type: a registered op type (``"MatMul"``).
            inputs: a list of Tensors of this graph.
            attrs: a dict of attributes.
            name: the base name; made unique within the name scope.
        Raises:
            ValueError: an input belongs to another graph, or the name is not a valid node name
                (TF's ``_VALID_OP_NAME_REGEX``: letters, digits, ``.`` first, then also ``_-/>\\``).
            InvalidArgumentError: the shape function rejects the inputs.
        """
        with self._lock:
            self._check_not_finalized()
            for tensor in inputs:
                if not isinstance(tensor, Tensor):
                    raise TypeError(f"Input to '{op_type}' must be a Tensor, got {tensor!r}")
                if tensor.graph is not self:
                    raise ValueError(f"Tensor {tensor!r} must be from the same graph as the op '{op_type}' being "
                                     "created.")
            context = self._control_flow_context
            if context is not None:  # values from outside a cond branch or loop body come in through it
                inputs = [context.add_value(t) for t in inputs]
            unique = self._op_name(name or op_type)
            if not _VALID_OP_NAME.match(unique):
                raise ValueError(f"'{unique}' is not a valid node name")
            input_ops = {t.op for t in inputs}
            controls = self._control_dependencies_for_inputs(input_ops)
            attrs = dict(attrs or {})
            device = ""
            if self._colocation_stack:
                target = self._colocation_stack[-1]
                attrs["_class"] = sorted(set(target.colocation_groups))
                device = target.device
            op = Operation(self, op_type, unique, inputs, attrs, controls, device)
            if context is not None:
                op._control_flow_context = context
                context.add_op(op)
            if not self._colocation_stack:
                self._apply_device_functions(op)
            self._ops.append(op)
            self._ops_by_name[unique] = op
            for controller in self._control_dependencies_stack:
                controller.created.add(op)
            return op

    def _apply_device_functions(self, op):
        for function in reversed(self._device_function_stack):
            if function is None:
                break
            op._set_device(function(op))

    def get_operations(self):
        with self._lock:
            return list(self._ops)

    def get_operation_by_name(self, name):
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        try:
            return self._ops_by_name[name]
        except KeyError:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.") from None

    def get_tensor_by_name(self, name):
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        op_name, sep, index = name.rpartition(":")
        if not sep or not index.isdigit():
            raise ValueError(
                f"The name '{name}' looks a like an Operation name, not a Tensor name. Tensor names must be of the "
                f"form \"<op_name>:<output_index>\"."
            )
        op = self._ops_by_name.get(op_name)
        if op is None:
            raise KeyError(
                f"The name '{name}' refers to a Tensor which does not exist. The operation, '{op_name}', does not "
                "exist in the graph."
            )
        position = int(index)
        if position >= len(op.outputs):
            raise KeyError(
                f"The name '{name}' refers to a Tensor which does not exist. The operation, '{op_name}', exists but "
                f"only has {len(op.outputs)} outputs."
            )
        return op.outputs[position]

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        """Resolve a Tensor, Operation or name (``"x:0"`` / ``"op"``) to an element of this graph."""
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if ":" not in obj and allow_operation:
                return self.get_operation_by_name(obj)
            raise ValueError(f"Can not convert a name '{obj}' into a graph element of the requested kind.")
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError(f"{obj!r} is not an element of this graph.")
            return obj
        as_element = getattr(obj, "_as_graph_element", None)
        if as_element is not None:
            return self.as_graph_element(as_element(), allow_tensor, allow_operation)
        raise TypeError(f"Can not convert a {type(obj).__name__} into a Tensor or Operation.")

    def as_graph_def(self, from_version=None, add_shapes=False):
        """This graph as TF's ``GraphDef`` message (ops in creation order).

        Args:
            from_version: only ops added after ``graph.version`` was this value (TF's incremental export).
            add_shapes: also write each node's output shapes as the ``_output_shapes`` attr (list of shapes).
        Returns:
            a ``GraphDef`` (:mod:`dfcore.framework.protos`).
        """
        with self._lock:
            ops = self._ops if from_version is None else [op for op in self._ops if op._id > from_version]
            nodes = []
            for op in ops:
                node = op.node_def
                if add_shapes:
                    node.attr["_output_shapes"].CopyFrom(to_attr_value([t.shape for t in op.outputs]))
                nodes.append(node)
            return make_graph_def(nodes)

    # -- finalization ---------------------------------------------------------
    def finalize(self):
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

    def _unsafe_unfinalize(self):
        self._finalized = False

    def _check_not_finalized(self):
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    # -- names ----------------------------------------------------------------
    def unique_name(self, name, mark_as_used=True):
        """Prefix ``name`` with the name scope and append ``_<n>`` if it is taken."""
        if self._name_stack:
            name = f"{self._name_stack}/{name}"
        key = name.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count > 0:
            base = key
            while key in self._names_in_use:
                key = f"{base}_{count}"
                count += 1
            if mark_as_used:
                self._names_in_use[key] = 1
            name = f"{name}_{count - 1}"
        return name

    def _op_name(self, name):
        """A new op's name: a scope name (``"v/"``) is taken as is, others made unique."""
        if name.endswith("/"):
            name = name[:-1]
            if name in self._ops_by_name:
                raise ValueError(f"Duplicate node name in graph: '{name}'")
            self._names_in_use.setdefault(name.lower(), 1)
            return name
        return self.unique_name(name)

    def get_name_scope(self):
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name):
        """Enter a name scope; returns ``"scope/"``. A name ending in ``/`` re-enters it as is.

        Raises ValueError ``'<name>' is not a valid scope name`` (TF's ``ops.py``: ``_VALID_SCOPE_NAME_REGEX``
        inside a scope, the stricter ``_VALID_OP_NAME_REGEX`` at the root).
        """
        old = self._name_stack
        if name and not (_VALID_SCOPE_NAME if old else _VALID_OP_NAME).match(name):
            raise ValueError(f"'{name}' is not a valid scope name")
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield "" if not new else new + "/"
        finally:
            self._name_stack = old

    # -- control dependencies -------------------------------------------------
    def control_dependencies(self, control_inputs):
        """Ops created in this context run after ``control_inputs``; None clears outer ones."""
        return _ControlDependencies(self, control_inputs)

    def _control_dependencies_for_inputs(self, input_ops):
        """Control inputs for a new op; a controller whose block created one of
        ``input_ops`` is skipped, since that input already implies its deps (TF's rule)."""
        ops = []
        for controller in self._control_dependencies_stack:
            if any(op in controller.created for op in input_ops):
                continue
            for op in controller.control_inputs:
                if op not in ops and op not in input_ops:
                    ops.append(op)
        return ops

    # -- devices and colocation ----------------------------------------------
    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Request a device for ops created here: a string, DeviceSpec, function or None."""
        if device_name_or_function is None or callable(device_name_or_function):
            function = device_name_or_function
        else:
            function = device_lib.merge_device(device_name_or_function)
        self._device_function_stack.append(function)
        try:
            yield
        finally:
            self._device_function_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        """Ops created here are placed with ``op`` (a Tensor, Variable or Operation)."""
        op = _as_operation(op)
        if op is None:
            if not ignore_existing:
                raise ValueError("Trying to reset colocation (op is None) but ignore_existing is not True")
            saved, self._colocation_stack = self._colocation_stack, []
            try:
                yield
            finally:
                self._colocation_stack = saved
            return
        saved_devices = self._device_function_stack
        self._device_function_stack = []
        saved_stack = self._colocation_stack
        if ignore_existing:
            self._colocation_stack = []
        self._colocation_stack = self._colocation_stack + [op]
        try:
            yield
        finally:
            self._colocation_stack = saved_stack
            self._device_function_stack = saved_devices

    # -- collections ----------------------------------------------------------
    def add_to_collection(self, name, value):
        with self._lock:
            self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        for name in [names] if isinstance(names, str) else set(names):
            self.add_to_collection(name, value)

    def get_collection_ref(self, name):
        with self._lock:
            return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None):
        with self._lock:
            items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [item for item in items if getattr(item, "name", None) and pattern.match(item.name)]

    def get_all_collection_keys(self):
        """The string keys of the non-empty collections (TF leaves out its internal tuple keys too)."""
        return [key for key, value in self._collections.items() if value and isinstance(key, str)]

    def clear_collection(self, name):
        self._collections.pop(name, None)

    # -- default graph --------------------------------------------------------
    def as_default(self):
        """A context manager making this the default graph of the current thread."""
        return _default_graphs.get_controller(self)

    def __repr__(self):
        return f"<dfcore.Graph with {len(self._ops)} ops>"


class _ControlDependencies:
    def __init__(self, graph, control_inputs):
        self._graph = graph
        self.created = set()
        if control_inputs is None:
            self.control_inputs = None
        else:
            self.control_inputs = [_as_operation(c, strict=True) for c in control_inputs]
            for op in self.control_inputs:
                if op.graph is not graph:
                    raise ValueError(f"Control input {op.name} must be from the same graph.")

    def __enter__(self):
        graph = self._graph
        self._saved = graph._control_dependencies_stack
        self._saved_context = graph._control_flow_context
        if self.control_inputs is None:  # TF: a new stack also leaves any cond/while context
            graph._control_dependencies_stack = []
            graph._control_flow_context = None
        else:
            graph._control_dependencies_stack = self._saved + [self]
        return self

    def __exit__(self, *exc):
        self._graph._control_dependencies_stack = self._saved
        self._graph._control_flow_context = self._saved_context
        return False


def _as_operation(value, strict=False):
    if value is None and not strict:
        return None
    if isinstance(value, Operation):
        return value
    if isinstance(value, Tensor):
        return value.op
    op = getattr(value, "op", None)
    if isinstance(op, Operation):
        return op
    raise TypeError(f"Can not convert a {type(value).__name__} into an Operation.")


# -- the default graph --------------------------------------------------------
_global_default_graph = None
_default_graphs = DefaultStack()
# The graph whose create_op executes each op at once while eager execution is on (set by dfcore.eager.context:
# framework/ never imports the runtime), else None.
_eager_graph = None


def set_eager_graph(graph):
    """Install (or, with None, remove) the graph ops go to outside any ``as_default()`` block (dfcore.eager)."""
    global _eager_graph
    _eager_graph = graph


def init_scope_graph():
    """The graph state (variables, an optimizer's accumulators) is made in: the eager graph while eager
    execution is on, a ``tf.function`` being traced included, else the default graph (TF's ``init_scope``
    lifts out of function graphs the same way; ``python/framework/ops.py``)."""
    return _eager_graph if _eager_graph is not None else get_default_graph()


def executing_eagerly():
    """True while ops run at once: eager execution is on and no ``Graph.as_default()`` block (a ``tf.function``
    being traced included) is open on this thread. Source: TF 1.x ``tf.executing_eagerly``
    (``python/eager/context.py``)."""
    if _eager_graph is None:
        return False
    top = _default_graphs.top()
    return top is None or top is _eager_graph


def has_nested_default_graph():
    """True inside a ``with graph.as_default()`` block of this thread."""
    return bool(_default_graphs.stack)


def get_default_graph():
    """The innermost ``Graph.as_default()`` graph of this thread, else the eager graph while eager execution is
    on (:mod:`dfcore.eager`), else the global default."""
    global _global_default_graph
    graph = _default_graphs.top()
    if graph is not None:
        return graph
    if _eager_graph is not None:
        return _eager_graph
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph():
    """Replace the global default graph with a new, empty one.

    Raises:
        AssertionError: if called inside a ``with graph.as_default()`` block (TF's rule).
    """
    global _global_default_graph
    if has_nested_default_graph():
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. "
                             "If you need a cleared graph, exit the nesting and create a new graph.")
    _global_default_graph = Graph()


def graph_of(values):
    """The graph of the first Tensor (or Variable/Operation) among ``values``, else the default graph.

    Raises:
        ValueError: two values come from different graphs (TF's wording).
    """
    found = None
    for value in values:
        graph = _graph_of_value(value)
        if graph is None:
            continue
        if found is None:
            found, first = graph, value
        elif graph is not found:
            raise ValueError(f"Tensor({value!r}) must be from the same graph as Tensor({first!r}).")
    return found if found is not None else get_default_graph()


def _graph_of_value(value):
    if getattr(value, "_is_eager", False):  # an eager tensor or variable: the op goes to the default graph
        return None
    if isinstance(value, Tensor):
        return value.graph
    graph = getattr(value, "graph", None)
    return graph if isinstance(graph, Graph) else None
