"""``TimelineView``: one traced step as lanes per device, with a step-through that needs no kernel.

Each device has a compute lane (its ops as bars, ``_Send``/``_Recv`` as vermillion
outlines) and, if it receives tensors, a transfers lane (one bar per transfer, from
the moment the value is sent to the moment the receiver has it); a vermillion arrow
joins each ``_Send`` to its ``_Recv``. A toggle switches between the simulated clock
(the default: deterministic, meaningful on any laptop) and the wall clock.

The step-through precomputes one overlay frame per execution step (a veil over what
has not started yet, the step's ops outlined, a caption) into a ``Stack``; ``Play``,
``IntSlider``, the toggle and the stacks are joined with ``jslink``, so stepping works
in a static HTML export with no kernel. The summary gives the step's
compute/communication overlap in % (see :func:`widgets._timeline.overlap`).

Control flow: each iteration of a loop is its own bar (``name ·i``), the summary gives each
loop frame's iterations and transfers per iteration, and with a ``RunMetadata`` the node runs
that ran dead (an untaken ``tf.cond`` branch, a loop's last test) are grey dashed outlines.
"""

import ipywidgets as widgets

from dfcore.framework import protos
from dfcore.runtime.config import step_records
from dfcore.runtime.step_stats import StepStats

from . import _check, _html, _palette, _timeline
from ._format import count, format_bytes, format_us
from ._static import StaticPicture

_MODE_LABELS = {"simulated": "simulated time", "wall": "wall time"}


