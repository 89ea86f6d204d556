"""``PlacementView``: the cost-model placer's decisions, as a table and node by node on the simulated clock.

Shows a :class:`~dfcore.runtime.cost_placer.CostPlacement` (from ``Session(placement="cost_model")`` after
a run, or from :func:`dfcore.runtime.cost_placer.place`): per node, every feasible device's estimated finish
(its inputs' transfer, its wait for the device, its compute) and the winner; then a step-through in which
frame k shows the devices' lanes with the first k nodes placed and node k's candidates drawn as ghosts
(transfer hatched, compute outlined, the winner solid), so the devices' simulated availability grows node by
node. Frames are precomputed into a ``Stack`` driven by ``Play``/``IntSlider`` through ``jslink``: it steps
with no kernel.
"""

import ipywidgets as widgets

from dfcore.runtime.cost_placer import CostPlacement

from . import _check, _html, _palette, _svg
from ._format import count, device_sort_key, format_bytes, format_us, short_device
from ._static import StaticPicture

_LABEL_PX, _LANE_PX, _TOP_PX = 132, 30, 8
_TRANSFER_FILL = _palette.tint(_palette.TRANSFER, 0.75)
#: Ghost bars are drawn up to this multiple of the estimated step time, then cut with a ▸.
CLIP = 1.5


def decision_rows(decisions, devices):
    """Rows ``(#, node, op type, cost, <finish per device>…, placed on, why)``; a device's cell is its finish in
    µs (``★`` on the winner, ``+t in`` when inputs cross a link, ``no memory`` when it does not fit), ``—``
    when it is not feasible."""
    rows = []
    for d in decisions:
        by_device = {c.device: c for c in d.candidates}
        cells = []
        for device in devices:
            c = by_device.get(device)
            if c is None:
                cells.append("—")
                continue
            text = format_us(c.finish_s * 1e6)
            if c.transfer_s > 0:
                text += f" (+{format_us(c.transfer_s * 1e6)} in)"
            if not c.fits:
                text = f"no memory ({format_bytes(c.need_bytes)} > {format_bytes(c.free_bytes)} free)"
            cells.append(("★ " + text) if device == d.device else text)
        rows.append((d.step, d.node_name, d.op_type, d.cost_source, *cells, _html.device_chip(d.device), d.reason))
    return rows


def memory_after(decisions, devices):
    """``[{device: bytes held}]`` after 0, 1, … len(decisions) nodes (the winners' ``need_bytes`` summed)."""
    held = dict.fromkeys(devices, 0)
    out = [dict(held)]
    for d in decisions:
        held[d.device] += d.winner.need_bytes
        out.append(dict(held))
    return out


def frame_svg(decisions, k, devices, t_end_s, width_px=760):
    """SVG of frame ``k``: the lanes with decisions ``[0, k)`` placed and decision ``k``'s candidates as ghosts
    (none when ``k == len(decisions)``). Time runs from 0 to ``t_end_s`` (> 0) across the lanes."""
    plot = width_px - _LABEL_PX - 12
    lane_y = {dev: _TOP_PX + i * _LANE_PX for i, dev in enumerate(devices)}
    axis_y = _TOP_PX + len(devices) * _LANE_PX + 4

    def x(t):
        return _LABEL_PX + plot * min(t, t_end_s) / t_end_s

    parts = [_svg.time_axis(_LABEL_PX, plot, t_end_s, axis_y, lambda t: format_us(t * 1e6), grid_top=_TOP_PX)]
    for dev, y in lane_y.items():
        parts.append(_svg.text(4, y + 17, short_device(dev), size=11, weight="bold", fill=_palette.device_color(dev)))
        parts.append(_svg.line(_LABEL_PX, y + _LANE_PX - 2, _LABEL_PX + plot, y + _LANE_PX - 2, "#EEEEEE"))
    for d in decisions[:k]:
        w, y = d.winner, lane_y[d.device]
        title = f"{d.node_name} ({d.op_type}) on {short_device(d.device)}: {format_us(w.start_s * 1e6)} → " \
                f"{format_us(w.finish_s * 1e6)}"
        parts.append(_svg.rect(x(w.start_s), y + 5, max(x(w.finish_s) - x(w.start_s), 1.5), _LANE_PX - 12,
                               _palette.device_fill(d.device), _palette.device_color(d.device), title=title))
    if k < len(decisions):
        d = decisions[k]
        for c in d.candidates:
            parts.append(_ghost(d, c, lane_y[c.device], x, t_end_s))
    return _svg.document(width_px, axis_y + 22, "".join(parts))


def _ghost(d, c, y, x, t_end_s):
    won = c.device == d.device
    color = _palette.device_color(c.device) if c.fits else "#B0B0B0"
    out = []
    if c.transfer_s > 0:
        out.append(_svg.rect(x(c.ready_s - c.transfer_s), y + 9, x(c.ready_s) - x(c.ready_s - c.transfer_s),
                             _LANE_PX - 20, _TRANSFER_FILL, _palette.TRANSFER, dash="3,2",
                             title=f"inputs arrive over the link: {format_us(c.transfer_s * 1e6)}"))
    title = (f"{d.node_name} on {short_device(c.device)}: start {format_us(c.start_s * 1e6)}, finish "
             f"{format_us(c.finish_s * 1e6)}" + ("" if c.fits else " (does not fit in memory)"))
    fill = _palette.device_fill(c.device) if won else "#FFFFFF"
    width = max(x(c.finish_s) - x(c.start_s), 2.5)
    out.append(_svg.rect(x(c.start_s), y + 3, width, _LANE_PX - 8, fill, color, title=title,
                         stroke_width=2.2 if won else 1.2, dash=None if won else "4,2"))
    label = ("★ " if won else "") + format_us(c.finish_s * 1e6) + ("" if c.fits else " ✗ memory")
    if c.finish_s > t_end_s:
        label = "▸ " + label
    out.append(_svg.text(min(x(c.finish_s) + 4, x(t_end_s) - 2), y + 17, label, size=10,
                         anchor="end" if c.finish_s >= t_end_s * 0.8 else "start"))
    return "".join(out)


