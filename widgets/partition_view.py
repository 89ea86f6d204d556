"""``PartitionView``: one run's graph before and after partitioning, side by side.

Left, the user graph of the run (the ops ``session.run(fetches, feed_dict)`` needs,
coloured by device); then one panel per device with what that device executes:
its ops plus the ``_Send``/``_Recv`` nodes the runtime inserted, highlighted and
labelled with their ``tensor_name`` and rendezvous key (control-edge pairs dashed),
and, on the client device, the call frame's ``_Arg`` (feed) and ``_Retval`` (fetch)
endpoints in the client grey. Above, the counts (cross-device edges, pairs inserted,
transfers saved by de-duplication, feed and fetch endpoints) and a legend; below, a
table of the pairs.

Control flow: ``Switch``/``Merge``/``Enter``/``Exit``/``NextIteration``/``LoopCond`` have their
own shapes; each copy of a loop's control that partitioning added on a device (TF's
``graph_partition.cc`` ``AddControlLoop``; Yu et al., EuroSys 2018, §4.2) is a dotted box, and
counted. Given the ``run_metadata`` of a traced run of the same fetches, the nodes that ran dead
in every execution (the untaken branch of a ``tf.cond``) are greyed in every panel, and the loop's
transfers per iteration (from the ``frame_id:iter`` of the rendezvous keys) are tabled.
"""

import collections

import ipywidgets as widgets

from dfcore.framework.rendezvous_key import parse_key
from dfcore.runtime.config import step_records
from dfcore.runtime.partition import PartitionNode
from dfcore.runtime.sendrecv_ops import rendezvous_key
from dfcore.runtime.subgraph import is_client_endpoint

from . import _check, _control_flow, _dot, _html, _palette, _render
from ._format import count, device_sort_key, short_device
from ._static import StaticPicture

_ROW = widgets.Layout(display="flex", flex_flow="row wrap", align_items="flex-start", width="100%")
_PANEL = widgets.Layout(flex="0 1 auto", max_width="100%", margin="0 10px 10px 0", border="1px solid #DDD",
                        padding="2px")


def pair_rows(partitions, records=None):
    """One row per inserted pair: ``(tensor_name, kind, from, to, send node, recv node, key)``.

    ``kind`` is ``data`` or ``control``; rows are sorted by tensor name. Feeds and
    fetches (``_Arg``/``_Retval``, or a partial run's client-terminated ends) are not pairs.
    The key is written with ``0:0``; given the ``StepRecords`` of a run, each row gets one more
    field: how many times the pair carried a tensor in that run (once per loop iteration inside a loop).
    """
    sends: dict[tuple[str, str, str], PartitionNode] = {}
    recvs: dict[tuple[str, str, str], PartitionNode] = {}
    control: set[str] = set()
    for graph in partitions.values():
        control |= _dot.control_pair_nodes(graph)
        for node in graph.nodes:
            if node.op in ("_Send", "_Recv") and not node.attrs.get("client_terminated"):
                key = (node.attrs["tensor_name"], node.attrs["send_device"], node.attrs["recv_device"])
                (sends if node.op == "_Send" else recvs)[key] = node
    carried = collections.Counter(parse_key(t.key).edge_name for t in records.transfers) if records else None
    rows = []
    for key in sorted(set(sends) & set(recvs)):
        send, recv = sends[key], recvs[key]
        row = (key[0], "control" if send.name in control else "data", short_device(key[1]),
               short_device(key[2]), send.name, recv.name, rendezvous_key(send))
        rows.append(row if carried is None else (*row, carried[key[0]]))
    return rows


