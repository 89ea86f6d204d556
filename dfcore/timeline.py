"""Chrome Trace Format export of a step's :class:`~dfcore.runtime.step_stats.StepStats`.

Source: TF ``python/client/timeline.py``; format: the Trace Event Format that
chrome://tracing and Perfetto load (``{"traceEvents": [...]}``).

What the trace holds, following TF's conventions:

- one process per device named ``"<device> Compute"`` (``ph:"M"`` ``process_name``);
  each op is a ``ph:"X"`` event, ``cat:"Op"``, ``name`` = op type, ``args``
  ``{"name", "op", "input0", "input1", ...}``; ops are spread over lanes (``tid``)
  greedily so that the events of one lane never overlap;
- with ``show_memory``, a second process ``"<device> Tensors"`` with each output
  tensor's lifetime (``N``/``O``/``D`` object events) and a ``C`` counter of live bytes;
- with ``show_dataflow``, a ``ph:"s"``/``ph:"t"`` arrow (``cat:"DataFlow"``) from
  producer to consumer whenever they sit on different lanes or processes.

Unlike TF, each ``_Send`` → ``_Recv`` transfer is an event of its own, ``cat:"Transfer"``,
named ``"<tensor_name> (<bytes> B)"``, in a process ``"<src> -> <dst> Transfers"``;
it spans from when both the send and the recv had started to when the recv ended, and
arrows link send → transfer → recv.

How edges are found:

- Data inputs of a node come from ``graph`` when it knows the node (a ``Graph`` or an
  iterable of partition graphs); otherwise from the node's record (``NodeExecStats.detail``, the parts of
  its label ``"n = Op(a, b:1, ^c)"``; for TF's ``StepStats`` message, read from the label as TF's
  ``timeline.py`` reads it: :func:`~dfcore.runtime.step_stats.parse_timeline_label`).
  Control inputs (``^c``) draw no arrow, as in TF. An input ``x`` means ``x:0``; if no
  node ``x`` ran, a ``/_<n>`` suffix is stripped (TF's rule for partition-renamed nodes).
- A ``_Send``'s label names no input, so without a graph its producer is its own node
  name less the ``/_<n>`` suffix that partitioning adds (``Const/_0`` → ``Const``, output 0).
- Sends and recvs pair by their rendezvous key's parts, the loop iteration included
  (:func:`~dfcore.runtime.transfer_pairs.pair_transfers`), so a loop's transfers pair iteration by
  iteration. The transfer's bytes are the recv's ``output_bytes[0]``. A node run inside a loop (op or
  transfer) has ``frame_id`` and ``iteration`` in its args (dfcore's; TF's timeline has no loops).
"""

import json
import re

from . import errors
from .framework import protos
from .runtime.step_stats import NodeExecStats, StepStats
from .runtime.transfer_pairs import TransferPair, pack_lanes, pair_transfers, transfer_role

_PARTITION_SUFFIX = re.compile(r"/_\d+$")


class _Slice:
    """One ``X`` event being laid out: a node run or a transfer."""

    __slots__ = ("name", "start", "end", "pid", "tid")

    def __init__(self, name, start, end, pid):
        self.name, self.start, self.end, self.pid, self.tid = name, start, end, pid, None


def _wall_span(ns: NodeExecStats) -> tuple[int, int]:
    return ns.all_start_micros, ns.all_end_micros


def _simulated_span(ns: NodeExecStats) -> tuple[int, int]:
    if ns.sim_start_micros is None or ns.sim_end_micros is None:
        raise errors.FailedPreconditionError(
            None,
            None,
            f"Node {ns.node_name} has no simulated times; replay the step on the simulated clock "
            'first, or ask for time="wall".',
        )
    return ns.sim_start_micros, ns.sim_end_micros


_SPANS = {"wall": _wall_span, "simulated": _simulated_span}


def _assign_lanes(slices):
    """Give each slice a tid (from 1) so that slices sharing a tid never overlap (ties by name)."""
    ordered = sorted(slices, key=lambda s: s.name)
    lanes, _ = pack_lanes([(s.start, s.end) for s in ordered])
    for s, lane in zip(ordered, lanes):
        s.tid = lane + 1


