"""Gradients through ``tf.while_loop``: a backward loop that runs the forward iterations in reverse.

Source: TF's ``control_flow_state.py`` (``_GradLoopState``: ``AddForwardLoopCounter``,
``AddBackpropLoopCounter``, ``AddForwardAccumulator``/``AddBackpropAccumulatedValue``,
``AddBackpropAccumulator``) and ``control_flow_grad.py``; Yu et al., EuroSys 2018, §5.1.
To :func:`dfcore.ops.gradients_impl.gradients` a whole loop is one node (:class:`LoopNode`):
its inputs are what its ``Enter`` s take in, its outputs its ``Exit`` s. Its gradient:

* the forward loop gets an iteration counter (``f_count``: Enter 0, +1 per iteration, Exit N);
* a backward loop (``b_count`` from N down to 0) carries the gradient of each float loop
  variable and an accumulator per captured (loop-invariant) tensor; its body is the gradient
  of the forward body, built by the ordinary ``gradients`` walk inside a :class:`GradWhileContext`;
* every forward value that body needs is pushed on a stack (``StackPushV2``) in each forward
  iteration and popped (``StackPopV2``) in the matching backward iteration, last first; a push
  waits for its iteration's counter and the counter's increment waits for the pushes (pops and
  the decrement likewise, through ``ControlTrigger`` s that are never dead), so stack order is
  iteration order whatever ``parallel_iterations``;
* a value inside a ``cond`` branch is pushed only in iterations where the branch ran; its pop is
  guarded by the same branch of the popped predicate, so it runs (and pops) only then;
* the gradient of a loop-invariant sums over iterations (the accumulator's ``Exit``).
"""

from __future__ import annotations

from typing import Any

from ..framework import registry
from ..framework.tensor import Tensor
from . import array_ops, constant_op, control_flow_prims, math_ops, stack_ops
from .control_flow_context import CondContext, WhileContext


class LoopNode:
    """A forward while loop seen as one node by the gradient walk."""

    def __init__(self, context: WhileContext) -> None:
        self.context = context
        self.name = context.name
        self.enters = list(context.loop_enters) + list(context.constant_enters())
        self.inputs = tuple(e.op.inputs[0] for e in self.enters)
        self.outputs = list(context.loop_exits)
        self._id = min(e.op._id for e in self.outputs)


def loop_node_of_exit(tensor: Tensor, cache: dict) -> LoopNode | None:
    """The :class:`LoopNode` whose ``Exit`` produced ``tensor``, else None."""
    context = getattr(tensor.op, "_while_context", None)
    if context is None or registry.control_flow_kind(tensor.op.type) != "exit":
        return None
    return _cached(context, cache)


def loop_node_of_enter(op: Any, cache: dict) -> LoopNode | None:
    """The :class:`LoopNode` an ``Enter`` op feeds, else None."""
    context = getattr(op, "_while_context", None)
    if context is None or registry.control_flow_kind(op.type) != "enter" or not context.loop_exits:
        return None  # not a loop's Enter, or a loop still being built
    return _cached(context, cache)


def _cached(context, cache):
    if context not in cache:
        cache[context] = LoopNode(context)
    return cache[context]


class GradWhileContext(WhileContext):
    """The backward loop of ``forward``: a forward value used here is pushed there and popped here."""

    def __init__(self, graph: Any, name: str, forward: WhileContext) -> None:
        super().__init__(graph, name, forward.parallel_iterations, back_prop=False)
        self.forward = forward
        self.pops: list[Any] = []
        self._popped: dict[Tensor, Tensor] = {}
        self._guards: dict[Any, Tensor] = {}

    def add_value(self, tensor: Tensor) -> Tensor:
        forward = self.forward
        if (getattr(tensor.op, "_while_context", None) is forward and tensor.op.type == "Enter"
                and tensor.op.get_attr("is_constant")):
            return super().add_value(tensor.op.inputs[0])  # a loop invariant: enter it here too
        if not (forward.contains(tensor) or tensor in forward.loop_enters):
            return super().add_value(tensor)
        popped = self._popped.get(tensor)
        if popped is None:
            popped = self._popped[tensor] = self._push_and_pop(tensor)
        return popped

    def _push_and_pop(self, value):
        graph, forward = self.graph, self.forward
        counter_identity, forward_sync = forward.counter_ops
        branch = _cond_branch_of(value, forward)
        guard = self._branch_guard(branch) if branch is not None else None
        saved = graph._control_flow_context
        try:
            with graph.control_dependencies(None), graph.colocate_with(value.op):
                graph._control_flow_context = forward.outer_context
                stack = stack_ops.stack_v2(-1, value.dtype, stack_name=f"{value.op.name}/f_acc", name="f_acc")
            graph._control_flow_context = forward
            with graph.control_dependencies([counter_identity]), graph.colocate_with(value.op):
                push = stack_ops.stack_push_v2(stack, value)
            forward_sync._add_control_input(push.op)
            graph._control_flow_context = self
            controls = [self.pivot] + ([guard] if guard is not None else [])
            with graph.control_dependencies(controls), graph.colocate_with(value.op):
                pop = stack_ops.stack_pop_v2(stack, value.dtype)
        finally:
            graph._control_flow_context = saved
        pop.set_shape(value.shape)
        self.pops.append(pop.op)
        return pop

    def _branch_guard(self, branch):
        """A tensor of this loop that is dead exactly when ``branch`` (a forward CondContext) did not run in the
        matching forward iteration, so a value pushed only when it ran is popped only then."""
        if branch not in self._guards:
            pred = self.add_value(branch.pred)  # popped (and guarded by any enclosing branch)
            saved = self.graph._control_flow_context
            self.graph._control_flow_context = self
            try:
                self._guards[branch] = array_ops.identity(control_flow_prims.switch(pred, pred)[branch.branch],
                                                          name="b_branch")
            finally:
                self.graph._control_flow_context = saved
        return self._guards[branch]