class TimelineView(StaticPicture, widgets.VBox):
    """Lanes of one step on the simulated or the wall clock, and a step-through.

    Args:
        run_metadata: ``RunMetadata`` of a run with ``RunOptions(trace_level=FULL_TRACE)`` (its dfcore
            :func:`~dfcore.runtime.config.step_records`, with the simulated clock), dfcore's ``StepStats``, or
            TF's ``StepStats`` message (wall clock only).
        max_frames: at most this many step-through frames (consecutive ops are grouped
            when the step has more); one more frame shows the whole step.
        width_px: width of the drawing.
        side_by_side: show the simulated and the measured (wall-clock; on a real GPU its kernels' CUDA-event
            times) lanes of the step one above the other, one slider stepping both, instead of the toggle.

    Attributes:
        mode: ``ToggleButtons`` (``simulated`` first when the stats have simulated times).
        play, slider: the ``Play`` and ``IntSlider`` that drive the frames.
        stack: the ``Stack`` of per-mode panels (with ``side_by_side``: a ``VBox`` of them, each under its
            clock's name); frames: ``{mode: Stack of frame HTMLs}``.
        spans: ``{mode: StepSpans}``; overlap_percent: ``{mode: float}``; links: the ``jslink`` s.
        loops: ``[(frame_id, iterations, transfers per iteration)]`` (see :func:`widgets._timeline.loops`).

    Raises:
        TypeError: neither a ``RunMetadata`` nor a ``StepStats``.
        ValueError: ``run_metadata`` has no step records (the run was not traced).
    """

    def __init__(self, run_metadata, max_frames=200, width_px=960, side_by_side=False, **kwargs):
        _check.expect("TimelineView", "run_metadata", run_metadata, _check.STEP_TRACE)
        dead: tuple[tuple[str, str, tuple[int, int] | None], ...] = ()
        if isinstance(run_metadata, StepStats):
            step_stats = run_metadata
        elif isinstance(run_metadata, protos.StepStats):
            step_stats = StepStats.from_proto(run_metadata)
        else:
            records = step_records(run_metadata)
            step_stats, dead = records.step_stats, records.dead_nodes
        modes = _timeline.MODES if _timeline.has_simulated_times(step_stats) else ("wall",)
        self.spans = {m: _timeline.step_spans(step_stats, m, dead) for m in modes}
        self.loops = _timeline.loops(self.spans[modes[0]])
        self.overlap_percent = {m: _timeline.overlap(self.spans[m])[0] for m in modes}
        first = self.spans[modes[0]]
        self._ranges = _timeline.frame_ranges(len(first.ops), max_frames) if first.ops else []
        self.frames, panels = {}, []
        for mode in modes:
            lay = _timeline.layout(self.spans[mode], width_px)
            base = widgets.HTML(_timeline.draw(self.spans[mode], lay), layout=widgets.Layout(grid_area="plot"))
            frames = [widgets.HTML(_timeline.frame(self.spans[mode], lay, a, b)) for a, b in self._ranges]
            frames.append(widgets.HTML(self._whole_step_overlay(mode, lay)))
            self.frames[mode] = widgets.Stack(frames, selected_index=len(frames) - 1,
                                              layout=widgets.Layout(grid_area="plot"))
            grid = widgets.GridBox([base, self.frames[mode]], layout=widgets.Layout(
                grid_template_areas='"plot"', grid_template_columns="auto", overflow="auto"))
            panels.append(widgets.VBox([widgets.HTML(self._summary_html(mode)), grid]))
        last = len(self._ranges)
        self.mode = widgets.ToggleButtons(options=[(_MODE_LABELS[m], m) for m in modes], value=modes[0])
        self.play = widgets.Play(value=last, min=0, max=last, step=1, interval=600, description="play")
        self.slider = widgets.IntSlider(value=last, min=0, max=last, description="step",
                                        layout=widgets.Layout(width="420px"))
        self.links = [widgets.jslink((self.play, "value"), (self.slider, "value"))]
        self.links += [widgets.jslink((self.slider, "value"), (self.frames[m], "selected_index")) for m in modes]
        if side_by_side and len(modes) > 1:
            self.stack = widgets.VBox([widgets.VBox([widgets.HTML(_html.heading(_MODE_LABELS[m])), panel])
                                       for m, panel in zip(modes, panels)])
            controls = widgets.HBox([self.play, self.slider])
        else:
            self.stack = widgets.Stack(panels, selected_index=0)
            self.links.insert(0, widgets.jslink((self.mode, "index"), (self.stack, "selected_index")))
            controls = widgets.HBox([self.mode, self.play, self.slider])
        super().__init__([controls, self.stack], **kwargs)

    def _whole_step_overlay(self, mode, lay):
        spans = self.spans[mode]
        caption = (f"whole step: {len(spans.ops)} ops on {len(spans.devices)} devices, "
                   f"{format_us(spans.end_us)} ({_MODE_LABELS[mode]}); press ▶ or drag the slider to step through")
        return _timeline.caption_overlay(lay, caption)

    def _summary_html(self, mode):
        spans = self.spans[mode]
        percent, comm_us, compute_us = _timeline.overlap(spans)
        moved = sum(t.nbytes for t in spans.transfers)
        overlap = (f"overlap {percent:.1f} % of communication time is hidden behind compute" if comm_us
                   else "no communication in this step")
        text = (f"step {format_us(spans.end_us)} ({_MODE_LABELS[mode]}) · compute busy {format_us(compute_us)} · "
                f"communication {format_us(comm_us)} · {overlap} · {len(spans.transfers)} transfers, "
                f"{format_bytes(moved)}")
        transfer = _html.Raw(_html.swatch(_palette.tint(_palette.TRANSFER, 0.55), _palette.TRANSFER) + "transfer "
                             f'<span style="color:{_palette.TRANSFER}">→</span> Send to Recv')
        extras = [transfer]
        dead = sum(s.dead for s in spans.ops)
        if dead:
            extras.append(_html.Raw(_html.swatch(_palette.DEAD_FILL, _palette.DEAD_INK)
                                    + f"ran dead ({dead} node runs)"))
        lines = [_html.note(f"loop frame {frame}: {count(n, 'iteration')} (dotted lines: where each starts; "
                            f"bar name ·i: iteration i)" + (f", transfers per iteration {', '.join(map(str, per))}"
                                                           if any(per) else ""))
                 for frame, n, per in self.loops]
        return _html.note(text) + "".join(lines) + _html.legend(spans.devices, extras)

    def __repr__(self):
        spans = self.spans[self.mode.value]
        devices, ops = count(len(spans.devices), "device"), count(len(spans.ops), "op")
        return f"<TimelineView: {devices}, {ops}, {self.mode.value}>"