class PlacementView(StaticPicture, widgets.VBox):
    """The cost-model placer's decisions: a table, and a kernel-free step-through node by node.

    Args:
        source: a Session placed with ``placement="cost_model"`` (after a run) or a ``CostPlacement``.
        max_rows: at most this many decisions in the table; max_frames: in the step-through (the first ones).
        width_px: width of a frame's drawing.

    Attributes:
        placement: the ``CostPlacement``; decisions (the ones stepped through); devices (reading order);
        table (``HTML``); play, slider, stack (the frames' ``Stack``), links.

    Raises:
        TypeError: ``source`` is neither a Session nor a CostPlacement.
        ValueError: a Session not (yet) placed by the cost-model placer.
    """

    def __init__(self, source, max_rows=200, max_frames=60, width_px=760, **kwargs):
        self.placement = _placement_of(source)
        every = self.placement.decisions()
        self.devices = sorted(self.placement.memory_limit_bytes, key=device_sort_key)
        self.decisions = every[:max_frames]
        self._total = len(every)
        shown_end = max((d.winner.finish_s for d in self.decisions), default=0.0)
        self.t_end_s = (max([c.finish_s for d in self.decisions for c in d.candidates if c.finish_s <= CLIP *
                             max(shown_end, 1e-12)] + [shown_end]) or 1e-6)
        memory = memory_after(self.decisions, self.devices)
        pages = [widgets.HTML(self._frame_html(k, memory[k], width_px)) for k in range(len(self.decisions) + 1)]
        self.stack = widgets.Stack(pages, selected_index=0, layout=widgets.Layout(overflow="auto"))
        last = len(pages) - 1
        self.play = widgets.Play(value=0, min=0, max=last, step=1, interval=1200, description="play")
        self.slider = widgets.IntSlider(value=0, min=0, max=last, description="node",
                                        layout=widgets.Layout(width="420px"))
        self.links = [widgets.jslink((self.play, "value"), (self.slider, "value")),
                      widgets.jslink((self.slider, "value"), (self.stack, "selected_index"))]
        rows = decision_rows(every[:max_rows], self.devices)
        head = ["#", "node", "op type", "cost"] + [f"{short_device(d)} finish" for d in self.devices] + [
            "placed on", "why"]
        shown = "" if max_rows >= len(every) else f" (the first {max_rows})"
        self.table = widgets.HTML(_html.heading(f"Decisions{shown}") + _html.table(
            head, rows, numeric=tuple(range(4, 4 + len(self.devices))), max_height_px=320))
        controls = widgets.HBox([self.play, self.slider, widgets.HTML(_html.note(
            "frame 0: nothing placed · frame k: node k−1 placed, node k's candidates as ghosts"))])
        super().__init__([widgets.HTML(self._header_html()), controls, self.stack, self.table], **kwargs)

    def _header_html(self):
        p = self.placement
        memory = ", ".join(f"{short_device(d)} {format_bytes(p.memory_bytes[d])} of "
                           f"{format_bytes(p.memory_limit_bytes[d])}" for d in self.devices)
        stepped = "" if len(self.decisions) == self._total else f" (stepping through the first {len(self.decisions)})"
        return (_html.heading(f"Cost-model placement (whitepaper §3.2.1): {count(self._total, 'node')}{stepped} on "
                              f"{count(len(self.devices), 'device')}, estimated step "
                              f"{format_us(p.estimated_step_s * 1e6)}")
                + _html.note(f"memory held: {memory}")
                + _html.legend(self.devices, [_html.Raw(_html.swatch(_TRANSFER_FILL, _palette.TRANSFER)
                                                        + "inputs crossing a link"),
                                              _html.Raw("dashed: a candidate · solid ★: the earliest finish")]))

    def _frame_html(self, k, memory, width_px):
        if k < len(self.decisions):
            d = self.decisions[k]
            options = ", ".join(f"{short_device(c.device)} {format_us(c.finish_s * 1e6)}"
                                + ("" if c.fits else " (no memory)") for c in d.candidates)
            caption = (f"node {k}: {d.node_name} ({d.op_type}, {d.cost_source} cost) finishes at {options} → "
                       f"{short_device(d.device)} ({d.reason})")
        else:
            caption = (f"all {count(len(self.decisions), 'node')} placed: the last finishes at "
                       f"{format_us(max((d.winner.finish_s for d in self.decisions), default=0.0) * 1e6)}")
        held = " · ".join(f"{short_device(d)} {format_bytes(memory[d])}" for d in self.devices)
        return (_html.heading(caption) + frame_svg(self.decisions, k, self.devices, self.t_end_s, width_px)
                + _html.note(f"memory held so far: {held}"))

    def __repr__(self):
        return (f"<PlacementView: {count(self._total, 'node')} on {count(len(self.devices), 'device')}, "
                f"estimated step {format_us(self.placement.estimated_step_s * 1e6)}>")


def _placement_of(source):
    _check.expect("PlacementView", "source", source, _check.PLACEMENT)
    if isinstance(source, CostPlacement):
        return source
    placement = source.placement()
    if not isinstance(placement, CostPlacement):
        raise ValueError("PlacementView needs a session placed by the cost-model placer: "
                         "tf.Session(placement='cost_model'), run once (or call session.partitions)")
    return placement
