"""The graph optimizer's passes as frames: the graph as built, then after each pass that changed it.

Frames are precomputed into a ``Stack`` that ``Play`` and ``IntSlider`` drive through ``jslink`` (as the
other step-throughs), so stepping works in a static HTML export with no kernel. Each frame draws the
graph of a :class:`~dfcore.runtime.grappler.PassRecord` (one cluster per device) with the nodes that pass
added or rewrote outlined, and names what it removed. Graphs over :data:`MAX_DRAWN_NODES` nodes are listed
by op type instead of drawn.
"""

import collections
import html

import ipywidgets as widgets

from dfcore.runtime.grappler import PassRecord

from . import _dot, _html, _palette, _render
from ._format import count, device_sort_key, short_device

MAX_DRAWN_NODES = 150
_CHANGED = {"penwidth": "3", "color": "#000000"}


def snapshot_dot(graph, changed=frozenset(), title=None):
    """DOT text of a record's graph (``(name, op, inputs, device)`` tuples), ``changed`` nodes outlined."""
    by_device = collections.defaultdict(list)
    for name, op, _, device in graph:
        extra = _CHANGED if name in changed else {}
        by_device[device].append(_dot._node_line(name, op, device, tooltip=f"{name} ({op}) on {device}", **extra))
    lines = []
    for index, device in enumerate(sorted(by_device, key=device_sort_key)):
        color = _palette.device_color(device)
        lines += _dot._cluster(by_device[device], index, short_device(device), color, _palette.tint(color, 0.93),
                               "rounded,filled")
    for name, _, inputs, _ in graph:
        for source in inputs:
            control = source.startswith("^")
            src, _, port = source.lstrip("^").partition(":")
            label = f":{port}" if port and port != "0" else None
            lines.append(f"  {_dot.quote(src)} -> {_dot.quote(name)}"
                         f"{_dot._attrs(style='dashed' if control else None, label=label)};")
    head = f"  graph [label={_dot.quote(title)}];\n" if title else ""
    return "digraph G {\n  " + _dot._HEADER + "\n" + head + "\n".join(lines) + "\n}\n"


def frames(records):
    """``[(caption, graph, changed names)]``: the graph as built, then after each pass that changed it."""
    if not records:
        return []
    result: list[tuple[str, tuple[tuple[str, str, tuple[str, ...], str], ...], frozenset[str]]] = [
        ("as built (pruned and placed), before any pass", records[0].graph_before, frozenset())]
    for record in records:
        if record.changed:
            when = f"iteration {record.iteration}" if record.iteration >= 0 else "classic L1 pass"
            caption = (f"after {record.optimizer} ({when}): {record.nodes_before} → {record.nodes_after} nodes; "
                       f"removed {len(record.removed)}, added {len(record.added)}, rewritten {len(record.rewritten)}")
            result.append((caption, record.graph, frozenset(record.added + record.rewritten)))
    return result


def frame_html(caption, graph, changed, removed=()):
    """One frame: caption, picture (or a count by op type for a large graph), what was removed."""
    parts = [_html.heading(caption)]
    if len(graph) <= MAX_DRAWN_NODES:
        parts.append(_render.render(snapshot_dot(graph, changed)))
    else:
        kinds = collections.Counter(op for _, op, _, _ in graph)
        parts.append(_html.note(f"{count(len(graph), 'node')}: too many to draw; by op type: "
                                + ", ".join(f"{op} × {n}" for op, n in kinds.most_common(12))))
    if removed:
        shown = ", ".join(html.escape(n) for n in removed[:20]) + (" …" if len(removed) > 20 else "")
        parts.append(_html.note(f"removed: {shown}"))
    return "".join(parts)


class PassFrames(widgets.VBox):
    """The frames of ``records`` with ``play``, ``slider``, ``stack`` and their ``links``."""

    def __init__(self, records, **kwargs):
        wrong = [type(r).__name__ for r in records if not isinstance(r, PassRecord)]
        if wrong:
            raise TypeError(f"GraphView expects PassRecords (Session.optimizer_records) as passes, got {wrong[0]}")
        self.frames = frames(records)
        removed = [()] + [r.removed for r in records if r.changed]
        pages = [widgets.HTML(frame_html(c, g, ch, rm)) for (c, g, ch), rm in zip(self.frames, removed)]
        if not pages:
            pages = [widgets.HTML(_html.note("No optimizer pass ran on this run signature (optimizer off, a graph "
                                             "under min_graph_nodes, or control flow)."))]
        last = len(pages) - 1
        self.stack = widgets.Stack(pages, selected_index=0, layout=widgets.Layout(overflow="auto"))
        self.play = widgets.Play(value=0, min=0, max=last, step=1, interval=1600, description="play")
        self.slider = widgets.IntSlider(value=0, min=0, max=last, description="pass",
                                        layout=widgets.Layout(width="420px"))
        self.links = [widgets.jslink((self.play, "value"), (self.slider, "value")),
                      widgets.jslink((self.slider, "value"), (self.stack, "selected_index"))]
        controls = widgets.HBox([self.play, self.slider, widgets.HTML(_html.note(
            "frame 0: the graph as built · then one frame per pass that changed it (outlined: added or rewritten)"))])
        super().__init__([controls, self.stack], **kwargs)
