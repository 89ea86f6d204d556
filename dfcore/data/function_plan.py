"""A traced dataset function as straight-line kernel calls, per element or vectorized over a batch.

Source: dfcore; TF instantiates a dataset function once as a ``FunctionLibraryRuntime`` handle and calls it
per element without a session step (``core/data/captured_function.cc``), and its ``map_vectorization``
rewrite runs ``map`` then ``batch`` as one call on the batch when every op of the function has a
vectorizer (``core/grappler/optimizers/data/vectorization/``, pfor converters). Here:

* :class:`FunctionPlan` holds the kernels of the ops the outputs need, in graph (topological) order, and
  calls them directly: no step, no executor, no rendezvous. A function with an op whose kernel needs a step
  context (random ops, variables, queues, async ops) or the executor (control flow: ``tf.cond``,
  ``tf.while_loop``) has no plan; it runs in a private ``Session``.
* :meth:`FunctionPlan.call_batched` runs the same kernels on inputs stacked along a new dimension 0, when
  every op has a rule in :data:`BATCH_RULES` (keyed by op type): elementwise ops whose results do not depend
  on how many elements are computed together (exact IEEE arithmetic, comparisons, casts), ``Reshape`` and
  ``ExpandDims`` with the batch dimension put in front. Other functions are called per element.
"""

from collections.abc import Callable

import numpy as np

from .. import errors
from ..framework import registry
from ..framework.graph import Graph
from ..runtime.compiled_partition import CompiledNode
from ..runtime.kernel_errors import kernel_error
from ..runtime.partition_compiler import instantiate_kernel

_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
_INPUT_TYPES = ("Placeholder",)


def _elementwise(compute: Callable, batched: list[bool], ranks: list[int]) -> Callable:
    """``compute`` on operands whose batched ones carry dimension 0: unbatched operands of a higher rank than
    a batched one's element get that operand's element padded with 1s after dimension 0, so numpy's
    right-aligned broadcasting pairs each element with the whole unbatched operand."""
    top = max(ranks)
    pads = [top - rank if is_batched else 0 for is_batched, rank in zip(batched, ranks)]
    if not any(pads):
        return compute

    def run(*args):
        return compute(*(a.reshape(a.shape[:1] + (1,) * p + a.shape[1:]) if p else a for a, p in zip(args, pads)))

    return run


def _reshape(compute: Callable, batched: list[bool], ranks: list[int]) -> Callable | None:
    if batched[1]:
        return None
    return lambda tensor, shape: np.reshape(tensor, (tensor.shape[0],) + tuple(np.reshape(shape, -1).tolist()))


def _expand_dims(compute: Callable, batched: list[bool], ranks: list[int]) -> Callable | None:
    if batched[1]:
        return None

    def run(tensor, axis):
        axis = int(axis)
        return np.expand_dims(tensor, axis + 1 if axis >= 0 else axis)

    return run


def _select(compute: Callable, batched: list[bool], ranks: list[int]) -> Callable | None:
    """TF 1's ``Select``: a condition of the branches' rank picks elementwise, a scalar one (a vector when
    batched) picks whole elements: both as the kernel does per element, when every operand is batched."""
    if not all(batched) or ranks[1] != ranks[2] or ranks[0] not in (0, ranks[1]):
        return None
    return compute


_EXACT_ELEMENTWISE = (
    "Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "FloorDiv", "FloorMod", "Maximum", "Minimum", "Neg", "Abs",
    "Square", "Sqrt", "Floor", "Ceil", "Round", "Sign", "Cast", "Identity", "StopGradient", "Equal", "NotEqual",
    "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalNot", "SelectV2",
)
#: op type -> rule(compute, batched flags, input ranks) -> a compute for batched inputs, or None (not vectorizable)
BATCH_RULES: dict[str, Callable[..., Callable | None]] = {
    **dict.fromkeys(_EXACT_ELEMENTWISE, _elementwise), "Reshape": _reshape, "ExpandDims": _expand_dims,
    "Select": _select,
}


class _Step:
    __slots__ = ("node", "inputs", "outputs", "batched_compute")

    def __init__(self, node: CompiledNode, inputs: list, outputs: list):
        self.node, self.inputs, self.outputs = node, inputs, outputs
        self.batched_compute: Callable | None = None


class FunctionPlan:
    """The kernels computing ``outputs`` (Tensors of ``graph``) from ``inputs`` (its placeholders)."""

    def __init__(self, graph: Graph, inputs: list, outputs: list):
        self.inputs, self.outputs = list(inputs), list(outputs)
        needed = _needed_ops(self.outputs, set(self.inputs))
        self.steps = []
        for op in graph.get_operations():
            if op not in needed:
                continue
            if op.type in _INPUT_TYPES or registry.control_flow_kind(op.type) is not None:
                raise ValueError(f"op '{op.name}' of type {op.type} needs an executor")
            compute, needs_context, is_async = instantiate_kernel(op, op.type, op.name)
            if needs_context or is_async:
                raise ValueError(f"op '{op.name}' of type {op.type} needs a step")
            node = CompiledNode(op.name, op.type, compute, (), 0, len(op.outputs), False, False, op, op.name)
            self.steps.append(_Step(node, list(op.inputs), list(op.outputs)))
        self.vectorized = self._vectorize()

    @classmethod
    def make(cls, graph: Graph, inputs: list, outputs: list) -> "FunctionPlan | None":
        """The plan, or None when an op needs a step context (the function then runs in a Session)."""
        try:
            return cls(graph, inputs, outputs)
        except (ValueError, errors.NotFoundError):
            return None

    def _vectorize(self) -> bool:
        batched = dict.fromkeys(self.inputs, True)
        for step in self.steps:
            flags = [batched.get(t, False) for t in step.inputs]
            if not any(flags):
                continue  # computed once, on unbatched values
            rule = BATCH_RULES.get(step.node.op_type)
            ranks = [t.shape.ndims for t in step.inputs]
            if rule is None or None in ranks:
                return False
            step.batched_compute = rule(step.node.compute, flags, ranks)
            if step.batched_compute is None:
                return False
            batched.update(dict.fromkeys(step.outputs, True))
        return all(batched.get(t, False) for t in self.outputs)

    def __call__(self, element: tuple) -> tuple:
        """The outputs for one element (numpy arrays). Raises the OpError of a failing op (naming it)."""
        return self._run(element, False)

    def call_batched(self, batch: tuple) -> tuple:
        """The outputs for stacked elements (dimension 0), as :meth:`__call__` on each would give, stacked;
        only when ``vectorized``."""
        return self._run(batch, True)

    def _run(self, args: tuple, batched: bool) -> tuple:
        values: dict = dict(zip(self.inputs, args))
        for step in self.steps:
            compute = step.batched_compute if batched and step.batched_compute is not None else step.node.compute
            inputs = [values[t] for t in step.inputs]
            try:
                result = compute(*inputs)
            except Exception as error:  # the executor's conversion, in one place
                raise kernel_error(error, step.node, inputs, _DEVICE) from error
            if len(step.outputs) == 1:
                values[step.outputs[0]] = result
            else:
                values.update(zip(step.outputs, result or ()))
        return tuple(np.asarray(values[t]) for t in self.outputs)


def _needed_ops(outputs: list, fed: set) -> set:
    """The ops computing ``outputs`` (through data and control inputs), stopping at ``fed`` tensors."""
    needed: set = set()
    stack = [t.op for t in outputs if t not in fed]
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        stack.extend(t.op for t in op.inputs if t not in fed)
        stack.extend(op.control_inputs)
    return needed
