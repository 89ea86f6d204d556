"""A user function of a dataset transformation (``map``, ``filter``, ``interleave``), traced once.

Source: TF's ``StructuredFunctionWrapper`` (``tensorflow/python/data/ops/dataset_ops.py``).
As TF traces a ``Defun``, the Python function is called **once**, when the transformation
is built, on placeholders with the input element's dtypes and static shapes, in a private
``Graph``; its result (Tensors, Python values, nested tuples/dicts, or a Dataset for
``interleave``) fixes the output structure, dtypes and static shapes. Per element, the
traced ops' kernels are called directly (:class:`~dfcore.data.function_plan.FunctionPlan`); a
function with ops that need a step (random ops, ...) runs in a private ``Session`` (inline
executor, one per iterator pass) fed with the element; the private graph takes the user's graph
seed. Unlike TF, the function cannot capture
Tensors of the user's graph (building it then raises ValueError, "must be from the same graph"); Python values and
NumPy arrays are captured as constants.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import errors
from ..framework import dtypes as dtypes_lib
from ..framework.graph import Graph, get_default_graph
from ..framework.tensor_conversion import convert_to_tensor
from ..ops import op_costs
from ..ops.array_ops import placeholder
from ..runtime import cost_model
from ..runtime.session import Session
from . import structure as nest
from .function_plan import FunctionPlan
from .iteration import IterationContext


class TracedFunction:
    """``fn`` traced on an element of ``(structure, types, shapes)``; ``outputs`` are its flat result Tensors.

    ``result`` is the traced return value itself (a Dataset for ``interleave``, else the nested
    Tensors); ``output_structure``, ``output_types``, ``output_shapes`` describe it.
    """

    def __init__(self, fn: Callable, input_structure: Any, input_types: list, input_shapes: list, kind: str):
        self.name = getattr(fn, "__name__", type(fn).__name__)
        self.kind = kind
        self.graph = Graph()
        self.graph.seed = get_default_graph().seed  # random ops in the function follow the user's graph seed
        with self.graph.as_default():
            self.inputs = [placeholder(t, s, name=f"arg{i}") for i, (t, s) in
                           enumerate(zip(input_types, input_shapes))]
            args = nest.pack_as(input_structure, self.inputs)
            self.result = fn(*args) if type(args) is tuple else fn(args)
            if hasattr(self.result, "_iterate"):
                self.outputs = list(self.result._captured_tensors())
                self.plan = FunctionPlan.make(self.graph, self.inputs, self.outputs)
                return
            structure, flat = nest.normalize_element(self.result)
            self.outputs = [convert_to_tensor(c) for c in flat]
        self.output_structure = nest.pack_as(structure, self.outputs)
        self.output_types = [t.dtype.base_dtype for t in self.outputs]
        self.output_shapes = [t.shape for t in self.outputs]
        self.plan = FunctionPlan.make(self.graph, self.inputs, self.outputs)

    def estimated_cost_s(self) -> float:
        """The roofline time of the traced ops on a host CPU (:data:`~dfcore.runtime.cost_model.CPU`), counting
        ops whose static shapes are fully known (an op of unknown shapes, e.g. ``py_func``, costs 0)."""
        total = 0.0
        for op in self.graph.get_operations():
            shapes = [t.shape for t in (*op.inputs, *op.outputs)]
            if op.type in op_costs.BOOKKEEPING or not all(s.is_fully_defined() for s in shapes):
                continue
            sample = op.outputs[0].dtype if op.outputs else dtypes_lib.float32
            cost = cost_model.op_cost(op.type, [t.shape.as_list() for t in op.inputs],
                                      [t.shape.as_list() for t in op.outputs], sample.size, op.attrs)
            total += cost_model.op_time_s(cost, cost_model.CPU)
        return total

    def __call__(self, run: IterationContext, element: tuple) -> tuple:
        """The function's flat outputs for one element (a tuple of numpy arrays).

        Raises:
            InvalidArgumentError: an op of the function failed; the message names the function.
        """
        if not self.outputs:
            return ()
        try:
            if self.plan is not None:
                return self.plan(element)
            session = run.session(self, lambda: Session(graph=self.graph, executor_runner="inline"))
            values = session.run(self.outputs, feed_dict=dict(zip(self.inputs, element)))
        except errors.OpError as error:
            raise self.failed(error) from error
        return tuple(np.asarray(v) for v in values)

    @property
    def vectorized(self) -> bool:
        """Whether :meth:`call_batched` can run the function on a whole batch at once."""
        return self.plan is not None and self.plan.vectorized

    def call_batched(self, batch: tuple) -> tuple:
        """The flat outputs for elements stacked along dimension 0 (only when :attr:`vectorized`).

        Raises:
            InvalidArgumentError: an op failed on some element of the batch (naming the function).
        """
        if self.plan is None:
            raise ValueError(f"the {self.kind} function '{self.name}' has no plan to vectorize")
        try:
            return self.plan.call_batched(batch)
        except errors.OpError as error:
            raise self.failed(error) from error

    def failed(self, error: errors.OpError) -> errors.InvalidArgumentError:
        """The error of one call: ``error``'s message naming the function."""
        return errors.InvalidArgumentError(None, None,
                                           f"{error.message} [while running the {self.kind} function '{self.name}']")
