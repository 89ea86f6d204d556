"""The dataflow control-flow primitives: ``Switch``, ``Merge``, ``Enter``, ``Exit``,
``NextIteration`` and ``LoopCond``.

Source: ``tensorflow/core/ops/control_flow_ops.cc`` (op definitions and shape functions),
``core/kernels/control_flow_ops.cc`` (kernels) and Yu et al., "Dynamic Control Flow in
Large-Scale Machine Learning", EuroSys 2018, §3. The kernels are trivial; what makes
them control flow is how the executor routes their outputs (their *kind*, registered
with :func:`~dfcore.framework.registry.register_control_flow`):

* ``Switch(data, pred)`` → ``(output_false, output_true)``: the untaken output is *dead*
  (:data:`~dfcore.framework.registry.DEAD`); a node with a dead input runs dead. ``RefSwitch``
  forwards a variable reference itself (an ``Assign`` on its output happens only in its branch);
* ``Merge(inputs)`` → ``(output, value_index)``: forwards the first live input that arrives
  (a later live one is ignored, as TF's executor), dead only when all inputs are dead;
* ``Enter(data, frame_name, is_constant, parallel_iterations)`` passes ``data`` into the
  child frame ``frame_name`` (iteration 0, or every iteration when ``is_constant``);
* ``Exit(data)`` passes ``data`` out to the parent frame;
* ``NextIteration(data)`` passes ``data`` to the next iteration of its frame;
* ``LoopCond(input)``: the loop predicate (bool scalar), an identity marking the loop's test;
* ``ControlTrigger()``: does nothing and is never dead, even with dead control inputs (a point
  to order other ops after, whether or not their branch ran).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.graph import graph_of
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import common_shapes
from .array_ops_util import with_rank
from .op_util import apply_op

if TYPE_CHECKING:
    from ..framework.operation import Operation
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["switch", "ref_switch", "merge", "enter", "exit", "next_iteration", "loop_cond", "control_trigger"]

DEAD = registry.DEAD


# -- Switch ---------------------------------------------------------------------------
def switch(data: TensorLike, pred: TensorLike, name: str | None = None) -> tuple[Tensor, Tensor]:
    """``(output_false, output_true)``: ``data`` on the output ``pred`` selects, the other one dead.

    Args:
        data: a Tensor of any dtype and shape.
        pred: a bool scalar Tensor.
    Returns:
        Two Tensors with ``data``'s dtype and shape.
    Raises:
        InvalidArgumentError: ``pred`` is not a scalar (TF's ``Shape must be rank 0 …``).
    Source: ``control_flow_ops.switch``.
    """
    op = _apply("Switch", [data, pred], {}, name or "Switch")
    return op.outputs[0], op.outputs[1]


@registry.RegisterShape("Switch")
def _switch_shape(op):
    data, pred = op.inputs
    with_rank(op, pred.shape, 0)
    if pred.dtype.base_dtype != dtypes.bool:
        raise common_shapes.shape_error(op, f"pred must be bool, got {pred.dtype.name}")
    return [(data.dtype.base_dtype, data.shape)] * 2


@registry.RegisterArrayKernel("Switch")
def _switch_kernel(op, backend):
    def compute(data, pred):  # bool(): the predicate is read on the host (TF's HostMemory("pred"))
        return (DEAD, data) if bool(pred) else (data, DEAD)

    return compute


def ref_switch(data: TensorLike, pred: TensorLike, name: str | None = None) -> tuple[Tensor, Tensor]:
    """``Switch`` of a variable reference (``data``: a ``*_ref`` tensor, e.g. ``variable._ref()``): both outputs
    are references. Source: ``control_flow_ops.ref_switch``.

    Raises:
        TypeError: ``data`` is not a reference.
    """
    if not getattr(getattr(data, "dtype", None), "is_ref", False):
        raise TypeError(f"ref_switch needs a reference (a variable's *_ref tensor), got {data!r}")
    op = _apply("RefSwitch", [data, pred], {}, name or "RefSwitch")
    return op.outputs[0], op.outputs[1]


@registry.RegisterShape("RefSwitch")
def _ref_switch_shape(op):
    data = op.inputs[0]
    _switch_shape(op)
    return [(data.dtype, data.shape)] * 2


registry.register_ref_inputs("RefSwitch", 0)
registry.RegisterArrayKernel("RefSwitch")(_switch_kernel)


# -- Merge ----------------------------------------------------------------------------
def merge(inputs: TensorLike, name: str | None = None) -> tuple[Tensor, Tensor]:
    """``(output, value_index)``: the first live tensor of ``inputs`` to arrive, and its index.

    Args:
        inputs: a list of Tensors of one dtype.
    Returns:
        ``output`` (their dtype; their shape where they agree) and ``value_index`` (int32 scalar).
    Raises:
        TypeError: the inputs' dtypes differ.
    Source: ``control_flow_ops.merge``.
    """
    inputs = list(inputs)
    op = _apply("Merge", inputs, {"N": len(inputs)}, name or "Merge")
    return op.outputs[0], op.outputs[1]


@registry.RegisterShape("Merge")
def _merge_shape(op):
    first = op.inputs[0]
    for tensor in op.inputs[1:]:
        if tensor.dtype.base_dtype != first.dtype.base_dtype:
            raise TypeError(f"Input 'inputs' of 'Merge' Op has type {tensor.dtype.name} that does not match type "
                            f"{first.dtype.name} of argument 'inputs'.")
    return [(first.dtype.base_dtype, _common_shape([t.shape for t in op.inputs])), (dtypes.int32, TensorShape([]))]


def _common_shape(shapes):
    """TF's Merge shape: the inputs' shape where all agree, else unknown dims (unknown rank if ranks differ)."""
    ranks = {s.ndims for s in shapes}
    if None in ranks or len(ranks) > 1:
        return TensorShape(None)
    dims = zip(*(s.as_tuple() for s in shapes))
    return TensorShape([d[0] if len(set(d)) == 1 else None for d in dims])


@registry.RegisterArrayKernel("Merge")
def _merge_kernel(op, backend):
    from_host = backend.from_host

    def compute(value, index):  # the executor passes the chosen live input and its position
        return value, from_host(np.int32(index))

    return compute


# -- Enter, Exit, NextIteration, LoopCond -----------------------------------------------------
def enter(data: TensorLike, frame_name: str, is_constant: bool = False, parallel_iterations: int = 10,
          name: str | None = None) -> Tensor:
    """``data`` made available inside the child frame ``frame_name``.

    Args:
        frame_name: the loop's frame (``while/while_context``).
        is_constant: True: the value reaches every iteration (a loop invariant).
        parallel_iterations: at most this many iterations of the frame run at once (> 0).
    Raises:
        ValueError: ``parallel_iterations`` is not positive.
    Source: ``gen_control_flow_ops.enter`` / ``control_flow_ops._Enter``.
    """
    if int(parallel_iterations) <= 0:
        raise ValueError(f"`parallel_iterations` must be a positive integer: {parallel_iterations}")
    attrs = {"frame_name": str(frame_name), "is_constant": bool(is_constant),
             "parallel_iterations": int(parallel_iterations)}
    return _apply("Enter", [data], attrs, name or "Enter").outputs[0]


def exit(data: TensorLike, name: str | None = None) -> Tensor:  # TF's name (control_flow_ops.exit)
    """``data`` passed out of its frame to the parent frame. Source: ``control_flow_ops.exit``."""
    return _apply("Exit", [data], {}, name or "Exit").outputs[0]


def next_iteration(data: TensorLike, name: str | None = None) -> Tensor:
    """``data`` passed to the next iteration of its frame. Source: ``control_flow_ops._NextIteration``."""
    return _apply("NextIteration", [data], {}, name or "NextIteration").outputs[0]


def loop_cond(input: TensorLike, name: str | None = None) -> Tensor:  # TF's argument name
    """The loop predicate (bool scalar), passed through. Source: ``gen_control_flow_ops.loop_cond``."""
    return apply_op("LoopCond", [input], {}, name or "LoopCond").outputs[0]


@registry.RegisterShape("LoopCond")
def _loop_cond_shape(op):
    with_rank(op, op.inputs[0].shape, 0)
    if op.inputs[0].dtype.base_dtype != dtypes.bool:
        raise errors.InvalidArgumentError(None, op, f"LoopCond input must be bool, got {op.inputs[0].dtype.name}")
    return [(dtypes.bool, TensorShape([]))]


def control_trigger(name: str | None = None) -> Operation:
    """An op that is never dead, for control edges. Source: ``gen_control_flow_ops.control_trigger``."""
    return apply_op("ControlTrigger", [], {}, name or "ControlTrigger")


registry.RegisterShape("ControlTrigger")(common_shapes.no_outputs)
registry.RegisterArrayKernel("ControlTrigger")(lambda op, backend: lambda: None)
registry.NotDifferentiable("ControlTrigger")


def _identity(op, backend):
    return lambda x: x


for _op_type in ("Enter", "Exit", "NextIteration"):
    registry.RegisterShape(_op_type)(common_shapes.unchanged)
    registry.RegisterArrayKernel(_op_type)(_identity)
registry.RegisterArrayKernel("LoopCond")(_identity)

for _op_type, _kind in (("Switch", "switch"), ("RefSwitch", "switch"), ("Merge", "merge"), ("Enter", "enter"),
                        ("Exit", "exit"),
                        ("NextIteration", "next_iteration"), ("LoopCond", "loop_cond"),
                        ("ControlTrigger", "control_trigger")):
    registry.register_control_flow(_op_type, _kind)
registry.NotDifferentiable("LoopCond")


def _apply(op_type, inputs, attrs, name):
    """Create ``op_type`` with attr ``T`` (the first input's dtype) in the inputs' graph."""
    graph = graph_of(inputs)
    with graph.as_default():
        tensors = [convert_to_tensor(value) for value in inputs]
        return apply_op(op_type, tensors, {"T": tensors[0].dtype.base_dtype, **attrs}, name)
