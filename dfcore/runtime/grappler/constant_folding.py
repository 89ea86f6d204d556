"""Constant folding: a node whose inputs are all constants becomes a ``Const`` holding its value.

Source: ``tensorflow/core/grappler/optimizers/constant_folding.cc`` (``MaterializeShapes``, ``FoldGraph``,
``FoldNode``; ``kMaxConstantSize``) and, for the classic L1 pass, ``core/common_runtime/constant_folding.cc``.
The value is computed by the node's own kernel, so it is bit for bit what the step would compute, in the
output's dtype (a result in another dtype, or over :data:`MAX_CONSTANT_BYTES`, is not folded).

- ``Shape``, ``Size`` and ``Rank`` of a tensor whose static shape is fully defined become constants first
  (TF's shape materialisation; TF also keeps a control edge from the input, for its frame: dfcore folds
  nothing inside control flow, so it drops the edge).
- Names, as TF's grappler pass: a folded single-output node keeps its name (it is replaced in place, with its
  control inputs); output ``i`` of a multi-output node becomes ``ConstantFolding/<name>-folded-<i>``. The
  classic pass (:func:`run_classic`) adds a new ``<name>/_<k>__cf__<k>`` constant instead (TF's counter is
  process-wide; dfcore's counts per run signature, so names are deterministic).
- Never folded: stateful nodes, nodes that read the step's context, fetched nodes, targets, producers of fed
  tensors (their consumers see the feed, which is no constant), and kernels that fail on the constant inputs
  (the step then reports the error, as without folding).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...framework import registry
from ...framework.tensor_shape import TensorShape
from .graph_item import GraphItem, Node, Output

MAX_CONSTANT_BYTES = 10 * 1024 * 1024  # constant_folding.cc kMaxConstantSize
PREFIX = "ConstantFolding"  # constant_folding.cc kConstantFoldingConst
SHAPE_OPS = {"Shape": lambda shape: shape, "Size": lambda shape: [int(np.prod(shape, dtype=np.int64))],
             "Rank": lambda shape: [len(shape)]}
# a user's Python function (PyFuncStateless) runs in the step, never at plan time
_NEVER_FOLDED = {"Const", "Placeholder", "PlaceholderWithDefault", "NoOp", "PyFuncStateless"}


def run(item: GraphItem) -> None:
    """TF's grappler pass: materialise shapes, then fold in producer order (a chain folds in one sweep)."""
    _fold_all(item, classic=False)


def run_classic(item: GraphItem) -> None:
    """graph_optimizer.cc's ``ConstantFold`` (L1): like :func:`run`, with ``__cf__`` constants."""
    _fold_all(item, classic=True)


def is_constant(t: Any) -> bool:
    """An input produced by a ``Const`` with no control inputs (a fed tensor never is)."""
    return isinstance(t, Output) and t.op.type == "Const" and not t.op.control_inputs


def const_node(name: str, value: np.ndarray, dtype: Any, device: str, node_id: int) -> Node:
    """A ``Const`` node holding ``value``."""
    return Node(name, "Const", {"dtype": dtype, "value": value}, device, node_id, [(dtype, TensorShape(value.shape))])


def evaluate(node: Node, values: list[np.ndarray]) -> list[np.ndarray] | None:
    """``node``'s outputs computed by its kernel from ``values``, or None when it must not be folded."""
    kernel_def = registry.kernel(node.type)
    if kernel_def is None or kernel_def.needs_context or kernel_def.is_async:
        return None
    try:
        result = kernel_def.build(node.kernel_source)(*values)  # folded on the host (numpy)
    except Exception:  # TF leaves a node that fails to fold alone; the step reports it
        return None
    results = list(result) if len(node._outputs) > 1 else [result]
    arrays = [np.asarray(r) for r in results]
    if len(arrays) != len(node._outputs) or any(
            a.dtype != out.dtype.as_numpy_dtype or a.nbytes > MAX_CONSTANT_BYTES
            for a, out in zip(arrays, node._outputs)):
        return None
    return arrays


def _fold_all(item: GraphItem, classic: bool) -> None:
    counter = 0
    for node in item.ordered():
        shape_op = node.type in SHAPE_OPS
        if not (shape_op or _all_constant(node.inputs)) or item.nodes.get(node.name) is not node or not _foldable(
                node, item):
            continue  # most nodes read a non-constant: that is checked first
        values = _materialized(node) if shape_op else None
        if values is None:
            if not _all_constant(node.inputs):
                continue
            values = evaluate(node, [t.op.get_attr("value") for t in node.inputs])
            if values is None:
                continue
        if classic:
            consts = []
            for value, out in zip(values, node._outputs):
                consts.append(const_node(f"{node.name}/_{counter}__cf__{counter}", value, out.dtype, node.device,
                                         node._id))
                counter += 1
            _add_and_forward(item, node, consts)
        elif len(values) == 1:
            const = const_node(node.name, values[0], node._outputs[0].dtype, node.device, node._id)
            const.control_inputs = list(node.control_inputs)
            item.replace(node, const)
        else:
            consts = [const_node(f"{PREFIX}/{node.name}-folded-{i}", value, out.dtype, node.device, node._id)
                      for i, (value, out) in enumerate(zip(values, node._outputs))]
            _add_and_forward(item, node, consts)


def _all_constant(inputs: list[Any]) -> bool:
    """Some inputs, all constants (:func:`is_constant`)."""
    if not inputs:
        return False
    for t in inputs:
        if not is_constant(t):
            return False
    return True


def _foldable(node: Node, item: GraphItem) -> bool:
    return node.type not in _NEVER_FOLDED and bool(node._outputs) and item.removable(node)  # removable: stateless


def _materialized(node: Node) -> list[np.ndarray] | None:
    source = node.inputs[0] if node.inputs else None
    if not isinstance(source, Output) or not source.shape.is_fully_defined():
        return None
    dtype = node._outputs[0].dtype
    value = np.asarray(SHAPE_OPS[node.type](source.shape.as_list()), dtype=dtype.as_numpy_dtype)
    return [value.reshape(()) if node.type != "Shape" else value]


def _add_and_forward(item: GraphItem, node: Node, consts: list[Node]) -> None:
    """Add ``consts`` (one per output, with ``node``'s control inputs) and move every data use onto them."""
    for const in consts:
        const.control_inputs = list(node.control_inputs)
        item.add(const)
    item.forward(node, [c._outputs[0] for c in consts])
