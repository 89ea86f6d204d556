"""The executable plan of one ``Session.run`` signature (fetches, targets, feeds).

Source: TF's ``DirectSession::GetOrCreateExecutors``: prune the graph to the
fetches, place it, partition it per device with ``_Send``/``_Recv``, and build one
executor per partition — once per signature, then reused every step. Feeds and
fetches are indexed by name order, as TF sorts them. Between placing and partitioning, the graph optimizer
(:mod:`dfcore.runtime.grappler`) rewrites the pruned graph as the session's ``ConfigProto`` says (TF's
``GraphExecutionState::OptimizeGraph``); the partitions then hold the optimized nodes. Partial runs are
not optimized (their feeds and fetches are chosen step by step; dfcore keeps their graph as built). Feeds and
fetches: a normal run passes them
through the step's call frame (``_Arg``/``_Retval``), a partial run through the
rendezvous (client-terminated ``_Recv``/``_Send``).

Which partitions get their own thread: dfcore runs a partition on the session's
thread pool only when it holds real work (≥ :data:`POOL_MIN_FLOPS` estimated from
static shapes) and another such partition exists in the same step; everything
else runs inline on the calling thread (TF likewise runs cheap kernels inline —
a thread hand-off costs tens of µs, more than a small op).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..framework import dtypes
from ..framework.operation import Operation
from ..framework.protos import ConfigProto
from ..framework.tensor import Tensor
from . import cost_model, grappler, partition as partition_lib, prune as prune_lib
from .compiled_partition import CompiledPartition
from .control_flow_info import has_control_flow
from .device_context import DeviceContext
from .partition import Partitions
from .partition_compiler import compile_partition
from .sendrecv_ops import rendezvous_key

POOL_MIN_FLOPS = 10_000_000


@dataclasses.dataclass(frozen=True)
class StepPlan:
    """What :mod:`dfcore.runtime.step` needs to run one step.

    Attributes:
        partitions: the :class:`~dfcore.runtime.compiled_partition.CompiledPartition` of each
            device, ordered by device name.
        graphs: the :class:`~dfcore.runtime.partition.Partitions` they came from.
        ops: the pruned ops in topological order.
        feed_keys: partial runs: the rendezvous key of each fed tensor (None where nothing reads
            it); normal runs: empty (feed ``i`` is argument ``i`` of the call frame).
        fetch_sources: per fetched tensor, ``("feed", i)`` (it is the i-th feed),
            ``("retval", j)`` (return value ``j`` of the call frame) or ``("key", rendezvous key)``
            (partial runs).
        num_retvals: how many return values the call frame holds.
        pooled: indices of the partitions to start on the thread pool.
        optimizer_records: one :class:`~dfcore.runtime.grappler.PassRecord` per optimizer pass that ran
            (empty when none did).
    """

    partitions: tuple[CompiledPartition, ...]
    graphs: Partitions
    ops: tuple[Operation, ...]
    feed_keys: tuple[str | None, ...]
    fetch_sources: tuple[tuple[str, Any], ...]  # ("feed", int), ("retval", int) or ("key", str)
    num_retvals: int
    pooled: frozenset[int]
    optimizer_records: tuple[grappler.PassRecord, ...] = ()


RUNNERS = ("auto", "inline", "pool")


def build_step_plan(fetch_tensors: Sequence[Tensor], target_ops: Sequence[Operation], feed_tensors: Sequence[Tensor],
                    placement_for: Callable[..., Any], client_device: str, pool_threads: int, runner: str = "auto",
                    partial_run: bool = False, config: ConfigProto | None = None,
                    device_backends: Mapping[str, str] | None = None,
                    device_contexts: Mapping[str, DeviceContext] | None = None) -> StepPlan:
    """Prune, place, partition and compile one run signature.

    Args:
        feed_tensors: the fed tensors, sorted by name (their arg indices).
        placement_for: ``placement_for(ops) -> {op: full device name}`` (the session's placer).
        client_device: where feeds arrive and fetches leave.
        pool_threads: the size of the run's inter-op pool (0: the caller's thread; 1 or less: never use the pool).
        runner: ``"auto"`` (the rule in the module docstring), ``"inline"`` (every partition
            on the calling thread) or ``"pool"`` (every partition on the thread pool).
        partial_run: use client-terminated ``_Recv``/``_Send`` endpoints instead of the call frame;
            a fetch that is also fed is then an error, as in TF.
        config: the session's ``ConfigProto``; its ``graph_options`` switch the optimizer's passes
            (None: no optimization, the graph as built).
        device_backends: ``{device name: array backend name}`` (the devices' ``backend``); a device it
            lacks gets its type's default (:func:`dfcore.backends.default_backend`).
        device_contexts: ``{device name: DeviceContext}`` of the real devices
            (:func:`~dfcore.runtime.device_context.device_context`); the others run on the host as they are.
    Raises:
        InvalidArgumentError: a cycle, an unfed placeholder, an impossible placement.
    """
    needed = prune_lib.prune(fetch_tensors, target_ops, feed_tensors)
    order = prune_lib.topological_order(needed, feed_tensors)
    prune_lib.check_feeds_cover_placeholders(op for op in order if op.type == "Placeholder")
    placement = placement_for(order)
    fed = {t: i for i, t in enumerate(feed_tensors)}
    fetched = sorted({t for t in fetch_tensors if partial_run or t not in fed}, key=lambda t: t.name)
    optimized = None if config is None or partial_run else grappler.optimize(
        order, placement, feed_tensors, fetched, target_ops, config)
    if optimized is None:
        graphs = partition_lib.partition(order, placement, feed_tensors, fetched, client_device=client_device,
                                         call_frame=not partial_run)
    else:
        graphs = partition_lib.partition(optimized.ops, optimized.placement, feed_tensors, optimized.fetches,
                                         client_device=client_device, call_frame=True)
    devices = sorted(graphs)
    control_flow = any(has_control_flow([node.op for node in graphs[d].nodes]) for d in devices)
    backend_of, context_of = device_backends or {}, device_contexts or {}
    if runner == "inline" or (runner == "auto" and pool_threads <= 1):
        pooled: frozenset[int] = frozenset()
    elif runner == "pool":
        pooled = frozenset(range(len(devices)))
    else:
        pooled = _pooled([graphs[d] for d in devices])
    partitions = tuple(compile_partition(graphs[d], control_flow, backend_of.get(d), context_of.get(d),
                                         sends_first=bool(pooled)) for d in devices)
    if partial_run:
        keys = _client_keys(graphs.get(client_device))
        feed_keys = tuple(keys.get(("_Recv", t.name)) for t in feed_tensors)
        fetch_sources = tuple(("key", keys[("_Send", t.name)]) for t in fetch_tensors)
    else:
        retvals = {t: j for j, t in enumerate(fetched)}
        feed_keys = ()
        fetch_sources = tuple(("feed", fed[t]) if t in fed else ("retval", retvals[t]) for t in fetch_tensors)
    records = () if optimized is None else optimized.records
    return StepPlan(partitions, graphs, tuple(order), feed_keys, fetch_sources, len(fetched), pooled, records)


def _client_keys(client):
    """``{(op type, tensor name): rendezvous key}`` of the client-terminated endpoints of a partition."""
    if client is None:
        return {}
    return {(node.op, node.get_attr("tensor_name")): rendezvous_key(node)
            for node in client.nodes if node.op in ("_Send", "_Recv") and node.attrs.get("client_terminated")}


def _pooled(graphs):
    if len(graphs) < 2:
        return frozenset()
    heavy = [i for i, graph in enumerate(graphs) if _holds_real_work(graph)]
    return frozenset(heavy[1:]) if len(heavy) >= 2 else frozenset()


def _holds_real_work(graph):
    """Whether the ops of ``graph`` with static shapes add up to :data:`POOL_MIN_FLOPS` (summed only until
    they do: a big partition is not costed to its end)."""
    total = 0
    for node in graph.nodes:
        op = node.original
        if op is None:
            continue
        shapes_in = [t.shape for t in op.inputs]
        shapes_out = [t.shape for t in op.outputs]
        if not all(s.is_fully_defined() for s in shapes_in + shapes_out):
            continue
        size = dtypes.as_dtype(op.outputs[0].dtype).size if op.outputs else 4
        total += cost_model.op_cost(op.type, [s.as_list() for s in shapes_in], [s.as_list() for s in shapes_out],
                                    size, op.attrs).flops
        if total >= POOL_MIN_FLOPS:
            return True
    return False
