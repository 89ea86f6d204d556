"""``Variable``: TF1's reference variable, and the initializer helpers.

Source: ``tensorflow/python/ops/variables.py`` (``RefVariable``). A variable
``v`` is three ops: ``v`` (``VariableV2``), ``v/Assign`` (its initializer) and
``v/read`` (an ``Identity`` colocated with ``v``: the value other ops use).
``to_proto``/``from_proto`` name them in TF's ``VariableDef``, the form variable
collections take in a ``MetaGraphDef``.
"""

from ..framework import dtypes, graph as graph_lib, meta_graph
from ..framework.default_session import default_session_for
from ..framework.graph import GraphKeys
from ..framework.protos import VariableDef
from ..framework.tensor_conversion import convert_to_tensor, register_tensor_conversion_function
from . import array_ops, control_flow_ops, state_ops


class Variable:
    """A mutable tensor whose value lives in the session across steps.

    Args:
        initial_value: a Tensor or convertible value, or a callable returning one.
        trainable: add to ``TRAINABLE_VARIABLES`` (used by optimizers).
        collections: collection keys (default ``[GLOBAL_VARIABLES]``).
        validate_shape: require a fully defined initial shape.
        name: the op name (made unique).
        dtype: cast the initial value to this dtype.
    Raises:
        variable_def: a ``VariableDef``: wrap the ops it names (under ``import_scope``) in the
            default graph instead of creating ops; exclusive with ``initial_value``.
    Raises:
        ValueError: no initial value, or an undefined shape while ``validate_shape``, or both
            ``initial_value`` and ``variable_def``.
        KeyError: ``variable_def`` names an op or tensor that is not in the default graph.
    """

    # numpy defers ``ndarray * variable`` to the variable's reflected operators, as for Tensor (TF does this).
    __array_priority__ = 100
    _is_eager = False

    def __new__(cls, *args, **kwargs):
        """While ops execute eagerly, ``Variable(...)`` makes the eager variable class registered by
        :mod:`dfcore.eager` (TF 1.x's eager mode makes a resource variable the same way)."""
        if cls is Variable and _EAGER_VARIABLE_CLASS and graph_lib.executing_eagerly():
            return object.__new__(_EAGER_VARIABLE_CLASS[0])
        return object.__new__(cls)

    def __init__(self, initial_value=None, trainable=True, collections=None, validate_shape=True,
                 caching_device=None, name=None, dtype=None, expected_shape=None, constraint=None,
                 use_resource=None, synchronization=None, aggregation=None, import_scope=None, variable_def=None):
        if variable_def is not None:
            if initial_value is not None:
                raise ValueError("variable_def and initial_value are mutually exclusive.")
            self._init_from_proto(variable_def, import_scope)
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        collections = [GraphKeys.GLOBAL_VARIABLES] if collections is None else list(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        graph = graph_lib.get_default_graph()
        init_from_fn = callable(initial_value)
        # TF's init_scope: no control dependencies, and outside any cond or while_loop being built (a variable
        # made in a loop body, e.g. by an RNN cell, is created and initialized once, not per iteration)
        with graph.control_dependencies(None), graph.name_scope(name or "Variable") as scope:
            if init_from_fn:
                with graph.name_scope("Initializer"):
                    initial_value = initial_value()
            initial = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
            if dtype is not None and initial.dtype.base_dtype is not dtypes.as_dtype(dtype).base_dtype:
                raise ValueError(f"Initial value dtype {initial.dtype.name} does not match dtype "
                                 f"{dtypes.as_dtype(dtype).name}")
            shape = initial.shape
            if validate_shape and not shape.is_fully_defined():
                raise ValueError(f"initial_value must have a shape specified: {initial!r}")
            self._variable = state_ops.variable_op_v2(shape, initial.dtype.base_dtype, name=scope)
            with graph.colocate_with(self._variable.op):
                self._initializer_op = state_ops.assign(self._variable, initial, validate_shape=validate_shape,
                                                        name="Assign").op
            with graph.colocate_with(self._variable.op):
                self._snapshot = array_ops.identity(self._variable, name="read")
        self._initial_value = initial
        self._trainable = trainable
        self._constraint = constraint
        self._save_slice_info = None
        graph.add_to_collections(collections, self)

    def _init_from_proto(self, variable_def, import_scope):
        graph = graph_lib.get_default_graph()

        def element(name):
            return graph.as_graph_element(meta_graph.prepend_name_scope(name, import_scope))

        self._variable = element(variable_def.variable_name)
        self._initializer_op = element(variable_def.initializer_name)
        self._initial_value = element(variable_def.initial_value_name) if variable_def.initial_value_name else None
        self._snapshot = element(variable_def.snapshot_name)
        self._trainable = variable_def.trainable
        self._constraint = None
        self._save_slice_info = None

    def to_proto(self, export_scope=None) -> VariableDef | None:
        """This variable's ``VariableDef`` (names without ``export_scope``), or None if it is outside that scope."""
        if export_scope is not None and not self._variable.name.startswith(export_scope):
            return None

        def strip(name):
            return meta_graph.strip_name_scope(name, export_scope)

        initial_value_name = strip(self._initial_value.name) if self._initial_value is not None else ""
        return VariableDef(variable_name=strip(self._variable.name), initial_value_name=initial_value_name,
                           initializer_name=strip(self._initializer_op.name),
                           snapshot_name=strip(self._snapshot.name), trainable=self._trainable)

    @staticmethod
    def from_proto(variable_def, import_scope=None) -> "Variable":
        """The Variable over the ops ``variable_def`` names (under ``import_scope``) in the default graph."""
        return Variable(variable_def=variable_def, import_scope=import_scope)

    # -- identity ----------------------------------------------------------------
    @property
    def name(self):
        return self._variable.name

    @property
    def op(self):
        return self._variable.op

    @property
    def graph(self):
        return self._variable.graph

    @property
    def device(self):
        return self._variable.device

    @property
    def dtype(self):
        return self._variable.dtype

    @property
    def shape(self):
        return self._variable.shape

    def get_shape(self):
        return self._variable.shape

    @property
    def trainable(self):
        return self._trainable

    @property
    def initializer(self):
        return self._initializer_op

    @property
    def initial_value(self):
        return self._initial_value

    @property
    def constraint(self):
        return self._constraint

    # -- values ------------------------------------------------------------------
    def value(self):
        """The ``<name>/read`` snapshot other ops consume."""
        return self._snapshot

    def read_value(self):
        return array_ops.identity(self._variable, name="read")

    def _ref(self):
        return self._variable

    def _as_graph_element(self):
        return self._variable

    def initialized_value(self):
        """The initial value, available only after the initializer ran (TF1's definition)."""
        return control_flow_ops.with_dependencies([self._initializer_op], self._initial_value)

    def eval(self, session=None):
        return self._variable.eval(session=session)

    def load(self, value, session=None):
        """Assign ``value`` in ``session`` through the initializer's feed (TF's ``load``)."""
        session = default_session_for(self._variable, session, "load()")
        session.run(self._initializer_op, {self._initializer_op.inputs[1]: value})

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return state_ops.assign(self._variable, value, use_locking=use_locking, name=name)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return state_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return state_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)

    def count_up_to(self, limit):
        """The value before incrementing it; ``OutOfRangeError`` once it reached ``limit`` (see
        :func:`dfcore.ops.state_ops.count_up_to`)."""
        return state_ops.count_up_to(self._variable, limit)

    def __repr__(self):
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    @classmethod
    def _overload_operator(cls, operator):
        def forward(self, *args):
            return getattr(self.value(), operator)(*args)

        forward.__name__ = operator
        setattr(cls, operator, forward)


