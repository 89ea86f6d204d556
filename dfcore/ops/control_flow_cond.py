"""``tf.cond`` and ``tf.case`` (TF 1.x), built as ``Switch``/``Merge`` dataflow.

Source: ``tensorflow/python/ops/control_flow_ops.py`` (``cond``, ``case``, ``_case_helper``).
``cond(pred, true_fn, false_fn)`` in name scope ``cond`` builds, as TF 1.x:

* ``cond/Switch`` = ``Switch(pred, pred)``; ``cond/switch_t`` and ``cond/switch_f``
  (Identities of its true and false outputs: the branches' pivots); ``cond/pred_id``
  (Identity of ``pred``);
* each branch in its :class:`~dfcore.ops.control_flow_context.CondContext`: a tensor from
  outside reaches it through ``Switch(x, pred_id)`` (``cond/Switch_1`` …), so the untaken
  branch runs dead; a branch result built outside is switched the same way;
* ``cond/Merge`` (``cond/Merge_1`` …) per result: ``Merge([false_result, true_result])``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..framework import dtypes, nest
from ..framework.graph import executing_eagerly, graph_of
from ..framework.operation import Operation
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from . import (
    array_ops,
    array_ops_join,
    constant_op,
    control_flow_ops,
    control_flow_prims,
    math_ops,
    math_ops_binary,
    reductions,
)
from .control_flow_context import CondContext

__all__ = ["cond", "case"]


def cond(pred: Any, true_fn: Callable[[], Any] | None = None, false_fn: Callable[[], Any] | None = None,
         strict: bool = False, name: str | None = None, fn1: Any = None, fn2: Any = None) -> Any:
    """``true_fn()`` if ``pred`` else ``false_fn()``, as one dataflow graph (only the taken branch runs).

    Args:
        pred: a bool scalar Tensor.
        true_fn, false_fn: callables returning Tensors (or nested structures of them, the same for both).
        strict: False (default): a singleton list or tuple result is unpacked, as TF 1.x.
        fn1, fn2: TF's deprecated names of ``true_fn`` and ``false_fn``.
    Returns:
        The ``Merge`` outputs, in the branches' structure.
    Raises:
        TypeError: ``pred`` is a Python bool, or a branch is not callable (TF's wording).
        ValueError: a branch returns None, or the branches' structures or dtypes differ (TF's wording).
    """
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if true_fn is None:
        raise TypeError("cond(): true_fn argument required")
    if false_fn is None:
        raise TypeError("cond(): false_fn argument required")
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool")
    if executing_eagerly():  # TF: eagerly, the branch the predicate's value picks runs, and only it
        result = true_fn() if bool(convert_to_tensor(pred)) else false_fn()
        return result if strict else _unpack_if_singleton(result)
    graph = graph_of([pred])
    with graph.as_default(), graph.name_scope(name or "cond"):
        pred = convert_to_tensor(pred)
        p_2, p_1 = control_flow_prims.switch(pred, pred)
        pivot_1 = array_ops.identity(p_1, name="switch_t")
        pivot_2 = array_ops.identity(p_2, name="switch_f")
        pred = array_ops.identity(pred, name="pred_id")
        orig_t, res_t = _build_branch(CondContext(graph, pred, pivot_1, 1), true_fn, "true_fn")
        orig_f, res_f = _build_branch(CondContext(graph, pred, pivot_2, 0), false_fn, "false_fn")
        if not strict:
            orig_t, orig_f = _unpack_if_singleton(orig_t), _unpack_if_singleton(orig_f)
        nest.assert_same_structure(orig_t, orig_f)
        for x, y in zip(res_t, res_f):
            if x.dtype.base_dtype != y.dtype.base_dtype:
                raise ValueError(f"Outputs of true_fn and false_fn must have the same type: {x.dtype.name}, "
                                 f"{y.dtype.name}")
        merges = [control_flow_prims.merge([f, t])[0] for f, t in zip(res_f, res_t)]
        for merge in merges:
            merge.op._cond_pred = pred  # what its gradient switches on (TF finds it through the CondContext)
        merges = nest.pack_sequence_as(orig_t, merges)
        return _unpack_if_singleton(merges) if not strict else merges


def _build_branch(context, fn, what):
    """Call ``fn`` in ``context``; returns (its result, the flat branch tensors)."""
    with context.entered():
        original = fn()
        if original is None:
            raise ValueError(f"{what} must have a return value.")
        flat = [_branch_tensor(context, v) for v in nest.flatten(original)]
    return original, flat


def _branch_tensor(context, value):
    """A branch result as a tensor of the branch: an Operation becomes the pivot after it, an outside
    tensor its Switch output (TF's ``_BuildCondTensor``)."""
    if isinstance(value, Operation):
        return control_flow_ops.with_dependencies([value], context.pivot)
    tensor = convert_to_tensor(value)
    return context.add_value(tensor) if not context.contains(tensor) else tensor


def _unpack_if_singleton(value):
    if isinstance(value, (list, tuple)) and len(value) == 1:
        return value[0]
    return value


def case(pred_fn_pairs: Any, default: Callable[[], Any] | None = None, exclusive: bool = False,
         strict: bool = False, name: str = "case") -> Any:
    """The result of the first ``fn`` whose ``pred`` is true, else ``default()``, as nested ``cond`` s.

    Args:
        pred_fn_pairs: a list of ``(pred, fn)`` pairs (or a dict ``{pred: fn}``), ``pred`` bool scalars.
        default: called when no predicate holds; None: the last pair's ``fn`` is the default.
        exclusive: also check at run time that at most one predicate is true (an ``Assert``).
    Raises:
        TypeError: ``pred_fn_pairs`` is not a list, tuple or dict, or an element is not a pair of
            (bool Tensor, callable) (TF's wording).
        InvalidArgumentError: (at run time, ``exclusive``) ``assertion failed: [Input error: exclusive=True: more
            than 1 conditions (…) evaluated as True:] […]``.
    Source: ``control_flow_ops.case`` / ``_case_helper``.
    """
    pairs = _case_pairs(pred_fn_pairs)
    if not pairs:
        raise ValueError("pred_fn_pairs must not be empty")
    graph = graph_of([p for p, _ in pairs])
    with graph.as_default(), graph.name_scope(name):
        if default is None:
            pairs, default = pairs[:-1], pairs[-1][1]
        preds = [convert_to_tensor(p) for p, _ in pairs]
        if exclusive:
            check = _assert_at_most_one_true([convert_to_tensor(p) for p, _ in _case_pairs(pred_fn_pairs)])
            preds = [control_flow_ops.with_dependencies([check], p) for p in preds]
        fn = default
        for pred, branch in reversed(list(zip(preds, [f for _, f in pairs]))):
            fn = _cond_fn(pred, branch, fn, strict)
        return fn()


def _assert_at_most_one_true(preds):
    """TF's ``_assert_at_most_n_true`` with n = 1 and its message."""
    stacked = array_ops_join.stack(preds, name="preds_c")
    count = reductions.reduce_sum(math_ops.cast(stacked, dtypes.int32), name="num_true_conds")
    condition = math_ops_binary.less_equal(count, constant_op.constant(1, name="n_true_conds"))
    names = ", ".join(p.name for p in preds)
    message = f"Input error: exclusive=True: more than 1 conditions ({names}) evaluated as True:"
    return control_flow_ops.Assert(condition, [message, stacked], summarize=len(preds))


def _cond_fn(pred, true_fn, false_fn, strict):
    return lambda: cond(pred, true_fn, false_fn, strict=strict)


def _case_pairs(pred_fn_pairs):
    if isinstance(pred_fn_pairs, dict):
        pairs = list(pred_fn_pairs.items())
    elif isinstance(pred_fn_pairs, (list, tuple)):
        pairs = list(pred_fn_pairs)
    else:
        raise TypeError("fns must be a list, tuple, or dict")
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("Each entry in pred_fn_pairs must be a 2-tuple")
        pred, fn = pair
        if not isinstance(pred, Tensor) or pred.dtype.base_dtype.name != "bool":
            raise TypeError(f"pred must be Tensor of type bool: {getattr(pred, 'name', pred)}")
        if not callable(fn):
            raise TypeError(f"fn for pred {pred.name} must be callable.")
    return pairs
