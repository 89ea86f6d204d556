"""Arithmetic simplification: neutral elements dropped and chains of constant adds/multiplies combined.

Source: ``tensorflow/core/grappler/optimizers/constant_folding.cc`` (``SimplifyArithmeticOperations``:
``x * 1``, ``x + 0`` become ``Identity(x)`` under the node's own name; ``ConstantPushDown``:
``(x + c1) + c2`` becomes ``x + (c1 + c2)``) and ``arithmetic_optimizer.cc`` (TF's pass of this name, whose
new nodes are named ``ArithmeticOptimizer/<stage>_<name>``). dfcore runs these rewrites in the
``arithmetic_optimizer`` pass; the ``Identity`` left behind is removed by the dependency optimizer.

Rules (a rewrite never changes the output's shape or dtype):

- ``Mul(x, 1)``, ``Mul(1, x)``, ``RealDiv(x, 1)``, ``Sub(x, 0)``, ``Add(x, 0)`` → ``Identity(x)`` when the
  constant has ``x``'s shape or is a scalar. For floating-point ``Add`` only a ``-0.0`` qualifies:
  ``-0.0 + 0.0`` is ``+0.0`` in IEEE arithmetic, so TF's ``x + 0 → x`` would change the sign of a zero and
  dfcore keeps results bit for bit.
- ``Add``/``AddV2``/``Mul`` of a constant and a node ``Op(x, c1)`` of the same type that nothing else reads:
  the two constants are combined (with the node's own kernel) into a ``Const`` under the inner node's name
  — a chain of n constant adds ends as one ``Add``. Integers are exact; for floating point this
  reassociates, as TF's pass does (``(x + 1) + 1`` and ``x + 2`` can differ in the last bit when ``x`` is
  not exactly representable near the sum); both constants must be scalars or share ``x``'s full shape.
- Not done: hoisting common factors (``a*x + b*x → (a+b)*x``) changes rounding, and the lessons' models have
  no such sums.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .constant_folding import const_node, evaluate, is_constant
from .graph_item import GraphItem, Input, Node, Output

# op type -> (neutral value, input positions where the constant may stand)
_NEUTRAL = {"Mul": (1, (0, 1)), "RealDiv": (1, (1,)), "Sub": (0, (1,)), "Add": (0, (0, 1)), "AddV2": (0, (0, 1))}
_ASSOCIATIVE = ("Add", "AddV2", "Mul")


def run(item: GraphItem) -> None:
    """Drop neutral elements, then push constants down chains (producers first, so a chain takes one sweep)."""
    for node in item.ordered():
        if item.nodes.get(node.name) is not node:
            continue
        if node.type in _NEUTRAL and not _drop_neutral(item, node):
            if node.type in _ASSOCIATIVE:
                _push_down(item, node)


def _drop_neutral(item: GraphItem, node: Node) -> bool:
    neutral, positions = _NEUTRAL[node.type]
    for position in positions:
        const, other = node.inputs[position], node.inputs[1 - position]
        if not (isinstance(const, Output) and is_constant(const)):
            continue
        value = const.op.get_attr("value")  # its value first: most constants are not neutral
        if not _all_equal(value, neutral, node.type, other.dtype) or not _same_shape_or_scalar(const, other, node):
            continue
        identity = Node(node.name, "Identity", {"T": node._outputs[0].dtype}, node.device, node._id,
                        [(node._outputs[0].dtype, node._outputs[0].shape)])
        identity.inputs = [other]
        identity.control_inputs = list(node.control_inputs)
        item.replace(node, identity)
        return True
    return False


def _all_equal(value: np.ndarray, neutral: int, op_type: str, dtype: Any) -> bool:
    if value.size == 0 or not (value.item() == neutral if value.size == 1 else np.all(value == neutral)):
        return False
    if op_type in ("Add", "AddV2") and dtype.is_floating:
        return bool(np.all(np.signbit(value)))  # only -0.0 leaves every x (and its zero's sign) unchanged
    return True


def _same_shape_or_scalar(const: Output, other: Input, node: Node) -> bool:
    out = node._outputs[0]
    if other.dtype != out.dtype or not out.shape.is_fully_defined():
        return False
    if not (other.shape.is_fully_defined() and other.shape.as_list() == out.shape.as_list()):
        return False
    shape = const.op.get_attr("value").shape
    return shape == () or list(shape) == out.shape.as_list()


def _push_down(item: GraphItem, node: Node) -> None:
    """``Op(Op(x, c1), c2)`` → ``Op(x, c1 ∘ c2)``, the combined constant named after the inner node."""
    for position in (0, 1):
        c2, inner_out = node.inputs[1 - position], node.inputs[position]
        if not (isinstance(c2, Output) and is_constant(c2)) or not isinstance(inner_out, Output):
            continue
        inner = inner_out.op
        if (inner.type != node.type or inner.device != node.device or inner.control_inputs
                or not item.removable(inner) or item.users[inner.name] != {node.name}
                or sum(1 for t in node.inputs if isinstance(t, Output) and t.op is inner) != 1):
            continue
        found = _split(inner)
        if found is None:
            continue
        x, c1 = found
        if not _combinable(x, c1, c2, node):
            continue
        combined = evaluate(node, [c1.op.get_attr("value"), c2.op.get_attr("value")])
        if combined is None:
            continue
        const = const_node(inner.name, combined[0], node._outputs[0].dtype, node.device, inner._id)
        item.replace(inner, const)
        inputs: list[Input] = [x, x]
        inputs[1 - position] = const._outputs[0]
        item.set_inputs(node, inputs)
        return


def _split(inner: Node) -> tuple[Input, Output] | None:
    """``(x, c)`` when ``inner`` is ``Op(x, c)`` or ``Op(c, x)`` with ``c`` constant and ``x`` not."""
    a, b = inner.inputs
    if is_constant(b) and not is_constant(a):
        return a, b  # type: ignore[return-value]
    if is_constant(a) and not is_constant(b):
        return b, a  # type: ignore[return-value]
    return None


def _combinable(x: Input, c1: Output, c2: Output, node: Node) -> bool:
    """The rewrite keeps the output's shape and dtype: both constants scalars, or both of ``x``'s full shape."""
    v1, v2 = c1.op.get_attr("value"), c2.op.get_attr("value")
    out = node._outputs[0]
    if not (x.dtype == c1.dtype == c2.dtype == out.dtype) or not out.shape.is_fully_defined():
        return False
    if not (x.shape.is_fully_defined() and x.shape.as_list() == out.shape.as_list()):
        return False
    return (v1.shape == () and v2.shape == ()) or (list(v1.shape) == list(v2.shape) == out.shape.as_list())