class _ChromeTrace:
    """Collects trace events; metadata events come first in the output (as TF writes them)."""

    def __init__(self):
        self._metadata = []
        self._events = []
        self._next_pid = 1
        self._next_flow_id = 0

    def new_process(self, name):
        pid = self._next_pid
        self._next_pid += 1
        self._metadata.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
        self._metadata.append({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}})
        return pid

    def region(self, s, category, name, args):
        self._events.append(
            {"ph": "X", "cat": category, "name": name, "pid": s.pid, "tid": s.tid, "ts": s.start,
             "dur": s.end - s.start, "args": args}
        )

    def flow(self, name, src, dst):
        """An arrow from slice ``src`` to slice ``dst``; both ends lie inside their slices."""
        t_ts = min(max(src.end, dst.start), dst.end)
        s_ts = min(max(t_ts, src.start), src.end)
        flow_id = self._next_flow_id
        self._next_flow_id += 1
        for ph, s, ts in (("s", src, s_ts), ("t", dst, t_ts)):
            self._events.append(
                {"ph": ph, "cat": "DataFlow", "name": name, "pid": s.pid, "tid": s.tid, "ts": ts, "id": flow_id}
            )

    def tensor_lifetime(self, object_id, name, pid, tid, created, snapshot_ts, deleted, snapshot):
        base = {"cat": "Tensor", "name": name, "pid": pid, "tid": tid, "id": object_id}
        self._events.append({**base, "ph": "N", "ts": created})
        self._events.append({**base, "ph": "O", "ts": snapshot_ts, "args": {"snapshot": snapshot}})
        self._events.append({**base, "ph": "D", "ts": deleted})

    def counter(self, name, pid, ts, values):
        self._events.append({"ph": "C", "cat": "Memory", "name": name, "pid": pid, "tid": 0, "ts": ts, "args": values})

    def to_json(self):
        return json.dumps({"traceEvents": self._metadata + self._events}, separators=(",", ":"), allow_nan=False)


def _graph_inputs(graph):
    """node name -> data input tensor names, from a Graph or an iterable of Graphs."""
    graphs = [] if graph is None else [graph] if hasattr(graph, "get_operations") else list(graph)
    return {op.name: tuple(t.name for t in op.inputs) for g in graphs for op in g.get_operations()}


class Timeline:
    """A step's timeline, exportable to Chrome Trace Format (TF ``timeline.Timeline``).

    Args:
        step_stats: TF's ``StepStats`` message (``run_metadata.step_stats``, wall clock, as in TF programs) or
            dfcore's :class:`~dfcore.runtime.step_stats.StepStats` (``step_records(run_metadata).step_stats``,
            which also has the simulated clock).
        graph: optional ``Graph`` (or iterable of partition graphs) telling the data edges.
    """

    def __init__(self, step_stats, graph=None):
        if isinstance(step_stats, protos.StepStats):
            step_stats = StepStats.from_proto(step_stats)
        self._step_stats = step_stats
        self._graph_inputs = _graph_inputs(graph)

    def generate_chrome_trace_format(self, show_dataflow=True, show_memory=False, time="wall"):
        """Return the trace as a JSON string.

        Args:
            show_dataflow: draw producer → consumer and send → transfer → recv arrows.
            show_memory: add ``"<device> Tensors"`` processes with tensor lifetimes and live bytes.
            time: ``"wall"`` (``all_start_micros`` + ``all_end_rel_micros``) or ``"simulated"``
                (``sim_start_micros``/``sim_end_micros``).

        Raises:
            ValueError: on an unknown ``time``.
            FailedPreconditionError: for ``time="simulated"`` when a node has no simulated times.
        """
        if time not in _SPANS:
            raise ValueError(f'time must be "wall" or "simulated", got {time!r}')
        span = _SPANS[time]
        trace = _ChromeTrace()
        nodes = []  # (device, stats, inputs, slice)
        tensor_pids = {}
        for dev in self._step_stats.dev_stats:
            pid = trace.new_process(f"{dev.device} Compute")
            if show_memory:
                tensor_pids[dev.device] = trace.new_process(f"{dev.device} Tensors")
            device_slices = []
            for ns in dev.node_stats:
                s = _Slice(ns.node_name, *span(ns), pid)
                nodes.append((dev.device, ns, self._inputs_of(ns), s))
                device_slices.append(s)
            _assign_lanes(device_slices)
        by_name = {ns.node_name: s for _, ns, _, s in nodes}
        for _, ns, inputs, s in nodes:
            trace.region(s, "Op", ns.op_type, _op_args(ns, inputs))
        edges = self._data_edges(nodes, by_name)
        if show_dataflow:
            for tensor, src, dst in edges:
                if (src.pid, src.tid) != (dst.pid, dst.tid):
                    trace.flow(tensor, src, dst)
        _emit_transfers(trace, nodes, show_dataflow)
        if show_memory:
            _emit_memory(trace, nodes, edges, tensor_pids)
        return trace.to_json()

    def _inputs_of(self, ns):
        """Input names for args and edges: the graph's if it knows the node, else its record's."""
        if ns.node_name in self._graph_inputs:
            return self._graph_inputs[ns.node_name]
        return () if ns.detail.is_transfer else ns.detail.inputs

    def _data_edges(self, nodes, by_name):
        """``(tensor "op:i", producer slice, consumer slice)`` for every data input found."""
        edges = []
        for _, ns, inputs, s in nodes:
            names = [i for i in inputs if not i.startswith("^")]
            if transfer_role(ns) == "send" and not names and ns.node_name not in self._graph_inputs:
                producer = by_name.get(_PARTITION_SUFFIX.sub("", ns.node_name))
                if producer is not None:
                    edges.append((f"{producer.name}:0", producer, s))
            for name in names:
                op, _, index = name.partition(":")
                if op not in by_name:
                    op = _PARTITION_SUFFIX.sub("", op)
                if op in by_name and op != ns.node_name:
                    edges.append((f"{op}:{index or 0}", by_name[op], s))
        return edges


