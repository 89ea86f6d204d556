"""Stacks: ``StackV2``, ``StackPushV2``, ``StackPopV2`` — where a loop's forward pass saves the values
its gradient loop needs, popped in reverse iteration order.

Source: ``tensorflow/core/ops/data_flow_ops.cc`` and ``core/kernels/stack.cc``. A ``StackV2``
makes a new empty stack each time it runs (once per step outside loops); its handle is a
string scalar here (TF: a resource), its value the stack itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from .op_util import apply_op

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import DTypeLike, TensorLike

__all__ = ["stack_v2", "stack_push_v2", "stack_pop_v2"]

registry.mark_stateful("StackV2", "StackPushV2", "StackPopV2")


class Stack(list):
    """One stack's values (TF's ``Stack`` resource); ``name`` is its ``stack_name`` attr."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


def stack_v2(max_size: TensorLike, elem_type: DTypeLike, stack_name: str = "", name: str | None = None) -> Tensor:
    """A new empty stack of ``elem_type`` values (``max_size`` < 0: unbounded); returns its handle."""
    attrs = {"elem_type": dtypes.as_dtype(elem_type).base_dtype, "stack_name": stack_name}
    return apply_op("StackV2", [max_size], attrs, name or "StackV2", dtype=dtypes.int32).outputs[0]


def stack_push_v2(handle: TensorLike, elem: TensorLike, swap_memory: bool = False, name: str | None = None) -> Tensor:
    """Push ``elem`` on the stack; returns ``elem``. ``swap_memory`` is accepted (nothing to swap on numpy)."""
    attrs = {"swap_memory": bool(swap_memory)}
    return apply_op("StackPushV2", [handle, elem], attrs, name or "StackPushV2").outputs[0]


def stack_pop_v2(handle: TensorLike, elem_type: DTypeLike, name: str | None = None) -> Tensor:
    """Pop the last pushed value. Raises (at run time) InvalidArgumentError ``Stack[<name>] is empty.``"""
    attrs = {"elem_type": dtypes.as_dtype(elem_type).base_dtype}
    return apply_op("StackPopV2", [handle], attrs, name or "StackPopV2").outputs[0]


registry.RegisterShape("StackV2")(lambda op: [(dtypes.string, TensorShape([]))])
registry.RegisterShape("StackPushV2")(lambda op: [(op.inputs[1].dtype.base_dtype, op.inputs[1].shape)])
registry.RegisterShape("StackPopV2")(lambda op: [(op.get_attr("elem_type"), TensorShape(None))])
for _op_type in ("StackV2", "StackPushV2", "StackPopV2"):
    registry.NotDifferentiable(_op_type)


@registry.RegisterKernel("StackV2")
def _stack_kernel(op):
    name = op.get_attr("stack_name") or op.name
    return lambda max_size: Stack(name)


@registry.RegisterKernel("StackPushV2")
def _push_kernel(op):
    def compute(stack, elem):
        stack.append(elem)
        return elem

    return compute


@registry.RegisterKernel("StackPopV2")
def _pop_kernel(op):
    def compute(stack):
        if not stack:
            raise errors.InvalidArgumentError(None, op, f"Stack[{stack.name}] is empty.")
        return stack.pop()

    return compute
