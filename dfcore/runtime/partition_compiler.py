"""Turn a :class:`~dfcore.runtime.partition.PartitionGraph` into an executable
:class:`~dfcore.runtime.compiled_partition.CompiledPartition`.

Source: TF's ``NewLocalExecutor`` (kernels are instantiated once per partition
graph, not per step). Each node gets its kernel from the registry (the user's op
for graph nodes, the node record itself for ``_Send``/``_Recv``, ``_Arg``/``_Retval``
and the dummy ``Const``/``Identity`` of control pairs), a value slot per output, the slots of
its data inputs, and pending counts over its data and control inputs.

A partition with control-flow ops gets a
:class:`~dfcore.runtime.control_flow_info.ControlFlowInfo` instead of pending counts and
presets (every node runs in its frame and iteration; see
:mod:`dfcore.runtime.control_flow_executor`). Otherwise, a ``Const`` with no control inputs
is *preset*: its value is put in its slot once, here, and it is not scheduled in each step
(its consumers do not wait for it). A ``Const`` with control inputs still runs, so the
ordering it carries is kept.

When the step's partitions run on several threads (``sends_first``), a node's consumers are listed with its
``_Send`` nodes first. The executor runs the first consumer a node makes ready next and stacks the others, so
a value another device's thread waits for goes out before the rest of this device's chain runs, as TF's
executor does by running inexpensive ready nodes (a ``_Send``) inline and handing expensive ones to its pool
(``ExecutorState::ScheduleReady``, ``common_runtime/executor.cc``). Listed after a convolution, the send of a
tower's variable waited for that tower's whole forward and backward pass, and the other device's tower with it:
two towers on two inter-op threads ran one after the other. On one thread the order is left as the graph
gives it: nothing runs sooner for it, and a read and an update of one variable without a dependency between
them keep meeting as they always have (``sess.run([train_op, global_step])`` fetches the updated step).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from .. import backends, errors
from ..framework import registry
from ..framework.device import DeviceSpec
from . import allocator, step_stats
from .compiled_partition import CompiledNode, CompiledPartition
from .control_flow_info import build_control_flow_info, has_control_flow
from .device_context import DeviceContext
from .partition import PartitionGraph
from .variable_store import VarRef

# outputs of the nodes the partitioner inserts (pairs, call frames, control pairs, per-device loop control)
_INSERTED_OUTPUTS = {"_Recv": 1, "_Arg": 1, "Const": 1, "Identity": 1, "Enter": 1, "NextIteration": 1, "Merge": 2,
                     "Switch": 2}


def compile_partition(graph: PartitionGraph, control_flow: bool | None = None,
                      backend: str | None = None, device_context: DeviceContext | None = None,
                      sends_first: bool = False) -> CompiledPartition:
    """Compile every node of ``graph``; nodes keep the partition's (topological) order.

    ``control_flow``: compile for the control-flow executor (True when a partition of the step holds
    control flow, so dead tensors received from it are understood); None: if this partition holds some.
    ``backend``: the array backend of the partition's device (:attr:`~dfcore.runtime.device_set.Device.backend`);
    None: :func:`dfcore.backends.default_backend` of its device type. ``device_context``: a real device's
    :class:`~dfcore.runtime.device_context.DeviceContext` (its constants are made in its scope, and its
    executors run there); None on the host. ``sends_first``: list each node's ``_Send`` consumers first (module
    docstring), for a step whose partitions run on several threads.

    Raises:
        NotFoundError: an op type with no registered kernel for the device's backend.
    """
    device_backend = backends.get(backend or backends.default_backend(DeviceSpec.from_string(graph.device).device_type))
    nodes = graph.nodes
    index = {node.name: i for i, node in enumerate(nodes)}
    out_base, num_slots = [], 0
    for node in nodes:
        out_base.append(num_slots)
        num_slots += _num_outputs(node)
    compiled = []
    edges = []
    for i, node in enumerate(nodes):
        in_slots = []
        for name in node.inputs:
            if name.startswith("^"):
                edges.append((index[name[1:]], i, -1))
                continue
            src, _, port = name.partition(":")
            src_index = index[src]
            in_slots.append(out_base[src_index] + (int(port) if port else 0))
            edges.append((src_index, i, int(port) if port else 0))
        compiled.append(_compile_node(node, in_slots, out_base[i], device_backend))
    initial_values = [None] * num_slots
    if control_flow or (control_flow is None and has_control_flow([node.op for node in nodes])):
        info = build_control_flow_info(compiled, [(src, port, dst) for src, dst, port in edges])
        return CompiledPartition(graph.device, compiled, initial_values, len(compiled), info, device_context)
    with device_context.scope() if device_context is not None else contextlib.nullcontext():
        for node, record in zip(compiled, nodes):
            if node.op_type == "Const" and not record.inputs:
                node.preset = True
                initial_values[node.out_slot] = node.compute()
    for src_index, dst_index, _ in edges:
        if not compiled[src_index].preset:
            compiled[src_index].consumers.append(dst_index)
            compiled[dst_index].pending += 1
    if sends_first:  # a value another device's thread waits for goes out first (module docstring)
        for node in compiled:
            node.consumers.sort(key=lambda consumer: compiled[consumer].op_type != "_Send")
    num_scheduled = sum(1 for node in compiled if not node.preset)
    return CompiledPartition(graph.device, compiled, initial_values, num_scheduled, device_context=device_context)


def _num_outputs(node):
    if node.original is not None:
        return len(node.original.outputs)
    return _INSERTED_OUTPUTS.get(node.op, 0)


def _compile_node(node, in_slots, out_slot, backend):
    source = node.original if node.original is not None else node
    is_operation = node.original is not None
    compute, needs_context, is_async, derefs = _kernel(source, node.op, node.name, node, is_operation, backend)
    compiled = CompiledNode(node.name, node.op, compute, in_slots, out_slot, _num_outputs(node), needs_context,
                            is_async, source, _label(node))
    if is_operation:
        compiled.reads_variable = any(t.dtype.is_ref for t in node.original.inputs)
        compiled.small = _statically_small(node.original)
    out_def = registry.out_kernel(node.op) if is_operation and not derefs and backend.supports_out else None
    if out_def is not None and not is_async and not compiled.small:
        compiled.compute_out = out_def.factory(source)
    return compiled


def instantiate_kernel(source: Any, op_type: str, name: str, described: Any = None,
                       is_operation: bool = True,
                       backend: str | backends.Backend = backends.NUMPY) -> tuple[Callable[..., Any], bool, bool]:
    """The kernel of one node: ``(compute, needs_context, is_async)`` (contract in
    :mod:`dfcore.framework.registry`); for an Operation (``is_operation``), reference inputs other than the op's
    own ``ref_inputs`` are read from the step's transaction first. Used for partitions and for eager ops
    (:mod:`dfcore.eager.execute`), so both run the same kernels. ``described``: what the error's ``node_def``
    comes from (a partition node; default ``source``). ``backend``: the array backend of the node's device.

    Raises:
        NotFoundError: no kernel is registered for ``op_type`` on ``backend``.
    """
    return _kernel(source, op_type, name, described, is_operation, backends.get(backend))[:3]


def _kernel(source, op_type, name, described, is_operation, backend):
    kernel_def = registry.kernel(op_type, backend.name)
    if kernel_def is None:
        node_def = getattr(described if described is not None else source, "node_def", None)
        op = source if is_operation else None
        if registry.kernel(op_type) is None:
            raise errors.NotFoundError(
                node_def, op, f"No registered kernel for op '{name}' of type '{op_type}' on the numpy backend.")
        device = getattr(described if described is not None else source, "device", "") or ""
        device_type = DeviceSpec.from_string(device).device_type or "GPU"
        raise errors.NotFoundError(  # TF's OpKernel lookup (op_kernel.cc FindKernelRegistration), backend named
            node_def, op, f"No registered '{op_type}' OpKernel for '{device_type}' devices compatible with node "
            f"{{{{node {name}}}}} (its kernel is numpy-only; this device's array backend is {backend.name})")
    compute = kernel_def.build(source, backend)
    needs_context = kernel_def.needs_context
    refs = []
    if is_operation:
        refs = [i for i, t in enumerate(source.inputs) if t.dtype.is_ref and i not in registry.ref_inputs(op_type)]
        if refs:
            compute = _dereferencing(compute, refs, needs_context)
            needs_context = True
    return compute, needs_context, kernel_def.is_async, bool(refs)


def _statically_small(op):
    """True when every output of ``op`` has a fully defined static shape too small to be pooled: its plain
    kernel is as good (see :mod:`dfcore.runtime.allocator`)."""
    for out in op.outputs:
        if not out.shape.is_fully_defined() or allocator.pooled_shape(tuple(out.shape.as_list()),
                                                                      out.dtype.base_dtype.as_numpy_dtype):
            return False
    return True


def _label(node):
    """The parts of ``node``'s timeline label (:class:`~dfcore.runtime.step_stats.TimelineLabel`)."""
    if node.op in ("_Send", "_Recv"):
        peer = node.get_attr("recv_device") if node.op == "_Send" else node.get_attr("send_device")
        return step_stats.TimelineLabel(node.name, node.op, tensor_name=node.get_attr("tensor_name"),
                                        peer_device=peer)
    return step_stats.TimelineLabel(node.name, node.op, tuple(node.inputs))


def _dereferencing(compute, positions, needs_context):
    """Wrap ``compute`` so the variable references at ``positions`` are read first."""

    def run(ctx, *inputs):
        args = list(inputs)
        for i in positions:
            if isinstance(args[i], VarRef):
                args[i] = ctx.txn.read(args[i])
        return compute(ctx, *args) if needs_context else compute(*args)

    return run
