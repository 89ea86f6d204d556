"""``PipelineView``: a few training steps fed by an input pipeline, as lanes, with the stall marked.

One panel per :class:`~dfcore.data.pipeline_run.PipelineRun` (``feed_dict``, ``tf.data`` without and
with ``num_parallel_calls`` and ``prefetch`` ...), picked by ``ToggleButtons`` joined to a ``Stack``
with ``jslink`` (works without a kernel). Each panel draws, over the first ``max_steps`` steps:
a lane per input thread (map calls, prefetch fills, the client preparing a feed_dict), the host's
``IteratorGetNext`` (dashed red while the accelerator waits for data: starved), the host→accelerator
copies, the accelerator's training steps, and below them the occupancy of each prefetch buffer and
queue over time as step plots. The summary gives the period per step, the starved and idle
shares of the run and, with ``batch_size``, images per second.
"""

import ipywidgets as widgets

from dfcore.data.pipeline_run import TRAIN_STEP, WAIT_OP_TYPES, PipelineRun, split_lane_device

from . import _html, _palette, _svg
from ._format import count, format_us, short_device
from ._static import StaticPicture

_LANE_H, _GAP, _LEFT, _PLOT_H = 18, 6, 190, 60
_WAITS = WAIT_OP_TYPES
_STARVED = _palette.STARVED


def lanes_of(run: PipelineRun) -> list[tuple[str, str, list]]:
    """``(label, device, node stats)`` per lane: input threads first, then the host and the accelerator."""
    def key(dev):
        lane = split_lane_device(dev.device)
        return (0, lane[1], lane[2]) if lane else (1, dev.device, 0)

    out = []
    for dev in sorted(run.step_stats.dev_stats, key=key):
        lane = split_lane_device(dev.device)
        label = f"{lane[1]} thread {lane[2]}" if lane else short_device(dev.device)
        out.append((label, dev.device, list(dev.node_stats)))
    return out


def _bar_color(op_type: str, device: str) -> tuple[str, str]:
    if op_type in _WAITS:
        return _palette.tint(_STARVED, 0.7), _STARVED
    if op_type in ("_Send", "_Recv"):
        return _palette.tint(_palette.TRANSFER, 0.55), _palette.TRANSFER
    if op_type == TRAIN_STEP:
        return _palette.device_fill(device), _palette.device_color(device)
    return _palette.tint(_palette.CPU_GREYS[0], 0.6), _palette.CPU_GREYS[0]


def draw(run: PipelineRun, max_steps: int = 6, width_px: int = 900) -> str:
    """The SVG of ``run``'s first ``max_steps`` steps: lanes, then one occupancy plot per buffer (a string)."""
    steps = min(max_steps, len(run.step_ends_us))
    t0 = run.step_starts_us[0] if steps else 0
    t_end = max(run.step_ends_us[steps - 1] - t0, 1) if steps else 1
    lanes = lanes_of(run)
    plot_w = width_px - _LEFT - 20
    top = 8
    axis_y = top + len(lanes) * (_LANE_H + _GAP) + 4
    buffers = list(run.occupancy.items()) or [("", ())]
    height = axis_y + 30 + len(buffers) * (_PLOT_H + 14) + 14

    def x(t_us):
        return _LEFT + plot_w * min(max(t_us - t0, 0), t_end) / t_end

    parts = [_svg.time_axis(_LEFT, plot_w, t_end, axis_y, format_us, grid_top=top)]
    for i, (label, device, nodes) in enumerate(lanes):
        y = top + i * (_LANE_H + _GAP)
        parts.append(_svg.text(_LEFT - 6, y + _LANE_H - 5, label, anchor="end"))
        for ns in nodes:
            start, end = ns.all_start_micros, ns.all_end_micros
            if start - t0 >= t_end or (ns.op_type in _WAITS and end == start):
                continue  # past the steps drawn, or a wait that did not wait
            fill, stroke = _bar_color(ns.op_type, device)
            title = f"{ns.node_name}: {format_us(start - t0)} – {format_us(end - t0)} ({format_us(end - start)})"
            parts.append(_svg.rect(x(start), y, max(x(end) - x(start), 1.5), _LANE_H, fill, stroke, title=title,
                                   dash="4,2" if ns.op_type in _WAITS else None))
    for i, (name, levels) in enumerate(buffers):
        parts.append(_occupancy(name, levels, t0, t_end, x, axis_y + 30 + i * (_PLOT_H + 14)))
    return _svg.document(width_px, height, "".join(parts))


