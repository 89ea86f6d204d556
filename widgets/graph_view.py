"""``GraphView``: the dataflow graph, coloured by device, with a node picker.

Ops sit in one cluster per device (their placement when a session is given, else
their requested device); colocation groups are dashed boxes inside their device;
edges that cross devices are drawn in the transfer colour: at run time each becomes
a ``_Send``/``_Recv`` pair (see ``PartitionView``). Picking a node shows its type,
inputs, attrs, requested and assigned device, and why the placer chose it; the
picked node is outlined in the picture. Given the ``run_metadata`` of a traced run, the
ops that ran dead in it (the untaken branch of a ``tf.cond``) are grey and dashed. Given the graph
optimizer's ``passes`` (``session.optimizer_records(fetches, feed_dict)``), a step-through below shows the
graph before and after each pass that changed it (kernel-free: frames linked to a slider and Play).
"""

import html
import itertools

import ipywidgets as widgets

from dfcore.runtime.config import step_records

from . import _check, _control_flow, _dot, _html, _palette, _render
from ._format import count, device_sort_key, format_attr
from ._optimizer_frames import PassFrames
from ._static import StaticPicture

_PREFIXES = itertools.count(1)
_OUTLINE = "{stroke:#000;stroke-width:3px}"


class GraphView(StaticPicture, widgets.VBox):
    """The graph as a picture plus a node picker.

    Args:
        graph: a ``dfcore.Graph`` (all its ops are drawn, in graph order).
        session: optional ``dfcore.Session`` on ``graph``; its ``placement_records()``
            give each op's assigned device and colocation group (run it first).
        run_metadata: optional ``RunMetadata`` of a run with ``RunOptions(trace_level=FULL_TRACE)``;
            the ops that ran dead in every execution of it are greyed.
        passes: optional tuple of :class:`~dfcore.runtime.grappler.PassRecord` (``Session.optimizer_records``).

    Attributes:
        dot: the DOT text drawn. picture: the ``HTML`` with the SVG (or the DOT fallback).
        picker: the ``Dropdown`` of op names. details: the ``HTML`` describing the picked op.
        dead: the names of the ops greyed (empty without ``run_metadata``).
        passes: the :class:`~widgets._optimizer_frames.PassFrames` step-through (None without ``passes``).

    Raises:
        TypeError: ``graph`` is not a Graph, ``session`` not a Session, ``run_metadata`` not a RunMetadata,
            ``passes`` not a tuple or list of PassRecords.
        ValueError: ``run_metadata`` is of an untraced run.
    """

    def __init__(self, graph, session=None, run_metadata=None, passes=None, **kwargs):
        _check.expect("GraphView", "graph", graph, _check.GRAPH)
        _check.expect("GraphView", "session", session, _check.SESSION, optional=True)
        _check.expect("GraphView", "run_metadata", run_metadata, _check.RUN_METADATA, optional=True)
        _check.expect("GraphView", "passes", passes, _check.PASS_RECORDS, optional=True)
        dead = _control_flow.dead_throughout(step_records(run_metadata)) if run_metadata is not None else {}
        self.dead = frozenset().union(*dead.values())
        self._ops = list(graph.get_operations())
        records = session.placement_records() if session is not None else []
        self._records = {r.node_name: r for r in records}
        self._prefix = f"dfgv{next(_PREFIXES)}-"
        self.dot = _dot.graph_dot(self._ops, self._records, id_prefix=self._prefix, dead=self.dead)
        self._devices = sorted({_dot.op_device(op, self._records) for op in self._ops},
                               key=device_sort_key)
        self.picture = widgets.HTML(_render.render(self.dot))
        names = [op.name for op in self._ops]
        self._index = {name: i for i, name in enumerate(names)}
        self.picker = widgets.Dropdown(options=names, value=names[0] if names else None, description="node",
                                       layout=widgets.Layout(width="320px"))
        self.details = widgets.HTML(self._details_html(self.picker.value))
        self.picker.observe(self._on_pick, names=["value"])
        header = widgets.HTML(self._header_html(session))
        self.passes = None if passes is None else PassFrames(passes)
        extra = [] if self.passes is None else [widgets.HTML(_html.heading("Graph optimizer, pass by pass")),
                                                self.passes]
        super().__init__([header, self.picture, self.picker, self.details, *extra], **kwargs)

    def _header_html(self, session):
        extras = [_html.Raw(f'<span style="color:{_palette.TRANSFER}">━</span> edge across devices '
                            "(a _Send/_Recv pair at run time)"),
                  _html.Raw("┄ control edge"), _html.Raw("dashed box: colocation group")]
        if self.dead:
            extras.append(_html.Raw(_html.swatch(_palette.DEAD_FILL, _palette.DEAD_INK)
                                    + f"ran dead in the run given ({len(self.dead)} ops; grey dashed edges "
                                    "carried dead tensors)"))
        lines = [_html.legend(self._devices, extras)]
        if session is not None and not self._records:
            lines.append(_html.note("Nothing placed yet: run the session once to see assigned devices."))
        elif session is None:
            lines.append(_html.note("No session given: ops are shown on their requested devices."))
        return "".join(lines)

    def _on_pick(self, change):
        self.details.value = self._details_html(change["new"])

    def _details_html(self, name):
        if name is None:
            return _html.note("The graph is empty.")
        index = self._index[name]
        op = self._ops[index]
        record = self._records.get(name)
        inputs = [t.name for t in op.inputs] + [f"^{c.name}" for c in op.control_inputs]
        outputs = [f"{t.name} {t.dtype.name} {t.shape}" for t in op.outputs]
        attrs = [f"{k} = {format_attr(v)}" for k, v in sorted(op.attrs.items())]
        assigned = record.assigned_device if record else (op.assigned_device or "not placed yet")
        rows = [("type", op.type), ("inputs", ", ".join(inputs) or "none"), ("outputs", ", ".join(outputs) or "none"),
                ("attrs", _html.Raw("<br>".join(html.escape(a) for a in attrs) or "none")),
                ("requested device", op.device or "none (any device)"),
                ("assigned device", _html.Raw(_html.device_chip(assigned) + " " + html.escape(assigned))
                 if record or op.assigned_device else assigned)]
        if record is not None:
            rows += [("why", record.reason), ("colocation group", record.colocation_group or "none")]
        style = f"<style>#{self._prefix}{index} polygon, #{self._prefix}{index} path, " \
                f"#{self._prefix}{index} ellipse, #{self._prefix}{index} polyline {_OUTLINE}</style>"
        return style + _html.table(["", name], rows)

    def __repr__(self):
        dead = f", {len(self.dead)} dead" if self.dead else ""
        return f"<GraphView: {count(len(self._ops), 'op')} on {count(len(self._devices), 'device')}{dead}>"

