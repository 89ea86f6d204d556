"""``tf.while_loop`` (TF 1.x), built as ``Enter``/``Merge``/``Switch``/``Exit``/``NextIteration`` dataflow.

Source: ``tensorflow/python/ops/control_flow_ops.py`` (``while_loop``, ``WhileContext.BuildLoop``,
``_EnforceShapeInvariant``) and Yu et al., EuroSys 2018, §3. In name scope ``while``, per loop
variable ``x``:

    Enter(x, frame "while/while_context") → Merge(Enter, NextIteration) → Switch(Merge, LoopCond)
    Switch:1 → Identity (the body's input) … body … → NextIteration → back to the Merge
    Switch:0 → Exit (the loop's result)

The predicate is built on the Merges, ``LoopCond`` marks it; tensors from outside the
loop enter as constant ``Enter`` s (:class:`~dfcore.ops.control_flow_context.WhileContext`).
``maximum_iterations`` adds an iteration counter as TF does (the loop simply stops).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..framework import nest
from ..framework.graph import executing_eagerly, graph_of
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape, as_shape
from . import array_ops, constant_op, control_flow_prims, math_ops
from .control_flow_context import WhileContext

__all__ = ["while_loop"]


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, parallel_iterations: int = 10, back_prop: bool = True,
               swap_memory: bool = False, name: str | None = None, maximum_iterations: Any = None,
               return_same_structure: bool = False) -> Any:
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``, as one dataflow loop.

    Args:
        cond: returns a bool scalar Tensor from the loop variables.
        body: returns new loop variables, in the structure of ``loop_vars``.
        loop_vars: a Tensor, or a (nested) tuple/list/dict of Tensors.
        shape_invariants: per loop variable, a shape it keeps across iterations (less specific than its
            initial shape lets it change); default: its initial shape.
        parallel_iterations: how many iterations may run at once (> 0).
        back_prop: whether gradients may flow through the loop.
        swap_memory: accepted (GPU-to-host swapping of saved values; nothing to swap on numpy).
        maximum_iterations: stop after this many iterations (an int32/int64 scalar) even if ``cond`` holds.
        return_same_structure: True: a single loop variable comes back in its list.
    Returns:
        The loop variables after the last iteration (the ``Exit`` outputs), in their structure.
    Raises:
        TypeError: ``cond``/``body`` not callable, ``parallel_iterations`` not positive (TF's wording).
        ValueError: no loop variables, a non-scalar ``maximum_iterations``, a body changing a loop
            variable's structure, or its shape beyond its shape invariant (TF's ``… has shape … after
            one iteration`` message).
    """
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    if loop_vars is None or (nest.is_sequence(loop_vars) and not nest.flatten(loop_vars)):
        raise ValueError("No loop variables provided")
    del swap_memory
    try_to_pack = (isinstance(loop_vars, (list, tuple)) and len(loop_vars) == 1
                   and not return_same_structure) or not nest.is_sequence(loop_vars)
    if not nest.is_sequence(loop_vars):
        loop_vars = [loop_vars]
        shape_invariants = [shape_invariants] if shape_invariants is not None else None
    if executing_eagerly():  # TF: eagerly, a while_loop is a Python loop over the ops of cond and body
        return _eager_loop(cond, body, loop_vars, maximum_iterations, try_to_pack)
    graph = graph_of(nest.flatten(loop_vars))
    with graph.as_default(), graph.name_scope(name or "while"):
        if maximum_iterations is not None:
            cond, body, loop_vars, shape_invariants = _with_counter(cond, body, loop_vars, shape_invariants,
                                                                    maximum_iterations, try_to_pack)
        context = WhileContext(graph, graph.unique_name("while_context"), parallel_iterations, back_prop)
        exits = build_loop(graph, context, cond, body, loop_vars, shape_invariants)
        result = nest.pack_sequence_as(loop_vars, exits)
        if maximum_iterations is not None:
            return result[1]
        return result[0] if try_to_pack else result


def _with_counter(cond, body, loop_vars, shape_invariants, maximum_iterations, try_to_pack):
    """TF's rewrite for ``maximum_iterations``: an iteration counter as an extra first loop variable."""
    limit = convert_to_tensor(maximum_iterations, name="maximum_iterations")
    if limit.shape.ndims != 0:
        raise ValueError(f"maximum_iterations must be a scalar, saw shape: {limit.shape}")
    counter = constant_op.constant(0, dtype=limit.dtype, name="iteration_counter")
    if try_to_pack:
        loop_vars = loop_vars[0]
        shape_invariants = shape_invariants[0] if shape_invariants is not None else None
        user_cond, user_body = cond, body
    else:
        def user_cond(lv):
            return cond(*lv)

        def user_body(lv):  # the body may return a tuple for list loop_vars (and the reverse), as without a counter
            out = body(*lv)
            if len(lv) == 1 and not isinstance(out, (list, tuple)):
                out = [out]
            return type(lv)(out) if isinstance(out, (list, tuple)) else out
    invariants = None if shape_invariants is None else (TensorShape([]), shape_invariants)
    return ((lambda i, lv: math_ops.logical_and(i < limit, user_cond(lv))),
            (lambda i, lv: (i + 1, user_body(lv))), (counter, loop_vars), invariants)