def _occupancy(name: str, levels: tuple, t0: int, t_end: int, x, y0: float) -> str:
    """A step plot of one buffer's level over the drawn steps (or a note that there is no buffer)."""
    peak = max([level for _, level in levels] + [1])
    title = f"{name or 'buffer'} occupancy (elements; max {peak})"
    parts = [_svg.text(_LEFT, y0 + 8, title, size=10),
             _svg.text(_LEFT - 6, y0 + 20, str(peak), anchor="end", size=10),
             _svg.text(_LEFT - 6, y0 + _PLOT_H, "0", anchor="end", size=10),
             _svg.line(_LEFT, y0 + _PLOT_H, x(t0 + t_end), y0 + _PLOT_H, _palette.INK)]
    if not levels:
        return "".join(parts + [_svg.text(_LEFT + 6, y0 + _PLOT_H - 6, "no prefetch buffer or queue", size=10)])

    def y(level):
        return y0 + _PLOT_H - (_PLOT_H - 16) * level / peak

    points, level = [(x(t0), y(0))], 0
    for t_us, new in levels:
        if t_us - t0 > t_end:
            break
        points += [(x(t_us), y(level)), (x(t_us), y(new))]
        level = new
    points.append((x(t0 + t_end), y(level)))
    path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
    color = _palette.ACCELERATOR_HUES[2]
    return "".join(parts) + f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.5"/>'


def summary(run: PipelineRun, batch_size: int | None = None) -> str:
    """One line: period per step, starved and idle shares, images/s with ``batch_size``."""
    text = (f"{run.name}: {len(run.step_ends_us)} steps on the {run.clock} clock · period "
            f"{format_us(run.period_us)} per step · starved {100 * run.starved_fraction:.0f} % of the time "
            f"(waiting for its batch) · accelerator idle {100 * run.idle_fraction:.0f} %")
    if batch_size:
        text += f" · {run.images_per_s(batch_size):,.0f} images/s"
    return text


class PipelineView(StaticPicture, widgets.VBox):
    """Input-pipeline runs side by side (a toggle picks one), each as lanes and buffer occupancy.

    Args:
        runs: a :class:`~dfcore.data.pipeline_run.PipelineRun` (``simulate_pipeline`` or ``record_pipeline``),
            a list of them, or a dict of them by label.
        batch_size: images per step, to print images/s.
        max_steps: steps drawn per run.

    Attributes:
        runs: ``{label: PipelineRun}``; picker: the ``ToggleButtons``; stack: the ``Stack`` of panels;
        svgs: ``{label: SVG text}``; links: the ``jslink``.

    Raises:
        TypeError: ``runs`` holds something other than PipelineRuns; ValueError: no runs.
    """

    def __init__(self, runs, batch_size=None, max_steps=6, width_px=900, **kwargs):
        if isinstance(runs, PipelineRun):
            runs = [runs]
        if isinstance(runs, (list, tuple)):
            runs = {run.name if isinstance(run, PipelineRun) else str(i): run for i, run in enumerate(runs)}
        if not isinstance(runs, dict) or not all(isinstance(r, PipelineRun) for r in runs.values()):
            raise TypeError("PipelineView expects a PipelineRun (from dfcore.data.pipeline_sim.simulate_pipeline or "
                            "dfcore.data.pipeline_trace.record_pipeline), a list of them or a dict of them by label, "
                            f"got {type(runs).__name__}")
        if not runs:
            raise ValueError("PipelineView needs at least one PipelineRun")
        self.runs = dict(runs)
        self.svgs = {label: draw(run, max_steps, width_px) for label, run in self.runs.items()}
        legend = _html.legend([], [
            _html.Raw(_html.swatch(_palette.tint(_palette.CPU_GREYS[0], 0.6), _palette.CPU_GREYS[0]) + "input thread"),
            _html.Raw(_html.swatch(_palette.tint(_STARVED, 0.7), _STARVED) + "starved: training waits for its batch"),
            _html.Raw(_html.swatch(_palette.tint(_palette.TRANSFER, 0.55), _palette.TRANSFER) + "copy to GPU"),
            _html.Raw(_html.swatch(_palette.device_fill("/device:GPU:0"), _palette.device_color("/device:GPU:0"))
                      + "training step")])
        panels = [widgets.HTML(_html.note(summary(run, batch_size)) + legend + self.svgs[label])
                  for label, run in self.runs.items()]
        self.picker = widgets.ToggleButtons(options=list(self.runs), value=next(iter(self.runs)),
                                            style={"button_width": "auto"})
        self.stack = widgets.Stack(panels, selected_index=0)
        self.links = [widgets.jslink((self.picker, "index"), (self.stack, "selected_index"))]
        super().__init__([self.picker, self.stack], **kwargs)

    def __repr__(self):
        return f"<PipelineView: {count(len(self.runs), 'run')} ({', '.join(self.runs)})>"
