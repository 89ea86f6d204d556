"""``tf.function``: trace a Python function into a graph once per input signature, run it as a Session step.

Source: ``tensorflow/python/eager/def_function.py`` and ``function.py`` (``FuncGraph``, tracing per input
signature, retracing when dtypes or shapes change, Python arguments part of the signature, captured
variables shared with eager code). Each trace is a :class:`FuncGraph` (placeholders for the tensor
arguments) run by a Session on the eager context's devices, variables and resources — prune, place,
partition, executors, and whatever graph rewrites the session's config enables. The call returns
EagerTensors. dfcore simplifications: a captured eager tensor becomes a constant of the graph (TF feeds
it); a call made while a ``GradientTape`` records runs the Python function eagerly, op by op, so the tape
sees its ops (TF records the call as one op with a backward function; put the tape inside the function
to keep the graph); and a ``tf.function`` called while a graph is being built inlines its ops into that
graph.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..framework import dtypes, graph as graph_lib, nest, registry
from ..framework.operation import Operation
from ..framework.tensor import Tensor
from ..ops import array_ops, constant_op, state_ops
from ..ops.variables import Variable
from ..runtime.config import ConfigProto, RunMetadata, RunOptions
from ..runtime.session import BaseSession
from ..runtime.variable_store import VarRef
from . import context as context_lib, tape as tape_lib
from .eager_tensor import EagerTensor


class FuncGraph(graph_lib.Graph):
    """The graph a trace builds. Eager tensors used in it are captured: a variable's handle becomes a
    ``VariableV2`` node on the variable's device with its store key (the same storage), any other eager
    tensor a ``Const`` of its value."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self._captures: dict[int, tuple[Any, Tensor]] = {}
        self.last_effect: Operation | None = None  # the last op with effects, which a call always runs

    def capture(self, tensor: EagerTensor) -> Tensor:
        """The graph tensor standing for eager ``tensor`` in this graph (made once per tensor)."""
        found = self._captures.get(id(tensor))
        if found is not None:
            return found[1]
        saved = self._name_stack, self._device_function_stack, self._colocation_stack, self._control_flow_context
        self._name_stack, self._device_function_stack, self._colocation_stack = "", [], []
        self._control_flow_context = None
        try:
            with self.control_dependencies(None):
                value = tensor._value
                if isinstance(value, VarRef):
                    key = value.state.name
                    with self.device(tensor.device):
                        captured = state_ops.variable_op_v2(tensor.shape, tensor.dtype.base_dtype, name=key,
                                                            shared_name=key)
                else:
                    captured = constant_op.constant(tensor.numpy(), dtype=tensor.dtype, name="captured")
        finally:
            self._name_stack, self._device_function_stack, self._colocation_stack = saved[:3]
            self._control_flow_context = saved[3]
        self._captures[id(tensor)] = (tensor, captured)
        return captured

    def create_op(self, op_type, inputs, attrs=None, name=None):
        """Create the op, capturing eager inputs; an op with effects (stateful, or on a variable) runs after the
        previous one, in program order (TF's automatic control dependencies)."""
        inputs = [self.capture(t) if getattr(t, "_is_eager", False) else t for t in inputs]
        op = super().create_op(op_type, inputs, attrs, name)
        # an op with no inputs (a variable, a placeholder, a queue) only makes a resource: no effect to order
        if op.inputs and (registry.is_stateful(op_type) or any(t.dtype.is_ref for t in op.inputs)):
            if op._control_flow_context is None:
                if self.last_effect is not None:
                    op._add_control_input(self.last_effect)
                self.last_effect = op
        return op


class _EagerBinding:
    """What a function's Session runs on: the eager context's devices, variables and resources (the
    Session's ``register_target_resolver`` binding shape)."""

    def __init__(self, ctx: context_lib.EagerContext) -> None:
        self.device_set = ctx.device_set
        self.variable_store = ctx.variables
        self.resources = ctx.resources

    def check_step(self, plan: Any) -> None:
        """Every device of the eager context is in this process: nothing can be down."""


