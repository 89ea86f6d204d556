"""Run one op now: the eager graph's ``create_op``.

Source: ``tensorflow/python/eager/execute.py`` (``quick_execute``) and the TF Eager paper (Agrawal et al.,
"TensorFlow Eager: a multi-stage, Python-embedded DSL for machine learning", SysML 2019, §4: each op is
dispatched from Python to the same kernels graphs use). Per op, dfcore:

1. builds the :class:`~dfcore.framework.operation.Operation` (its shape function checks the inputs and
   gives the output dtypes, with the errors graph building gives);
2. places it with the placer's rules (:meth:`EagerContext.place`: ``with tf.device`` requests, GPU before
   CPU, an op on a variable goes where the variable is);
3. instantiates its registered kernel (:func:`~dfcore.runtime.partition_compiler.instantiate_kernel`, the
   function partitions use) and runs it on the input values in a one-op variable transaction;
4. returns :class:`~dfcore.eager.eager_tensor.EagerTensor` s and lets active ``GradientTape`` s record it.

There is no second implementation of any op. What eager costs is this per-op Python dispatch, paid again
on every call, and the whole-graph rewrites a ``tf.function`` gets that single ops cannot.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from .. import backends, errors
from ..framework.graph import Graph
from ..framework.operation import Operation
from ..framework.tensor import Tensor
from ..runtime.cancellation import DEFAULT_STEP_TIMEOUT_S
from ..runtime.compiled_partition import CompiledNode
from ..runtime.device_context import device_context
from ..runtime.executor import StepContext
from ..runtime.kernel_errors import kernel_error
from ..runtime.partition_compiler import instantiate_kernel
from ..runtime.step_stats import TimelineLabel
from ..runtime.variable_store import VarRef
from . import tape as tape_lib
from .context import EagerContext
from .eager_tensor import EagerTensor


class EagerGraph(Graph):
    """The default graph while eager execution is on: ``create_op`` executes the op and keeps nothing.

    Name scopes prefix names but do not make them unique (eager ops need no unique names, as in TF), and
    control dependencies are moot (every op has finished before the next starts).
    """

    def __init__(self, ctx: EagerContext) -> None:
        super().__init__()
        self.eager_context = ctx

    def create_op(self, op_type, inputs, attrs=None, name=None):
        """Run an op of ``op_type`` on ``inputs`` (EagerTensors) now; returns its Operation, whose outputs are
        EagerTensors.

        Raises:
            TypeError: an input is a graph tensor (TF: a graph tensor cannot reach an eager op).
            InvalidArgumentError (and the shape function's errors): as in graph building, and the kernel's
                errors, TF's wording with ``[[node <name>]]``.
        """
        for tensor in inputs:
            if not getattr(tensor, "_is_eager", False):
                kind = "graph tensor" if isinstance(tensor, Tensor) else type(tensor).__name__
                raise TypeError(f"An op outside of the function building code is being passed a {kind}: "
                                f"{tensor!r} cannot be an input of the eagerly executed op '{op_type}'.")
        device = ""
        if self._colocation_stack:
            target = self._colocation_stack[-1]
            device = target.assigned_device or target.device
        op_name = name or op_type
        if op_name.endswith("/"):
            op_name = op_name[:-1]
        elif self._name_stack:
            op_name = f"{self._name_stack}/{op_name}"
        op = Operation(self, op_type, op_name, inputs, attrs or {}, (), device)
        if not self._colocation_stack:
            self._apply_device_functions(op)
        return execute(self.eager_context, op)

    def unique_name(self, name, mark_as_used=True):
        """``name`` under the current name scope, not made unique (eager op names are labels only)."""
        return f"{self._name_stack}/{name}" if self._name_stack else name

    def get_operations(self):
        return []

    def __repr__(self):
        return "<dfcore eager context>"


def execute(ctx: EagerContext, op: Operation) -> Operation:
    """Place and run ``op`` (built in the eager graph) on its inputs' values; set its outputs to EagerTensors.

    Raises:
        OpError: the kernel failed (no variable changed); InvalidArgumentError for a bad placement request.
    """
    device = ctx.place(op)
    op._assigned_device = device
    ctx.ops_executed += 1
    record = ctx.device_set.device(device)
    context = device_context(record)
    if context is None:
        return _execute_on(ctx, op, device, record.backend)
    with context.scope():  # a real GPU: its kernels run, and its inputs land, on its CUDA device
        return _execute_on(ctx, op, device, record.backend)


def _execute_on(ctx: EagerContext, op: Operation, device: str, backend: str) -> Operation:
    compute, needs_context, is_async = instantiate_kernel(op, op.type, op.name, backend=backend)
    receiver = getattr(backends.get(backend), "receiver", None)
    place = receiver() if receiver is not None else functools.partial(backends.transfer, src=None, dst=backend)
    args = [place(t._value) for t in op._inputs]
    if needs_context:
        step_id = next(ctx.step_ids)
        txn = ctx.variables.begin()
        step = StepContext(txn, ctx.resources, step_id, None, device)
        try:
            result = _call_async(compute, step, args) if is_async else compute(step, *args)
        except BaseException as error:
            txn.abort()
            ctx.resources.end_step(step_id, committed=False)
            raise _op_error(error, op, args, device, needs_context, is_async) from error
        txn.commit()
        ctx.resources.end_step(step_id, committed=True)
    else:
        try:
            result = compute(*args)
        except BaseException as error:
            raise _op_error(error, op, args, device, needs_context, is_async) from error
    specs = op._outputs
    if len(specs) == 1:
        values = (result,)
    else:
        values = () if not specs else tuple(result)
    ids = ctx.tensor_ids
    outputs: list[Tensor] = [EagerTensor(value, spec._dtype, device, op, i, next(ids),
                           spec._shape if isinstance(value, VarRef) else None)
               for i, (value, spec) in enumerate(zip(values, specs))]
    op._outputs = outputs
    if not tape_lib.record_operation(op):
        op._inputs = []  # nothing will differentiate through it: keep no history alive
    return op


def _call_async(compute, step, args):
    """Run an asynchronous kernel (``compute(ctx, done, *args)``) and wait for its ``done``, with the step
    deadline."""
    finished = threading.Event()
    box: list[Any] = [None, None]

    def done(error, value=None):
        box[0], box[1] = error, value
        finished.set()

    compute(step, done, *args)
    if not finished.wait(DEFAULT_STEP_TIMEOUT_S):
        raise errors.DeadlineExceededError(None, None, "Timed out waiting for an asynchronous eager op.")
    if box[0] is not None:
        raise box[0]
    return box[1]


def _op_error(error, op, args, device, needs_context, is_async):
    if not isinstance(error, Exception):
        return error
    node = CompiledNode(op.name, op.type, lambda *a: None, [], 0, len(op._outputs), needs_context, is_async, op,
                        TimelineLabel(op.name, op.type))
    return kernel_error(error, node, args, device)
