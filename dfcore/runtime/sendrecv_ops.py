"""Kernels of the runtime-inserted ``_Send`` and ``_Recv`` nodes.

Source: TF's ``core/kernels/sendrecv_ops.cc``. A ``_Send`` posts its input to the
step's rendezvous under the key built from its attrs and never blocks; a ``_Recv``
is asynchronous: it asks the rendezvous for the same key and completes when the
value arrives (see :mod:`dfcore.runtime.executor`), taken into its device's array backend. Keys are built once, when the
partition is compiled; inside a loop, per iteration, with the node's ``frame_id:iter``.
"""

from __future__ import annotations

from typing import Any

from .. import backends
from ..framework import registry
from ..framework.rendezvous_key import create_key
from .variable_store import VarRef


def rendezvous_key(node: Any, frame_iter: tuple[int, int] = (0, 0)) -> str:
    """The rendezvous key of a ``_Send``/``_Recv`` node, from its attrs, in iteration ``frame_iter``
    (``(frame_id, iter)``; (0, 0) outside loops). The incarnation attr is a uint64 that a NodeDef stores as
    int64 (a partition registered over gRPC comes back negative): its bits are read back as unsigned."""
    return create_key(node.get_attr("send_device"), node.get_attr("send_device_incarnation") % 2 ** 64,
                      node.get_attr("recv_device"), node.get_attr("tensor_name"), frame_iter)


registry.mark_runs_when_dead("_Send")  # a dead value is sent as DEAD, so the receiver's side runs dead too


@registry.RegisterArrayKernel("_Send", needs_context=True)
def _send_kernel(node, backend):
    key = rendezvous_key(node)

    def compute(ctx, value):
        if isinstance(value, VarRef):
            value = ctx.txn.read(value)
        ctx.rendezvous.send(key if ctx.frame_iter == (0, 0) else rendezvous_key(node, ctx.frame_iter), value)

    return compute


@registry.RegisterArrayKernel("_Recv", is_async=True)
def _recv_kernel(node, backend):
    """A received value enters the receiving device's array backend here (:func:`dfcore.backends.transfer`;
    on a backend with devices of its own, its ``receiver()`` puts it on the receiving device)."""
    key = rendezvous_key(node)
    receiver = getattr(backend, "receiver", None)

    def compute(ctx, done):
        if receiver is not None:  # a real GPU: place the value on this device (the executor's scope, now)
            place = receiver()

            def arrived(error, value):
                done(error, value if error is not None or value is registry.DEAD else place(value))
        else:
            def arrived(error, value):
                done(error, value if error is not None or backend.is_native(value) else backends.transfer(
                    value, None, backend))

        ctx.rendezvous.recv_async(key if ctx.frame_iter == (0, 0) else rendezvous_key(node, ctx.frame_iter),
                                  arrived)

    return compute