class PartitionView(StaticPicture, widgets.VBox):
    """Before/after partitioning of one run signature.

    Args:
        session: a ``dfcore.Session``; ``session.partitions(fetches, feed_dict)`` is
            called (this places the graph and builds the plan without running it).
        fetches: what ``session.run`` would fetch (a tensor, op, or nested list/dict of them).
        feed_dict: optional feeds, as for ``session.run``.
        run_metadata: optional ``RunMetadata`` of a run of the same fetches with
            ``RunOptions(trace_level=FULL_TRACE)``: its dead nodes are greyed, its loop transfers counted.

    Attributes:
        partitions: the ``Partitions`` shown (``{device: PartitionGraph}`` with ``.stats``).
        before_dot: DOT text of the user graph. dots: ``{device: DOT text}`` per partition.
        panels: the ``HBox`` of pictures. counts: ``HTML`` with the numbers. legend: ``HTML`` naming
        the transfer and client colours and shapes. pairs: ``HTML`` table.
        dead: ``{device: frozenset of node names}`` greyed (empty without ``run_metadata``).
        control_loops: ``[(device, frame, node names)]`` of the loop-control copies.
        iteration_rows: ``[(frame_id, iteration, transfers, dead transfers)]`` (empty without ``run_metadata``).

    Raises:
        TypeError: ``session`` is not a Session, or ``run_metadata`` not a RunMetadata.
        ValueError: ``run_metadata`` is of an untraced run.
    """

    def __init__(self, session, fetches, feed_dict=None, run_metadata=None, **kwargs):
        _check.expect("PartitionView", "session", session, _check.SESSION)
        _check.expect("PartitionView", "run_metadata", run_metadata, _check.RUN_METADATA, optional=True)
        run = step_records(run_metadata) if run_metadata is not None else None
        self.dead = _control_flow.dead_throughout(run) if run is not None else {}
        self.iteration_rows = _control_flow.transfers_per_iteration(run) if run is not None else []
        self.partitions = session.partitions(fetches, feed_dict)
        self.control_loops = _control_flow.control_loops(self.partitions)
        self.stats = self.partitions.stats
        originals = {node.original for g in self.partitions.values() for node in g.nodes if node.original is not None}
        ops = [op for op in session.graph.get_operations() if op in originals]
        records = {r.node_name: r for r in session.placement_records()}
        self.devices = sorted(self.partitions, key=device_sort_key)
        dead_ops = frozenset().union(*self.dead.values())
        self.before_dot = _dot.graph_dot(ops, records, title="before: the user graph", dead=dead_ops)
        self.dots = {d: _dot.partition_dot(self.partitions[d], title=f"after: {short_device(d)}",
                                           dead=self.dead.get(d, frozenset()))
                     for d in self.devices}
        pictures = [widgets.HTML(_render.render(self.before_dot), layout=_PANEL)]
        pictures += [widgets.HTML(_render.render(self.dots[d]), layout=_PANEL) for d in self.devices]
        self.panels = widgets.HBox(pictures, layout=_ROW)
        self.pair_rows = pair_rows(self.partitions, run)
        self.counts = widgets.HTML(self._counts_html())
        self.legend = widgets.HTML(_legend_html())
        self.pairs = widgets.HTML(_html.heading("Inserted _Send/_Recv pairs") + (_html.table(
            ["tensor_name", "kind", "from", "to", "_Send", "_Recv", "rendezvous key"]
            + (["times in the run"] if run is not None else []), self.pair_rows,
            max_height_px=260) if self.pair_rows else _html.note("None: every edge stays on one device.")))
        children = [self.counts, self.legend, self.panels, self.pairs]
        if self.iteration_rows:
            self.iterations = widgets.HTML(_html.heading("Transfers per loop iteration (from the keys' frame:iter)")
                                           + _html.table(["frame_id", "iteration", "transfers", "of them dead"],
                                                         self.iteration_rows, numeric=(0, 1, 2, 3),
                                                         max_height_px=260))
            children.append(self.iterations)
        super().__init__(children, **kwargs)

    def _counts_html(self):
        s = self.stats
        rows = [("cross-device edges", f"{s.cross_device_data_edges + s.cross_device_control_edges} "
                 f"({s.cross_device_data_edges} data, {s.cross_device_control_edges} control)"),
                ("pairs inserted", f"{s.pairs_inserted} ({s.data_pairs} data, {s.control_pairs} control)"),
                ("transfers saved by de-duplication", str(s.transfers_saved_by_dedup)),
                ("feed / fetch endpoints", self._endpoints_text()),
                ("TF's log line", s.vlog_line())]
        if self.control_loops:
            rows.append(("loop-control copies", "; ".join(f"{frame} on {short_device(device)} ({len(names)} nodes)"
                                                          for device, frame, names in self.control_loops)))
        if self.dead:
            rows.append(("ran dead in the run given", str(sum(len(v) for v in self.dead.values())) + " nodes (grey)"))
        return _html.heading(f"Partitioning into {len(self.devices)} device graphs") + _html.table(None, rows)

    def _endpoints_text(self):
        ops = [n.op for g in self.partitions.values() for n in g.nodes if is_client_endpoint(n)]
        return f"{ops.count('_Arg')} _Arg (feeds), {ops.count('_Retval')} _Retval (fetches): the call frame"

    def __repr__(self):
        s = self.stats
        loops = f", {count(len(self.control_loops), 'control loop')}" if self.control_loops else ""
        dead = f", {sum(len(v) for v in self.dead.values())} dead" if self.dead else ""
        return (f"<PartitionView: {count(len(self.devices), 'partition')}, "
                f"{count(s.pairs_inserted, 'pair')} inserted ({s.data_pairs} data, {s.control_pairs} control), "
                f"{s.transfers_saved_by_dedup} saved by dedup{loops}{dead}>")


def _legend_html():
    """The partition panels' legend: a pair end (rendezvous), a call-frame endpoint (client), dead nodes,
    loop-control copies and the control-flow shapes."""
    return _html.legend([], [_html.Raw(_html.swatch("white", _palette.TRANSFER) + "_Send/_Recv pair: through the "
                                       "rendezvous"),
                             _html.Raw(_html.swatch("white", _palette.CLIENT) + "call frame on the client: _Arg "
                                       "feeds (wide side up), _Retval fetches (wide side down)"),
                             _html.Raw(_html.swatch(_palette.DEAD_FILL, _palette.DEAD_INK) + "ran dead in the run "
                                       "(grey dashed edges carried dead tensors)"),
                             _html.Raw("dotted box: a copy of a loop's control on that device"),
                             _CONTROL_FLOW_SHAPES])


#: How the control-flow primitives are drawn (see ``widgets._palette.DOT_SHAPES``).
_CONTROL_FLOW_SHAPES = ("shapes: Switch diamond, Merge inverted triangle, Enter arrow in, Exit arrow out, "
                        "NextIteration hexagon, LoopCond diamond with marked corners")
