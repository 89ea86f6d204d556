"""``gradients``: reverse-mode differentiation by adding backward ops to the graph.

Source: ``tensorflow/python/ops/gradients_util.py`` (``_GradientsHelper``).
Algorithm: find the ops between ``xs`` and ``ys``; count, for each, how many of
its consumers lie on a path to ``ys``; walk back from ``ys`` in that order,
summing the gradients arriving at each tensor (``AddN``) and calling the
gradient function registered for the op type (``RegisterGradient``). Ops
declared ``NotDifferentiable``, tensors in ``stop_gradients`` and integer
tensors pass no gradient. Backward ops are named ``gradients/<op>_grad/...``. A
``while_loop`` is one node of this walk, differentiated by :mod:`dfcore.ops.while_grad`
(a backward loop); ``cond`` s are differentiated op by op (``Merge`` ↔ ``Switch``).
"""

import collections
import contextlib

from ..framework import dtypes, registry
from ..framework.graph import graph_of
from ..framework.tensor_conversion import convert_to_tensor
from . import array_ops, math_ops, while_grad


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None):
    """Symbolic partial derivatives of ``sum(ys)`` with respect to each of ``xs``.

    Args:
        ys: a Tensor or list of Tensors.
        xs: a Tensor, Variable or list of them.
        grad_ys: optional initial gradients, one per y (default: ones of y's shape).
        colocate_gradients_with_ops: create each op's gradient (and the sum of its output gradients) with
            ``colocate_with(op)``, so it is placed on the op's device whatever the device scope; the initial
            gradient goes with its y and the sum of each x's gradients with x (TF's ``_maybe_colocate_with``
            in ``gradients_util.py``).
        stop_gradients: Tensors treated as constants.
    Returns:
        A list with one Tensor per x, or None where x does not affect ys.
    Raises:
        LookupError: an op on the path has no registered gradient.
        ValueError: ``grad_ys`` does not match ``ys`` in length.
    """
    ys = _as_list(ys)
    xs = _as_list(xs)
    graph = graph_of(ys + xs)
    with graph.as_default():
        ys = [convert_to_tensor(y) for y in ys]
        xs = [convert_to_tensor(x, as_ref=True) for x in xs]
        stops = {convert_to_tensor(t).op for t in _as_list(stop_gradients or [])}
        if grad_ys is None:
            grad_ys = [None] * len(ys)
        grad_ys = _as_list(grad_ys)
        if len(grad_ys) != len(ys):
            raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
        with graph.name_scope(name):
            return _backprop(graph, ys, xs, grad_ys, stops, colocate=colocate_gradients_with_ops)


def _as_list(value):
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _default_grad_y(y, index):
    """Ones of ``y``'s shape, as TF's ``Fill(Shape(y), 1)`` named ``grad_ys_<index>``: the shape is a constant when
    static (else a ``Shape`` op, placed with ``y``), so ``y`` itself is not copied to the gradients' device."""
    if y.shape.is_fully_defined():
        dims = array_ops.constant_op.constant(y.shape.as_list(), dtypes.int32, name="Shape")
    else:
        dims = array_ops.shape(y)
    return array_ops.fill(dims, array_ops.constant_op.constant(1, y.dtype.base_dtype), name=f"grad_ys_{index}")


def _backprop(graph, ys, xs, grad_ys, stops, boundary=frozenset(), colocate=False):
    """The gradient walk; ``boundary``: ops whose inputs are not followed (a loop body's inputs); ``colocate``:
    see ``colocate_gradients_with_ops``."""
    loops: dict = {}
    between = _ops_between([x.op for x in xs], [_producer(y, loops) for y in ys], loops, boundary)
    pending = collections.Counter()
    for node in between:
        for tensor in _inputs(node, boundary):
            producer = _producer(tensor, loops)
            if producer in between:
                pending[producer] += 1
    grads = collections.defaultdict(list)
    for y, grad_y in zip(ys, grad_ys):
        if grad_y is None:
            with _maybe_colocate_with(graph, y.op, colocate):
                grad_y = _default_grad_y(y, len(grads))
        grads[y].append(convert_to_tensor(grad_y, dtype=y.dtype.base_dtype))
    ready = collections.deque(sorted({_producer(y, loops) for y in ys if pending[_producer(y, loops)] == 0},
                                     key=lambda op: op._id))
    seen = set(ready)
    while ready:
        op = ready.popleft()
        with _maybe_colocate_with(graph, op, colocate):
            out_grads = [_aggregate(grads.get(t)) for t in op.outputs]
            in_grads = None
            if any(g is not None for g in out_grads) and op not in stops and op not in boundary:
                in_grads = _node_gradient(graph, op, out_grads)
        if in_grads is not None:
            for tensor, grad in zip(op.inputs, in_grads):
                if grad is not None and _differentiable(tensor):
                    grads[tensor].append(grad)
        for tensor in _inputs(op, boundary):
            producer = _producer(tensor, loops)
            if producer in between:
                pending[producer] -= 1
                if pending[producer] == 0 and producer not in seen:
                    seen.add(producer)
                    ready.append(producer)
    aggregated = []
    for x in xs:
        with _maybe_colocate_with(graph, x.op, colocate):
            aggregated.append(_aggregate(grads.get(x)))
    return aggregated