def _cond_branch_of(value, forward):
    """The innermost cond branch (CondContext) inside ``forward`` that ``value`` belongs to, or None."""
    op = value.op
    brought_in = getattr(op, "_cond_context", None)  # a Switch bringing an outside value into a branch
    context = brought_in if brought_in is not None and value.value_index == brought_in.branch else \
        op._control_flow_context
    while context is not None and context is not forward:
        if isinstance(context, CondContext):
            return context
        context = context.outer_context
    return None


def _forward_counter(context: WhileContext) -> Tensor:
    """Add the iteration counter to a forward loop once (TF's ``AddForwardLoopCounter``); its Exit."""
    if context.counter_exit is not None:
        return context.counter_exit
    graph = context.graph
    with graph.name_scope(None), graph.name_scope(context.scope):
        with graph.control_dependencies(None):
            graph._control_flow_context = context.outer_context
            zero = constant_op.constant(0, name="f_count/initial")
            enter = control_flow_prims.enter(zero, context.name, parallel_iterations=context.parallel_iterations,
                                             name="f_count")
        enter.op._control_flow_context = context
        with graph.control_dependencies(None), context.entered():
            merge = control_flow_prims.merge([enter, enter], name="f_count")[0]
            out_false, out_true = control_flow_prims.switch(merge, context.loop_cond, name="f_count")
            identity = array_ops.identity(out_true, name="f_count")
            forward_sync = control_flow_prims.control_trigger(name="f_sync")  # after the iteration's pushes
            with graph.control_dependencies([forward_sync]):
                add = math_ops.add(identity, 1, name="f_count")
            merge.op._update_input(1, control_flow_prims.next_iteration(add, name="f_count"))
            context.counter_exit = control_flow_prims.exit(out_false, name="f_count")
    context.counter_ops = (identity, forward_sync)
    return context.counter_exit


def loop_gradient(node: LoopNode, exit_grads: list[Any], backprop: Any) -> list[Any]:
    """Gradients of ``node``'s inputs given its outputs' gradients (None: no gradient).

    ``backprop(ys, xs, grad_ys, boundary)`` is the gradient walk of :mod:`dfcore.ops.gradients_impl`
    restricted to the ops between ``xs`` and ``ys`` that do not lie beyond ``boundary``.
    """
    forward = node.context
    if not forward.back_prop:
        raise ValueError(f"Cannot compute gradients through a while_loop built with back_prop=False "
                         f"({forward.name})")
    from .control_flow_while import build_loop  # gradients_impl imports this module first

    graph = forward.graph
    count = _forward_counter(forward)
    float_vars = [j for j, e in enumerate(forward.loop_enters) if e.dtype.base_dtype.is_floating]
    invariants = [e for e in node.enters[len(forward.loop_enters):] if e.dtype.base_dtype.is_floating]
    grads0 = [exit_grads[j] if exit_grads[j] is not None else array_ops.zeros_like(forward.loop_exits[j])
              for j in float_vars]
    accs0 = [array_ops.zeros_like(e.op.inputs[0]) for e in invariants]
    body_inputs = [forward.body_inputs[j] for j in float_vars]
    body_results = [forward.body_results[j] for j in float_vars]
    context = GradWhileContext(graph, graph.unique_name("while_context"), forward)

    def body(n, *carried):
        grads, accs = list(carried[:len(float_vars)]), list(carried[len(float_vars):])
        xs = body_inputs + invariants
        dxs = backprop(body_results, xs, grads, boundary={x.op for x in xs})
        new_grads = [d if d is not None else array_ops.zeros_like(g) for d, g in zip(dxs, grads)]
        new_accs = [a + d if d is not None else a for a, d in zip(accs, dxs[len(body_inputs):])]
        with graph.control_dependencies(context.pops):
            backward_sync = control_flow_prims.control_trigger(name="b_sync")  # after the iteration's pops
        with graph.control_dependencies([backward_sync]):
            n = math_ops.subtract(n, 1, name="b_count")
        return [n] + new_grads + new_accs

    with graph.name_scope("while"):
        invariants_shapes = ([count.shape] + [forward.loop_enters[j].shape for j in float_vars]
                             + [a.shape for a in accs0])  # the forward loop's shape invariants
        results = build_loop(graph, context, lambda n, *_: math_ops.greater(n, 0), body, [count] + grads0 + accs0,
                             invariants_shapes, enforce_shape_invariant=False)
    in_grads: list[Any] = [None] * len(node.inputs)
    for j, grad in zip(float_vars, results[1:1 + len(float_vars)]):
        in_grads[j] = grad
    offset = len(forward.loop_enters)
    for enter, acc in zip(invariants, results[1 + len(float_vars):]):
        in_grads[offset + node.enters[offset:].index(enter)] = acc
    return in_grads