def _emit_transfers(trace, nodes, show_dataflow):
    """One ``"<src> -> <dst> Transfers"`` process per link, a ``Transfer`` event per send/recv pair."""
    by_link: dict[tuple[str, str], list[TransferPair[tuple[NodeExecStats, _Slice]]]] = {}
    for pair in pair_transfers(((device, ns, (ns, s)) for device, ns, _, s in nodes), lambda end: end[1].start):
        by_link.setdefault((pair.key.src_device, pair.key.dst_device), []).append(pair)
    for (src, dst), pairs in sorted(by_link.items()):
        pid = trace.new_process(f"{src} -> {dst} Transfers")
        slices = []
        for pair in pairs:
            start = max(pair.send[1].start, pair.recv[1].start)
            slices.append(_Slice(pair.key.tensor_name, start, max(start, pair.recv[1].end), pid))
        _assign_lanes(slices)
        for pair, s in zip(pairs, slices):
            (send_ns, send_s), (recv_ns, recv_s) = pair.send, pair.recv
            tensor_name = pair.key.tensor_name
            nbytes = recv_ns.output_bytes[0] if recv_ns.output_bytes else 0
            args = {"tensor_name": tensor_name, "bytes": nbytes, "src_device": src, "dst_device": dst,
                    "send_node": send_ns.node_name, "recv_node": recv_ns.node_name, **_loop_args(recv_ns)}
            trace.region(s, "Transfer", f"{tensor_name} ({nbytes} B)", args)
            if show_dataflow:
                trace.flow(tensor_name, send_s, s)
                trace.flow(tensor_name, s, recv_s)


def _loop_args(ns):
    """``{"frame_id", "iteration"}`` of a node run inside a loop; empty in the root frame."""
    frame_iter = ns.detail.frame_iter
    return {} if frame_iter is None else {"frame_id": frame_iter[0], "iteration": frame_iter[1]}


def _op_args(ns, inputs):
    detail = ns.detail
    args = {"name": ns.node_name, "op": ns.op_type}
    if detail.is_transfer and not inputs:
        inputs = (f"{detail.tensor_name} @{detail.peer_device}",)
    for i, name in enumerate(inputs):
        args[f"input{i}"] = name
    return {**args, **_loop_args(ns)}


def _emit_memory(trace, nodes, edges, tensor_pids):
    """Tensor lifetimes (created at the producer's start, deleted after its last reader) and live bytes."""
    last_use: dict[str, int] = {}
    for tensor, _, dst in edges:
        last_use[tensor] = max(last_use.get(tensor, dst.end), dst.end)
    changes: dict[int, dict[int, int]] = {}
    object_id = 0
    for device, ns, _, s in nodes:
        pid = tensor_pids[device]
        for index, nbytes in enumerate(ns.output_bytes):
            tensor = f"{ns.node_name}:{index}"
            deleted = max(s.end, last_use.get(tensor, s.end))
            snapshot = {"bytes": nbytes, "producer": ns.node_name}
            trace.tensor_lifetime(object_id, tensor, pid, s.tid, s.start, s.end, deleted, snapshot)
            object_id += 1
            per_time = changes.setdefault(pid, {})
            per_time[s.start] = per_time.get(s.start, 0) + nbytes
            per_time[deleted] = per_time.get(deleted, 0) - nbytes
    for pid, per_time in sorted(changes.items()):
        live = 0
        for ts in sorted(per_time):
            live += per_time[ts]
            trace.counter("Live tensor bytes", pid, ts, {"bytes": live})