def build_loop(graph: Any, context: WhileContext, cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, enforce_shape_invariant: bool = True) -> list:
    """Build the loop in ``context`` (a :class:`WhileContext`, or the gradient's own); returns the flat Exits.
    ``enforce_shape_invariant=False`` (gradient loops, as TF) skips the shape check of the body's results."""
    flat = [convert_to_tensor(v) for v in nest.flatten(loop_vars)]
    loop_vars = nest.pack_sequence_as(loop_vars, flat)
    invariants = _flat_invariants(loop_vars, flat, shape_invariants)
    if context.outer_context is not None:  # the initial values, as seen in the enclosing cond or loop
        flat = [context.outer_context.add_value(x) for x in flat]
    outer_controls = graph._control_dependencies_for_inputs({x.op for x in flat})
    with graph.control_dependencies(None):
        enters = [control_flow_prims.enter(x, context.name, is_constant=False,
                                           parallel_iterations=context.parallel_iterations) for x in flat]
    for x, e, shape in zip(flat, enters, invariants):
        if shape is not None:
            if not _shape_less_than_or_equal(x.shape, shape):
                raise ValueError(
                    f"The shape invariant specified for {x.name} is not compatible with the initial shape of the "
                    f"loop variable. It enters the loop with shape {x.shape}, but the specified shape invariant "
                    f"is {shape}.")
            e._shape = shape
        e.op._add_control_inputs(outer_controls)  # TF: the loop starts after the caller's control dependencies
        e.op._control_flow_context = context
        e.op._while_context = context
    context.loop_enters = enters
    with context.entered():
        merges = [control_flow_prims.merge([e, e])[0] for e in enters]
        context.pivot = merges[0]
        predicate = convert_to_tensor(cond(*_packed(loop_vars, merges)))
        pivot = context.loop_cond = control_flow_prims.loop_cond(predicate, name="LoopCond")
        switches = [control_flow_prims.switch(m, pivot) for m in merges]
        body_vars = context.body_inputs = [array_ops.identity(s[1]) for s in switches]
        context.pivot = body_vars[0]
        packed = _packed(loop_vars, body_vars)
        result = body(*packed)
        if len(packed) == 1 and not isinstance(result, (list, tuple)):
            result = [result]
        nest.assert_same_structure(list(packed), list(result))
        nexts = context.body_results = [context.add_value(convert_to_tensor(v)) for v in nest.flatten(list(result))]
        for m, v in zip(merges, nexts):
            if v.dtype.base_dtype != m.dtype.base_dtype:
                raise TypeError(f"Input 1 of node {m.op.name} was passed {v.dtype.name} from {v.name} incompatible "
                                f"with expected {m.dtype.name}.")
            nxt = control_flow_prims.next_iteration(v)
            if enforce_shape_invariant:
                _enforce_shape_invariant(m, nxt)
            m.op._update_input(1, nxt)
        exits = [control_flow_prims.exit(s[0]) for s in switches]
    context.loop_exits = exits
    for x, e in zip(exits, merges):
        x._shape = e.shape
        x.op._while_context = context
    return exits


def _packed(loop_vars, flat):
    packed = nest.pack_sequence_as(loop_vars, flat)
    return list(packed) if isinstance(packed, (list, tuple)) else [packed]


def _flat_invariants(loop_vars, flat, shape_invariants):
    """One shape (or None) per flat loop variable: ``shape_invariants`` walked in ``loop_vars``' structure,
    a TensorShape (or list of dims) standing for each variable."""
    if shape_invariants is None:
        return [None] * len(flat)
    shapes = []

    def walk(template, value):
        if not nest.is_sequence(template):
            shapes.append(as_shape(value))
            return
        items = [value[k] for k in sorted(value)] if isinstance(value, dict) else list(value)
        children = nest.flatten_once(template)
        if len(items) != len(children):
            raise ValueError(f"shape_invariants {shape_invariants} do not match the structure of loop_vars "
                             f"{loop_vars}")
        for child, item in zip(children, items):
            walk(child, item)

    walk(loop_vars, shape_invariants)
    return shapes


def _shape_less_than_or_equal(shape1: TensorShape, shape2: TensorShape) -> bool:
    """True if ``shape1`` is at least as specific as ``shape2`` (TF's ``_ShapeLessThanOrEqual``)."""
    if shape2.ndims is None:
        return True
    if shape1.ndims != shape2.ndims:
        return False
    return all(d2 is None or d1 == d2 for d1, d2 in zip(shape1.as_tuple(), shape2.as_tuple()))


def _enforce_shape_invariant(merge_var, next_var):
    if not _shape_less_than_or_equal(next_var.shape, merge_var.shape):
        input_t = merge_var.op.inputs[0].op.inputs[0]
        raise ValueError(
            f"Input tensor '{input_t.name}' enters the loop with shape {input_t.shape}, but has shape "
            f"{next_var.shape} after one iteration. To allow the shape to vary across iterations, use the "
            "`shape_invariants` argument of tf.while_loop to specify a less-specific shape.")


def _eager_loop(cond, body, loop_vars, maximum_iterations, try_to_pack):
    """``while_loop`` while executing eagerly: run ``body`` while ``cond`` holds (and fewer than
    ``maximum_iterations`` times), as TF's eager ``while_loop`` does."""
    iterations = 0
    while maximum_iterations is None or iterations < int(maximum_iterations):
        if not bool(cond(*loop_vars)):
            break
        loop_vars = body(*loop_vars)
        if not isinstance(loop_vars, (list, tuple)):
            loop_vars = [loop_vars]
        iterations += 1
    return loop_vars[0] if try_to_pack else loop_vars
