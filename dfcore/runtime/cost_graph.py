"""``RunMetadata.cost_graph``: TF's ``CostGraphDef`` of a traced step, from dfcore's cost model.

Source: ``tensorflow/core/framework/cost_graph.proto`` and ``GraphOptions.build_cost_model`` in
``config.proto``. One node per partition node (ids in device order, then partition order) with its
data inputs (``input_info``), control inputs, output sizes in bytes, ``compute_cost`` = its duration on
dfcore's simulated clock (µs, the roofline cost model) and ``compute_time`` = its measured wall time (µs).
dfcore fills it on steps traced with ``FULL_TRACE`` when ``build_cost_model`` > 0 (TF needs no trace; dfcore
has timings only when tracing).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..framework.protos import CostGraphDef
from .partition import PartitionGraph
from .step_stats import StepStats


def cost_graph(partition_graphs: Mapping[str, PartitionGraph], step_stats: StepStats) -> CostGraphDef:
    """The ``CostGraphDef`` of a step: ``partition_graphs`` by device, ``step_stats`` dfcore's StepStats."""
    stats = {ns.node_name: ns for dev in step_stats.dev_stats for ns in dev.node_stats}
    order = [(device, node) for device in sorted(partition_graphs) for node in partition_graphs[device].nodes]
    ids = {node.name: i for i, (_, node) in enumerate(order)}
    graph = CostGraphDef()
    for device, node in order:
        proto = graph.node.add(name=node.name, device=device, id=ids[node.name])
        for text in node.inputs:
            if text.startswith("^"):
                proto.control_input.append(ids[text[1:]])
            else:
                source, _, port = text.partition(":")
                proto.input_info.add(preceding_node=ids[source], preceding_port=int(port or 0))
        ns = stats.get(node.name)
        if ns is None:  # not run in this step (a preset Const)
            continue
        for size in ns.output_bytes:
            proto.output_info.add(size=size)
        if ns.sim_end_micros is not None and ns.sim_start_micros is not None:
            proto.compute_cost = ns.sim_end_micros - ns.sim_start_micros
        proto.compute_time = ns.op_end_rel_micros - ns.op_start_rel_micros
    return graph
