"""The call frame of one ``Session.run`` step, and the ``_Arg``/``_Retval`` kernels that use it.

Source: TF's ``FunctionCallFrame`` (``core/framework/function.cc``), the ``_Arg`` and
``_Retval`` kernels (``core/kernels/function_ops.cc``) and ``DirectSession::RunInternal``
(``core/common_runtime/direct_session.cc``). A normal run hands its feeds to the
executors as the frame's arguments and takes its fetches back as the frame's return
values: an ``_Arg`` node (attr ``index``) outputs argument ``index``, a ``_Retval`` node
stores its input as return value ``index``. Nothing goes through the rendezvous, so
a feed or fetch costs no rendezvous key and no copy. A fetched reference (a ``VariableV2`` fetched as is, no
``Identity``) is read when the step has finished, from the step's transaction: the value at the end of the step,
as TF 1.x's fetch of a ref reads the buffer the step's ``Assign`` s updated in place (``_, step =
sess.run([train_op, global_step])`` gives the incremented step); a ``read_value()``/``tf.identity(v)`` stays
the value its op read. ``partial_run`` keeps the
client-terminated ``_Recv``/``_Send`` path (:mod:`dfcore.runtime.partial_run`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import errors
from ..framework import registry
from .variable_store import VarRef


class CallFrame:
    """The arguments (feed values, by arg index) and return values (by retval index) of one step.

    Raises (TF's wording, as ``InvalidArgumentError``, which DirectSession makes of its Internal errors):
        an index outside the frame, a return value set twice, or one never set.
    """

    __slots__ = ("_args", "_retvals", "_set")

    def __init__(self, args: Sequence[Any], num_retvals: int) -> None:
        self._args = tuple(args)
        self._retvals = [None] * num_retvals
        self._set = [False] * num_retvals

    def get_arg(self, index: int) -> Any:
        """Argument ``index`` (the feed value with that arg index)."""
        if not 0 <= index < len(self._args):
            raise errors.InvalidArgumentError(None, None, f"GetArg {index} is not within [0, {len(self._args)})")
        return self._args[index]

    def set_retval(self, index: int, value: Any) -> None:
        """Store return value ``index`` (once)."""
        if not 0 <= index < len(self._retvals):
            raise errors.InvalidArgumentError(
                None, None, f"SetRetval {index} is not within [0, {len(self._retvals)})")
        if self._set[index]:
            raise errors.InvalidArgumentError(None, None, f"Retval[{index}] has already been set.")
        self._retvals[index] = value
        self._set[index] = True

    def retval(self, index: int) -> Any:
        """Return value ``index`` of the finished step (a fetched reference read now, at the step's end)."""
        if not self._set[index]:
            raise errors.InvalidArgumentError(None, None, f"Retval[{index}] does not have value")
        value = self._retvals[index]
        if isinstance(value, _EndOfStepRead):
            return value.txn.read(value.ref)
        return value


class _EndOfStepRead:
    """A fetched reference, read from the step's transaction when the step has finished."""

    __slots__ = ("ref", "txn")

    def __init__(self, txn: Any, ref: VarRef) -> None:
        self.txn, self.ref = txn, ref


@registry.RegisterKernel("_Arg", needs_context=True)
def _arg_kernel(node):
    index = node.get_attr("index")
    return lambda ctx: ctx.call_frame.get_arg(index)


@registry.RegisterKernel("_Retval", needs_context=True)
def _retval_kernel(node):
    index = node.get_attr("index")

    def compute(ctx, value):
        if isinstance(value, VarRef):  # checked now (an uninitialized one fails this op), read at the step's end
            ctx.txn.read(value)
            value = _EndOfStepRead(ctx.txn, value)
        ctx.call_frame.set_retval(index, value)

    return compute
