"""Control flow in a run, as the views show it: dead nodes, loop-control copies, transfers per iteration.

Pure functions over dfcore's records (no ipywidgets):

- :func:`dead_throughout`: the nodes that ran dead in *every* execution of a traced step (the untaken
  branch of a ``tf.cond``; a loop's body node that ran live in some iteration is not among them), from
  ``StepRecords.dead_nodes`` and the step stats (TF's executor skips the kernel of a node with a dead
  input: ``common_runtime/executor.cc``).
- :func:`control_loops`: per device, the copies of each loop's control that partitioning added
  (TF's ``graph_partition.cc`` ``AddControlLoop``; Yu et al., EuroSys 2018, §4.2).
- :func:`transfers_per_iteration`: the rendezvous transfers of each loop iteration, read from the
  ``<frame_id>:<iter_id>`` field of their keys (TF's ``Rendezvous::CreateKey``).
"""

import collections

from dfcore.framework.rendezvous_key import parse_key
from dfcore.runtime.partition_control_flow import control_loop_frame


def _executions(step_stats):
    """``{(device, node name): number of executions}`` in a step's stats."""
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    for dev in step_stats.dev_stats:
        for ns in dev.node_stats:
            counts[(dev.device, ns.node_name)] += 1
    return counts


def dead_throughout(records):
    """``{device: frozenset of node names}`` that ran dead in every one of their executions.

    Args:
        records: the :class:`~dfcore.runtime.config.StepRecords` of a traced run.
    """
    dead = collections.Counter((device, name) for device, name, _ in records.dead_nodes)
    runs = _executions(records.step_stats)
    out: dict[str, set[str]] = {}
    for (device, name), n in dead.items():
        if n == runs[(device, name)]:
            out.setdefault(device, set()).add(name)
    return {device: frozenset(names) for device, names in out.items()}


def control_loops(partitions):
    """``[(device, frame name, (node names...)), ...]``: each loop-control copy, devices and frames sorted.

    Args:
        partitions: ``{device: PartitionGraph}`` (``session.partitions(...)``).
    """
    found: dict[tuple[str, str], list[str]] = {}
    for device, graph in partitions.items():
        for node in graph.nodes:
            frame = control_loop_frame(node.name)
            if frame is not None:
                found.setdefault((device, frame), []).append(node.name)
    return [(device, frame, tuple(names)) for (device, frame), names in sorted(found.items())]


def transfers_per_iteration(records):
    """``[(frame_id, iteration, transfers, dead transfers), ...]`` of the transfers made inside loops, sorted.

    Args:
        records: the :class:`~dfcore.runtime.config.StepRecords` of a traced run. Its rendezvous
            transfers keyed ``0:0`` (outside any loop) are left out; a transfer is dead when its
            ``_Recv`` ran dead (it carried a dead value: the loop's last test, an untaken branch).
    """
    counts: collections.Counter[tuple[int, int]] = collections.Counter()
    for record in records.transfers:
        key = parse_key(record.key)
        if key.frame_id != 0:
            counts[(key.frame_id, key.iter_id)] += 1
    types = {(dev.device, ns.node_name): ns.op_type for dev in records.step_stats.dev_stats for ns in dev.node_stats}
    dead = collections.Counter(frame_iter for device, name, frame_iter in records.dead_nodes
                               if frame_iter is not None and types.get((device, name)) == "_Recv")
    return [(frame, it, counts[(frame, it)], dead[(frame, it)]) for frame, it in sorted(counts)]