def _maybe_colocate_with(graph, op, colocate):
    """``graph.colocate_with(op, ignore_existing=True)`` when ``colocate`` (and ``op`` is an Operation, not a
    whole while loop); else no scope."""
    if colocate and not isinstance(op, while_grad.LoopNode):
        return graph.colocate_with(op, ignore_existing=True)
    return contextlib.nullcontext()


def _node_gradient(graph, op, out_grads):
    """The input gradients of an op (its registered gradient) or of a whole while loop; None: not differentiable."""
    if isinstance(op, while_grad.LoopNode):
        def backprop(ys, xs, grad_ys, boundary):
            return _backprop(graph, ys, xs, grad_ys, set(), boundary)

        with graph.name_scope(f"{op.context.scope.rstrip('/')}_grad"):
            return while_grad.loop_gradient(op, out_grads, backprop)
    grad_fn = registry.gradient_function(op.type)
    if grad_fn is None:
        return None
    out_grads = [g if g is not None or not _differentiable(t) else zeros_for_output(op, i)
                 for i, (g, t) in enumerate(zip(out_grads, op.outputs))]
    with graph.name_scope(f"{op.name}_grad"):
        in_grads = _as_list(grad_fn(op, *out_grads))
    if len(in_grads) != len(op.inputs):
        raise ValueError(
            f"Num gradients {len(in_grads)} generated for op {op.name} do not match num inputs "
            f"{len(op.inputs)}"
        )
    return in_grads


def op_gradients(op, out_grads):
    """The gradients of ``op``'s inputs (a list, None where none flows) from those of its outputs
    (``out_grads``, None where none arrived), by its registered gradient function; None when ``op`` is
    not differentiable. ``GradientTape`` (:mod:`dfcore.eager.backprop`) replays recorded ops with it.

    Raises:
        LookupError: no gradient is registered for ``op.type``.
    """
    return _node_gradient(op.graph, op, out_grads)


def aggregate_gradients(grads):
    """The sum of a list of gradients of one tensor (``AddN`` for several); None for none."""
    return _aggregate(grads)


def is_differentiable(tensor):
    """Whether a gradient flows to ``tensor``: floating dtypes only (integers get none, as in TF)."""
    return _differentiable(tensor)


_ZEROS_FOR_OUTPUT: dict = {}


def register_zeros_for_output(op_type):
    """Decorator registering ``fn(op, index)``: the zero gradient of output ``index`` of an ``op_type`` op
    (default ``zeros_like`` of the output; a ``Switch`` output may be dead, so its zeros must be too)."""

    def _register(fn):
        _ZEROS_FOR_OUTPUT[op_type] = fn
        return fn

    return _register


def zeros_for_output(op, index):
    """The zero gradient of ``op.outputs[index]`` (see :func:`register_zeros_for_output`)."""
    fn = _ZEROS_FOR_OUTPUT.get(op.type)
    return fn(op, index) if fn is not None else array_ops.zeros_like(op.outputs[index])


def _producer(tensor, loops):
    """The node that computes ``tensor``: its op, or the whole while loop for a loop's Exit."""
    loop = while_grad.loop_node_of_exit(tensor, loops)
    return loop if loop is not None else tensor.op


def _inputs(node, boundary):
    return () if node in boundary else node.inputs


def _consumers(tensor, loops):
    for op in tensor._consumers:
        loop = while_grad.loop_node_of_enter(op, loops)
        yield loop if loop is not None else op


def _ops_between(from_ops, to_ops, loops, boundary=frozenset()):
    """Nodes reachable forward from ``from_ops`` (through data edges) and backward from ``to_ops`` (not
    past ``boundary``); a while loop counts as one node (:class:`~dfcore.ops.while_grad.LoopNode`)."""
    reached = set()
    stack = list(from_ops)
    while stack:
        op = stack.pop()
        if op in reached:
            continue
        reached.add(op)
        for tensor in op.outputs:
            stack.extend(_consumers(tensor, loops))
    between = set()
    stack = list(to_ops)
    while stack:
        op = stack.pop()
        if op in between or op not in reached:
            continue
        between.add(op)
        stack.extend(_producer(t, loops) for t in _inputs(op, boundary))
    return between


def _differentiable(tensor):
    return tensor.dtype.base_dtype.is_floating


def _aggregate(grads):
    if not grads:
        return None
    if len(grads) == 1:
        return grads[0]
    return math_ops.add_n(grads)