class _FunctionSession(BaseSession):
    """A Session over one trace, in the eager context (its variables outlive the session)."""

    def __init__(self, graph: FuncGraph, ctx: context_lib.EagerContext, config: ConfigProto) -> None:
        super().__init__(graph=graph, config=config, executor_runner="inline")
        binding = _EagerBinding(ctx)
        self._binding = binding
        self._variables, self._resources, self._device_set = (binding.variable_store, binding.resources,
                                                              binding.device_set)


class ConcreteFunction:
    """One trace: its graph, its argument placeholders, and the Session that runs it.

    Attributes:
        graph: the :class:`FuncGraph`.
        session: the Session running it (``session.partitions(...)`` shows the partitions, dfcore).
    """

    def __init__(self, graph: FuncGraph, placeholders: list[Tensor], outputs: Any, session: _FunctionSession):
        self.graph = graph
        self.session = session
        self._placeholders = placeholders
        self._outputs = outputs
        flat = nest.flatten(outputs)
        self._fetches = [x for x in flat if isinstance(x, (Tensor, Operation))]
        self._targets = [graph.last_effect] if graph.last_effect is not None else []

    @property
    def fetches(self) -> list[Any]:
        """What a call fetches from :attr:`session`: the graph tensors and operations it returns, then the last
        op with effects (which runs every earlier one)."""
        return self._fetches + self._targets

    def feed_dict(self, values: list[Any]) -> dict[Tensor, Any]:
        """The feeds of a call: the tensor arguments' values (numpy arrays, in argument order) by placeholder."""
        return dict(zip(self._placeholders, values))

    def __call__(self, values: list[Any], run_metadata: RunMetadata | None = None) -> Any:
        options = RunOptions(trace_level=RunOptions.FULL_TRACE) if run_metadata is not None else None
        results = self.session.run(self.fetches, self.feed_dict(values), options=options, run_metadata=run_metadata)
        placement = self.session._placement
        ctx = context_lib.context()
        ids = ctx.tensor_ids if ctx is not None else iter(range(1, 2 ** 62))
        by_fetch = {}
        for fetch, value in zip(self._fetches, results):
            if isinstance(fetch, Tensor):
                device = placement[fetch.op] if placement is not None and fetch.op in placement else ""
                by_fetch[id(fetch)] = EagerTensor(np.asarray(value) if value is not None else value, fetch.dtype,
                                                  device, fetch.op, fetch.value_index, next(ids))
        return nest.pack_sequence_as(self._outputs, [by_fetch.get(id(x)) if isinstance(x, Tensor) else
                                                     (None if isinstance(x, Operation) else x)
                                                     for x in nest.flatten(self._outputs)])