def _variable_to_tensor(value, dtype=None, name=None, as_ref=False):
    tensor = value._ref() if as_ref else value.value()
    if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(tensor.dtype):
        raise ValueError(
            f"Incompatible type conversion requested to type '{dtypes.as_dtype(dtype).name}' for variable of type "
            f"'{tensor.dtype.name}'"
        )
    return tensor


register_tensor_conversion_function(Variable, _variable_to_tensor)

_EAGER_VARIABLE_CLASS: list[type] = []


def register_eager_variable_class(cls: type) -> None:
    """The Variable subclass ``Variable(...)`` makes while executing eagerly (set once by dfcore.eager)."""
    _EAGER_VARIABLE_CLASS[:] = [cls]

VariableV1 = RefVariable = Variable

for _key in meta_graph.VARIABLE_COLLECTIONS:
    meta_graph.register_proto_function(_key, VariableDef, lambda v, export_scope=None: v.to_proto(export_scope),
                                       Variable.from_proto)


def global_variables(scope=None):
    return graph_lib.get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def local_variables(scope=None):
    return graph_lib.get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(scope=None):
    return graph_lib.get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def moving_average_variables(scope=None):
    return graph_lib.get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """One op running the initializers of ``var_list`` (a ``NoOp`` if the list is empty)."""
    if var_list:
        return control_flow_ops.group(*[v.initializer for v in var_list], name=name)
    return control_flow_ops.no_op(name=name)


def global_variables_initializer():
    return variables_initializer(global_variables(), name="init")


def local_variables_initializer():
    return variables_initializer(local_variables(), name="init")


initialize_all_variables = global_variables_initializer
initialize_variables = variables_initializer


def is_variable_initialized(variable):
    return state_ops.is_variable_initialized(variable)
