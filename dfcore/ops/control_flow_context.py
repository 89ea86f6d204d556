"""Control-flow contexts: what a ``cond`` branch or ``while_loop`` body does to the ops built in it.

Source: ``tensorflow/python/ops/control_flow_ops.py`` (``ControlFlowContext``,
``CondContext``, ``WhileContext``: ``AddValue``, ``AddOp``). While a context is active
(:meth:`ControlFlowContext.entered`), :meth:`dfcore.framework.graph.Graph.create_op` asks it

* for every input (:meth:`add_value`): a tensor built outside the context enters through
  a ``Switch`` on the branch's predicate (cond; so an untaken branch runs dead), or a
  constant ``Enter`` into the loop's frame (while; a loop invariant), made once per
  tensor and context, in the enclosing context (so nested contexts chain);
* for every new op (:meth:`add_op`): an op without inputs (and no control input from inside
  the context) gets a control input from the
  context's *pivot* (``cond/switch_t``, ``while/Identity``…) so it runs in the branch or
  iteration, not once in the root frame; inside a loop, a control input from outside the loop
  is dropped (the loop's ``Enter`` s wait for the control dependencies active when it was built).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..framework.operation import Operation
from ..framework.tensor import Tensor
from . import control_flow_prims


class ControlFlowContext:
    """The base of :class:`CondContext` and :class:`WhileContext`."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.outer_context: ControlFlowContext | None = graph._control_flow_context
        self._external: dict[Tensor, Tensor] = {}
        self.pivot: Tensor | None = None

    @contextlib.contextmanager
    def entered(self) -> Iterator[ControlFlowContext]:
        """Make this the graph's active context for the ``with`` block."""
        saved = self.graph._control_flow_context
        self.graph._control_flow_context = self
        try:
            yield self
        finally:
            self.graph._control_flow_context = saved

    def contains(self, tensor: Tensor) -> bool:
        """True if ``tensor`` was built in this context or one nested in it."""
        context = tensor.op._control_flow_context
        while context is not None:
            if context is self:
                return True
            context = context.outer_context
        return False

    def add_value(self, tensor: Tensor) -> Tensor:
        """``tensor`` as seen inside this context (see the module docstring)."""
        if self.contains(tensor) or tensor in self._external.values():
            return tensor
        inner = self._external.get(tensor)
        if inner is None:
            with self.graph.control_dependencies(None):
                self.graph._control_flow_context = self.outer_context  # restored when the block ends
                inner = self._bring_in(tensor)
            self._external[tensor] = inner
        return inner

    def _bring_in(self, tensor: Tensor) -> Tensor:
        raise NotImplementedError

    def contains_op(self, op: Operation) -> bool:
        """True if ``op`` was built in this context (or one nested in it), or brought a value into it."""
        return bool(op.outputs) and (self.contains(op.outputs[0]) or op.outputs[0] in self._external.values())

    def add_op(self, op: Operation) -> None:
        """Drop control inputs from outside the enclosing loop (TF's ``_RemoveExternalControlEdges``: the loop's
        Enters carry them), then give an input-less op a control input from the pivot unless a control input
        already ties it to this context."""
        loop: ControlFlowContext | None = self
        while loop is not None and not isinstance(loop, WhileContext):
            loop = loop.outer_context
        if loop is not None:
            for control in op.control_inputs:
                if not loop.contains_op(control) and control._control_flow_context is not loop:
                    op._remove_control_input(control)
        if not op.inputs and self.pivot is not None and not any(self.contains_op(c) for c in op.control_inputs):
            op._add_control_input(self.pivot.op)  # an op without inputs runs in the branch or iteration


class CondContext(ControlFlowContext):
    """One branch of a ``cond``: ``pred`` (the ``cond/pred_id`` tensor), ``pivot`` (``switch_t`` or
    ``switch_f``) and ``branch`` (1: true, 0: false)."""

    def __init__(self, graph: Any, pred: Tensor, pivot: Tensor, branch: int) -> None:
        super().__init__(graph)
        self.pred = pred
        self.pivot = pivot
        self.branch = branch

    def _bring_in(self, tensor):
        switch = control_flow_prims.switch(tensor, self.pred)
        switch[0].op._cond_context = self  # its output ``branch`` belongs to this branch (dfcore.ops.while_grad)
        return switch[self.branch]


class WhileContext(ControlFlowContext):
    """The body (and predicate) of one ``while_loop``: frame ``name``, ``parallel_iterations``, ``back_prop``;
    ``pivot`` is the first loop variable's ``Merge`` while the predicate is built, its ``Identity`` after."""

    def __init__(self, graph: Any, name: str, parallel_iterations: int, back_prop: bool) -> None:
        super().__init__(graph)
        self.name = name
        self.scope = graph.get_name_scope() + "/"
        self.parallel_iterations = parallel_iterations
        self.back_prop = back_prop
        self.loop_enters: list[Tensor] = []  # per loop variable: its Enter, Merge-side ...
        self.loop_exits: list[Tensor] = []  # ... its Exit,
        self.body_inputs: list[Tensor] = []  # ... the body's input (Identity of the Switch's true output)
        self.body_results: list[Tensor] = []  # ... and the body's result (the NextIteration's input)
        self.loop_cond: Tensor | None = None  # the LoopCond output
        self.counter_exit: Tensor | None = None  # the iteration counter the gradient adds (dfcore.ops.while_grad)
        self.counter_ops: tuple[Any, Any] = (None, None)

    def constant_enters(self) -> list[Tensor]:
        """The loop-invariant ``Enter`` s of this loop, in creation order."""
        return list(self._external.values())

    def _bring_in(self, tensor):
        enter = control_flow_prims.enter(tensor, self.name, is_constant=True,
                                         parallel_iterations=self.parallel_iterations)
        enter.op._while_context = self
        return enter
