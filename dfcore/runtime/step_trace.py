"""Fill ``RunMetadata`` after a step: partition graphs, and step stats in wall and simulated time.

Source: TF's ``DirectSession::RunInternal`` (``output_partition_graphs``, the
``StepStatsCollector``) and the simulated clock (docs/architecture.md#the-simulated-clock). Wall times come from
the executors' :class:`~dfcore.runtime.executor.NodeTiming` records. Simulated times
come from replaying the step on the session's hardware profiles
(:func:`~dfcore.runtime.sim_clock.simulate_step`): each executed node costs its
roofline time on its device, each ``_Send``→``_Recv`` pair a transfer on its link, each
in-graph collective its own schedule's messages and reductions
(:mod:`~dfcore.runtime.step_collectives`); each collective message is recorded as a
``_Send`` on its sender and a ``_Recv`` on its receiver (labels ``<instance>/message…``),
so timelines draw it on its link like any transfer.

Memory (per device, one allocator as TF names them: ``cpu``, ``GPU_0_bfc``): every
output a node produces is allocated when the node ends and freed when its last
consumer in the partition has run; ``total_bytes`` sums the allocations,
``peak_bytes`` is the largest live total. Outputs that only alias an input
(``Identity``, ``Reshape``, …) allocate nothing. Without ``allow_growth`` a GPU
reserves its whole memory up front, as TF's BFC allocator does; that shows as an
extra ``GPU_<i>_bfc reserved`` record.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

from .. import backends
from ..framework import registry
from ..framework.device import DeviceSpec
from ..framework.run_metadata import attach_step_records
from ..ops import op_costs
from . import cost_model, sim_clock, step_collectives, step_stats
from .config import ConfigProto, RunMetadata, RunOptions, StepRecords
from .control_flow_executor import frame_id_of
from .cost_graph import cost_graph
from .device_set import DeviceSet, allocator_name
from .sendrecv_ops import rendezvous_key
from .step import StepResult
from .step_stats import AllocatorMemoryUsed, NodeExecStats, StepStats, StepStatsCollector

if TYPE_CHECKING:
    from .step_plan import StepPlan

# _Arg: a fed value
_ALIASING = frozenset(("Identity", "Reshape", "StopGradient", "VariableV2", "Const", "_Send", "_Arg"))


def machine_for(device_set: DeviceSet) -> cost_model.MachineProfile:
    """A :class:`~dfcore.runtime.cost_model.MachineProfile` for the devices of a session."""
    devices = {}
    for device in device_set.devices:
        devices[device.name] = cost_model.CPU if device.device_type == "CPU" else cost_model.GPUS.get(
            device.profile_name, cost_model.TESLA_K20M)
    return cost_model.MachineProfile(devices)


def fill_run_metadata(run_metadata: RunMetadata, plan: StepPlan, result: StepResult, options: RunOptions,
                      device_set: DeviceSet, config: ConfigProto) -> None:
    """Refill ``run_metadata`` (TF's message, cleared first as TF's session parses it anew): its
    ``partition_graphs`` when asked, its ``step_stats`` with FULL_TRACE (and ``cost_graph`` when the config's
    ``graph_options.build_cost_model`` > 0), and then dfcore's
    :class:`~dfcore.runtime.config.StepRecords` attached to it (TF's bare message takes no records)."""
    run_metadata.Clear()  # the step records of an earlier run go too
    if options.output_partition_graphs:
        run_metadata.partition_graphs.extend(plan.graphs[d].as_graph_def() for d in sorted(plan.graphs))
    if options.trace_level >= RunOptions.FULL_TRACE and result.timings is not None:
        stats = build_step_stats(plan, result, machine_for(device_set), config.gpu_options.allow_growth)
        run_metadata.step_stats.CopyFrom(stats.to_proto())
        if config.graph_options.build_cost_model > 0:
            run_metadata.cost_graph.CopyFrom(cost_graph(plan.graphs, stats))
        traces = tuple(result.collectives[k].trace for k in sorted(result.collectives)
                       if result.collectives[k].trace is not None)
        attach_step_records(run_metadata, StepRecords(stats, tuple(result.rendezvous.transfers()), traces,
                                                      dead_nodes(plan, result)))


def dead_nodes(plan: StepPlan, result: StepResult) -> tuple[tuple[str, str, tuple[int, int] | None], ...]:
    """``(device, node name, frame_iter)`` of each traced node that ran dead, in start order (``frame_iter``
    None in the root frame, as :func:`~dfcore.runtime.step_stats.iteration_label`)."""
    names = {p.device: p.nodes for p in plan.partitions}
    timings = sorted((t for t in result.timings or () if t.dead), key=lambda t: (t.start_s, t.device, t.index))
    return tuple((t.device, names[t.device][t.index].name, step_stats.loop_iteration(t.frame_iter))
                 for t in timings)


def build_step_stats(plan: StepPlan, result: StepResult, machine: cost_model.MachineProfile,
                     allow_growth: bool = False) -> StepStats:
    """A :class:`~dfcore.runtime.step_stats.StepStats` of one traced step (wall + simulated)."""
    by_device = {p.device: (i, p) for i, p in enumerate(plan.partitions)}
    timings = sorted(result.timings or (), key=lambda t: (t.start_s, t.device, t.index))
    sim, messages = _simulate(plan, result, machine)
    base_perf = timings[0].start_s if timings else 0.0
    base_wall_us = time.time() * 1e6 - (time.perf_counter() - base_perf) * 1e6
    collector = StepStatsCollector()
    wall_start: dict[str, int] = {}
    for t in timings:
        _, partition = by_device[t.device]
        node = partition.nodes[t.index]
        # on a real GPU the measured time is the GPU's (CUDA events around the node's kernels), as TF's tracer
        measured_s = t.kernel_timer.elapsed_s() if t.kernel_timer is not None else t.end_s - t.start_s
        duration_us = max(0, int(round(measured_s * 1e6)))
        wall_start.setdefault(t.device, int(base_wall_us + (t.start_s - base_perf) * 1e6))
        detail = dataclasses.replace(node.label, frame_iter=step_stats.loop_iteration(t.frame_iter))
        collector.record(t.device, NodeExecStats(
            node_name=node.name, op_type=node.op_type,
            all_start_micros=int(base_wall_us + (t.start_s - base_perf) * 1e6),
            op_start_rel_micros=0, op_end_rel_micros=duration_us, all_end_rel_micros=duration_us,
            thread_id=t.thread_id, output_bytes=tuple(_nbytes(v) for v in t.outputs),
            timeline_label=detail.text(), detail=detail,
            sim_start_micros=int(round(sim.start_s[step_stats.instance_name(node.name, t.frame_iter)] * 1e6)),
            sim_end_micros=int(round(sim.end_s[step_stats.instance_name(node.name, t.frame_iter)] * 1e6))))
    for m in messages:
        _record_message(collector, m, sim, wall_start)
    for device, (i, partition) in by_device.items():
        for memory in _memory(device, partition, result.executors[i], timings, machine, allow_growth,
                              getattr(result, "allocator_stats", {}).get(device)):
            collector.record_memory(device, memory)
    return collector.finalize()


def _record_message(collector, message, sim, wall_start):
    """A collective's message as a ``_Send`` (posted when the message starts) on its sender and a ``_Recv``
    (from its start to its end) on its receiver, on the simulated clock; no wall time of its own."""
    start_us = int(round(sim.start_s[message.task] * 1e6))
    end_us = int(round(sim.end_s[message.task] * 1e6))
    ends = ((message.src_device, "_Send", message.dst_device, start_us, ()),
            (message.dst_device, "_Recv", message.src_device, end_us, (message.nbytes,)))
    for device, op_type, peer, sim_end, output in ends:
        name = f"{message.task}/{op_type[1:].lower()}"
        detail = step_stats.TimelineLabel(name, op_type, tensor_name=message.task, peer_device=peer)
        collector.record(device, NodeExecStats(
            node_name=name, op_type=op_type, all_start_micros=wall_start.get(device, 0), op_start_rel_micros=0,
            op_end_rel_micros=0, all_end_rel_micros=0, thread_id=0, output_bytes=output,
            timeline_label=detail.text(), detail=detail, sim_start_micros=start_us, sim_end_micros=sim_end))


def _simulate(plan, result, machine):
    """``(SimResult, collective messages)`` of a traced step."""
    if plan.partitions and plan.partitions[0].control_flow is not None:
        return _simulate_iterations(plan, result, machine), []
    sends = {}
    for partition in plan.partitions:
        for node in partition.nodes:
            if node.op_type == "_Send" and not node.source.attrs.get("client_terminated"):
                sends[rendezvous_key(node.source)] = node
    records, transfers = [], []
    for p_index, partition in enumerate(plan.partitions):
        values = result.executors[p_index].values
        nodes = partition.nodes
        producers = _producers(partition)
        for i, node in enumerate(nodes):
            deps = tuple(dict.fromkeys(nodes[j].name for j in producers[i]))
            records.append(sim_clock.NodeRecord(node.name, partition.device, _cost(node, values), deps, i))
            if node.op_type == "_Recv":
                send = sends.get(rendezvous_key(node.source))
                if send is not None:
                    transfers.append(sim_clock.TransferRecord(send.name, node.name, _nbytes(values[node.out_slot])))
    records, extra, messages = step_collectives.add_collectives(plan, result.collectives, machine, records)
    return sim_clock.simulate_step(records, transfers, machine, extra), messages


def _simulate_iterations(plan, result, machine):
    """The replay of a step with control flow: one task per executed node per frame and iteration (from the
    traced timings), waiting for the producer instances the control-flow executor recorded."""
    by_device = {p.device: (i, p) for i, p in enumerate(plan.partitions)}
    sends = {}
    for partition in plan.partitions:
        for node in partition.nodes:
            if node.op_type == "_Send" and not node.source.attrs.get("client_terminated"):
                sends[rendezvous_key(node.source)] = node.name
    timings = result.timings or []
    outputs = {(t.device, t.index, t.frame_iter): t.outputs for t in timings}
    bounds, members = _iteration_bounds(by_device, timings)
    records, recvs = [], []
    for t in timings:
        p_index, partition = by_device[t.device]
        node = partition.nodes[t.index]
        producers = result.executors[p_index].instance_producers or {}
        inputs: list = [()] * len(node.in_slots)
        deps = []
        frame_id, it = t.frame_iter or (0, 0)
        bound = bounds.get(frame_id)
        if bound is not None and it >= bound and registry.control_flow_kind(node.op_type) == "merge":
            deps += members.get((t.device, frame_id, it - bound), ())  # parallel_iterations: k waits for k - P
        for position, (src, frame_id, it), port in producers.get((t.index, *t.frame_iter), ()):
            src_outputs = outputs.get((t.device, src, (frame_id, it)))
            if src_outputs is None:
                continue
            deps.append(step_stats.instance_name(partition.nodes[src].name, (frame_id, it)))
            if position >= 0:
                inputs[position] = backends.shape_of(src_outputs[port])
        name = step_stats.instance_name(node.name, t.frame_iter)
        cost = cost_model.OpCost(0, 0) if t.dead else _cost_of(node, inputs, t.outputs)  # dead: no kernel ran
        records.append(sim_clock.NodeRecord(name, t.device, cost, tuple(dict.fromkeys(deps)), t.index))
        if node.op_type == "_Recv" and rendezvous_key(node.source) in sends:
            recvs.append((step_stats.instance_name(sends[rendezvous_key(node.source)], t.frame_iter), name,
                          _nbytes(t.outputs[0]) if t.outputs else 0))
    names = {r.name for r in records}
    transfers = [sim_clock.TransferRecord(src, dst, nbytes) for src, dst, nbytes in recvs if src in names]
    return sim_clock.simulate_step(records, transfers, machine)


def _iteration_bounds(by_device, timings):
    """``({frame_id: parallel_iterations}, {(device, frame_id, iteration): instance names})`` of a traced step.

    The control-flow executor starts iteration k of a frame only when iteration k - P is done (P its
    ``Enter`` s' ``parallel_iterations``, TF's ``executor.cc``), so the replay makes each ``Merge`` of
    iteration k wait for every node run of iteration k - P on its device.
    """
    bounds: dict[int, int] = {}
    members: dict[tuple[str, int, int], list[str]] = {}
    for t in timings:
        node = by_device[t.device][1].nodes[t.index]
        parent = t.frame_iter or (0, 0)
        if registry.control_flow_kind(node.op_type) == "enter":
            attrs = node.source.attrs
            bounds[frame_id_of(parent[0], parent[1], attrs["frame_name"])] = attrs["parallel_iterations"]
        if t.frame_iter is not None:
            members.setdefault((t.device, *t.frame_iter), []).append(step_stats.instance_name(node.name, t.frame_iter))
    return bounds, members


def _producers(partition):
    producers: list[list[int]] = [[] for _ in partition.nodes]
    for i, node in enumerate(partition.nodes):
        for consumer in node.consumers:
            producers[consumer].append(i)
    return producers


def _cost(node, values):
    return _cost_of(node, [backends.shape_of(values[s]) for s in node.in_slots],
                    values[node.out_slot:node.out_slot + node.num_outputs])


def _cost_of(node, inputs, output_values):
    """The cost model's estimate for ``node`` run with ``inputs`` (shapes) giving ``output_values``."""
    outputs = [backends.shape_of(v) for v in output_values]
    sample = next((v for v in output_values if hasattr(v, "dtype")), None)
    size = backends.itemsize_of(sample) if sample is not None else 4
    attrs = getattr(node.source, "attrs", {}) or {}
    if node.op_type in op_costs.BOOKKEEPING:
        return cost_model.OpCost(0, 0)
    return cost_model.op_cost(node.op_type, inputs, outputs, size, attrs)


def _nbytes(value):
    return backends.nbytes_of(value) if hasattr(value, "dtype") else 0


def _memory(device, partition, executor, timings, machine, allow_growth, allocator_stats=None):
    nodes = partition.nodes
    users = [len(set(node.consumers)) for node in nodes]
    producers = _producers(partition)
    live = total = peak = count = 0
    sizes = [0] * len(nodes)
    for t in (t for t in timings if t.device == device):
        node = nodes[t.index]
        if node.op_type not in _ALIASING:
            sizes[t.index] = sum(_nbytes(v) for v in executor.values[node.out_slot:node.out_slot + node.num_outputs])
            live += sizes[t.index]
            total += sizes[t.index]
            count += 1 if sizes[t.index] else 0
            peak = max(peak, live)
        for producer in set(producers[t.index]):
            users[producer] -= 1
            if users[producer] == 0:
                live -= sizes[producer]
    spec = DeviceSpec.from_string(device)
    name = allocator_name(device)
    in_use = new = reused = small = 0
    if allocator_stats is not None:
        before, after = allocator_stats
        in_use, new, reused = after.bytes_in_use, after.new_buffers - before.new_buffers, \
            after.reuse_hits - before.reuse_hits
        small = after.small_allocs - before.small_allocs
    records = [AllocatorMemoryUsed(name, total, peak, count, live, in_use, new, reused, small)]
    if spec.device_type == "GPU" and not allow_growth:
        reserved = machine.device(device).memory_bytes
        records.append(AllocatorMemoryUsed(f"{name} reserved", reserved, reserved, 1))
    return records