class Function:
    """A Python function that runs as a graph (``tf.function(f)``); see the module docstring.

    Args:
        python_function: the function to trace.
        input_signature: accepted (a list of ``TensorSpec``-like objects with ``dtype``/``shape``) but the
            signature is always taken from the call's arguments.
        config: dfcore addition: the ``ConfigProto`` of the function's Session (its graph rewrites,
            e.g. ``graph_options.rewrite_options``); default the eager context's config.
    """

    def __init__(self, python_function: Callable[..., Any], input_signature: Any = None,
                 config: ConfigProto | None = None, name: str | None = None) -> None:
        self.python_function = python_function
        self.input_signature = input_signature
        self._config = config
        self._name: str = name or str(getattr(python_function, "__name__", "function"))
        self._traces: dict[Any, ConcreteFunction] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, python_function)

    def experimental_get_tracing_count(self) -> int:
        """How many times the Python function was traced (TF's method of this name)."""
        return len(self._traces)

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        """The trace for these arguments, traced now if new.

        Raises:
            RuntimeError: eager execution is off.
        """
        ctx = context_lib.context()
        if ctx is None or not graph_lib.executing_eagerly():
            raise RuntimeError("get_concrete_function needs eager execution (tf.enable_eager_execution()).")
        key, _ = _signature(args, kwargs)
        key = (id(ctx), key)  # a trace runs in the context it was made in (its variables, its devices)
        with self._lock:
            trace = self._traces.get(key)
            if trace is None:
                trace = self._traces[key] = self._trace(ctx, args, kwargs)
        return trace

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not graph_lib.executing_eagerly():
            return self.python_function(*args, **kwargs)  # building a graph: inline the ops into it
        if tape_lib.recording():  # a GradientTape watches: run the ops eagerly so it records them
            return self.python_function(*args, **kwargs)
        concrete = self.get_concrete_function(*args, **kwargs)
        _, values = _signature(args, kwargs)
        return concrete(values)

    def _trace(self, ctx: context_lib.EagerContext, args: tuple[Any, ...], kwargs: dict[str, Any]):
        graph = FuncGraph(self._name)
        placeholders: list[Tensor] = []

        def placeholder_for(leaf):
            if not _is_tensor_argument(leaf):
                return leaf
            if isinstance(leaf, EagerTensor):
                dtype, shape = leaf.dtype.base_dtype, leaf.shape
            else:
                dtype, shape = dtypes.as_dtype(np.asarray(leaf).dtype), np.shape(leaf)
            ph = array_ops.placeholder(dtype, shape, name=f"arg{len(placeholders)}")
            placeholders.append(ph)
            return ph

        with graph.as_default():
            flat = nest.flatten((args, kwargs))
            graph_args, graph_kwargs = nest.pack_sequence_as((args, kwargs), [placeholder_for(x) for x in flat])
            outputs = self.python_function(*graph_args, **graph_kwargs)
            outputs = nest.map_structure(_graph_output, outputs)
        session = _FunctionSession(graph, ctx, self._config if self._config is not None else ctx.config)
        return ConcreteFunction(graph, placeholders, outputs, session)


def _graph_output(value: Any) -> Any:
    if isinstance(value, Variable):
        return value.value()
    if isinstance(value, Tensor) and getattr(value, "_is_eager", False):
        return graph_lib.get_default_graph().capture(value)
    return value


def _is_tensor_argument(value: Any) -> bool:
    """An argument fed through a placeholder: a numpy array or scalar, or an eager tensor that is not a
    variable's handle (Python numbers are part of the trace key instead, as in TF)."""
    if isinstance(value, EagerTensor):
        return not isinstance(value._value, VarRef)
    return isinstance(value, (np.ndarray, np.generic))


def _signature(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The trace key of a call (dtype and shape per tensor argument; Python values as they are; variables by
    identity) and the values to feed."""
    key: list[tuple[Any, ...]] = []
    values: list[Any] = []
    for leaf in nest.flatten((args, kwargs)):
        if _is_tensor_argument(leaf):
            array = leaf.numpy() if isinstance(leaf, EagerTensor) else leaf
            dtype = leaf.dtype if isinstance(leaf, EagerTensor) else dtypes.as_dtype(np.asarray(array).dtype)
            key.append(("tensor", dtype.name, np.shape(array)))
            values.append(array)
        elif isinstance(leaf, Variable) or isinstance(leaf, Tensor):
            key.append(("object", id(leaf)))
        else:
            key.append(("python", type(leaf).__name__, repr(leaf)))
    structure = nest.map_structure(lambda _: None, (args, kwargs))
    return (repr(structure), tuple(key)), values


def function(func: Callable[..., Any] | None = None, input_signature: Any = None, autograph: bool = True,
             experimental_autograph_options: Any = None, experimental_relax_shapes: bool = False,
             experimental_compile: Any = None, config: ConfigProto | None = None) -> Any:
    """``tf.function``: ``function(f)`` or ``@function(...)``; returns a :class:`Function`.

    ``autograph`` and the ``experimental_*`` options are accepted and ignored (no AutoGraph: write
    ``tf.cond``/``tf.while_loop`` for control flow that depends on tensors). ``config``: dfcore addition,
    see :class:`Function`.
    """
    if func is None:
        return lambda f: Function(f, input_signature, config)
    return Function(func, input_signature, config)


def defun(func: Callable[..., Any] | None = None, input_signature: Any = None) -> Any:
    """TF 1.x ``tf.compat.v1.defun`` (``tf.contrib.eager.defun``): the same as :func:`function`."""
    return function(func, input_signature)
