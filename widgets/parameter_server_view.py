"""``ParameterServerView``: parameter-server runs — lanes per task, ps load, staleness, loss and accuracy.

Shows one or several :class:`~dfcore.distribute.staleness.RunRecord` s (e.g. ``sync``,
``async`` and ``ssp`` as ``{name: record}``) from
:func:`dfcore.distribute.parameter_server.train`:

- a summary table (updates applied and dropped, time, test accuracy, waiting);
- per run, one lane per ps and worker task with its ``pull``/``compute``/``push``/``wait``
  phases (ps: its inbound link and the updates), see :mod:`widgets._ps_lanes`, with the
  time each task spent in each phase;
- the ps load (bytes and variables per ps task) and, for simulated runs, each ps task's traffic
  (pushes received, time its inbound link was busy), the hot ps marked;
- the staleness histogram of every run, side by side;
- test loss and accuracy against time, one curve per run.

The lanes step through the run: frame 0 is the whole run, frames 1…N are N equal time
windows, precomputed into ``Stack`` s; ``Play``/``IntSlider`` and the run picker are joined
to them with ``jslink``, so stepping works in a static HTML export with no kernel.
"""

import ipywidgets as widgets

from dfcore.train.device_setter import PsLoad

from . import _check, _html, _palette, _ps_charts, _ps_lanes
from ._format import count, format_us
from ._static import StaticPicture


class ParameterServerView(StaticPicture, widgets.VBox):
    """Lanes, ps load, staleness histograms and learning curves of parameter-server runs.

    Args:
        run_or_runs: a ``RunRecord``, a ``{name: RunRecord}`` dict (shown in its order), or a
            list of records (named by mode: ``sync``, ``async``, ``ssp s=2``).
        windows: the number of equal time windows the lanes step through (after the whole-run frame).
        span_s: the time the windows tile, from 0 (default: each run's whole length); a short span
            zooms the windows into the start of the runs.
        width_px: width of the drawings.

    Attributes:
        runs: ``{name: RunRecord}``; lanes: ``{name: tuple of Lane}``; histograms: ``{name:
            {staleness: applied gradients}}``; windows: ``{name: [(t0_s, t1_s)]}``; frames: ``{name:
            Stack of frame HTMLs}``; run_picker (``ToggleButtons``), play, slider, stack (per-run
            panels), links (the ``jslink`` s).

    Raises:
        ValueError: no run, ``windows`` < 1 or ``span_s`` <= 0.
        TypeError: something that is not a run record.
    """

    def __init__(self, run_or_runs, windows=10, span_s=None, width_px=960, **kwargs):
        if windows < 1:
            raise ValueError(f"windows must be >= 1, got {windows!r}")
        if span_s is not None and not span_s > 0:
            raise ValueError(f"span_s must be > 0, got {span_s!r}")
        self.runs = _named_runs(run_or_runs)
        names = list(self.runs)
        self.lanes = {n: _ps_lanes.lanes(r) for n, r in self.runs.items()}
        self.histograms = {n: r.staleness_histogram() for n, r in self.runs.items()}
        self.windows = {n: _ps_lanes.windows(span_s or _ps_lanes.run_end_s(r), windows) for n, r in self.runs.items()}
        self.frames, panels = {}, []
        for name in names:
            pages = [widgets.HTML(self._frame_svg(name, None, width_px))]
            pages += [widgets.HTML(self._frame_svg(name, k, width_px)) for k in range(windows)]
            self.frames[name] = widgets.Stack(pages, selected_index=0, layout=widgets.Layout(overflow="auto"))
            panels.append(widgets.VBox([self.frames[name], widgets.HTML(self._time_table(name))]))
        self.run_picker = widgets.ToggleButtons(options=names, value=names[0], style={"button_width": "auto"},
                                                tooltips=[f"lanes of {n}" for n in names])
        self.stack = widgets.Stack(panels, selected_index=0)
        self.play = widgets.Play(value=0, min=0, max=windows, step=1, interval=1200, description="play")
        self.slider = widgets.IntSlider(value=0, min=0, max=windows, description="window",
                                        layout=widgets.Layout(width="420px"))
        self.links = [widgets.jslink((self.run_picker, "index"), (self.stack, "selected_index")),
                      widgets.jslink((self.play, "value"), (self.slider, "value"))]
        self.links += [widgets.jslink((self.slider, "value"), (self.frames[n], "selected_index")) for n in names]
        spanned = f"the first {format_us(span_s * 1e6)}" if span_s else "the run"
        controls = widgets.HBox([self.play, self.slider, widgets.HTML(_html.note(
            f"window 0: the whole run · 1–{windows}: {spanned} cut into {windows} equal time windows"))])
        lanes_box = [widgets.HTML(_html.heading("lanes: one per ps and worker task") + _lane_legend())]
        if len(names) > 1:
            lanes_box.append(self.run_picker)
        super().__init__([widgets.HTML(self._summary_html()), *lanes_box, controls, self.stack,
                          widgets.HTML(self._load_html(width_px)), widgets.HTML(self._staleness_html(width_px)),
                          widgets.HTML(self._curves_html(width_px))], **kwargs)

    # -- pieces ------------------------------------------------------------------------------------
    def _summary_html(self):
        head = ["run", "workers", "ps", "applied", "dropped", "final version", "time", "test accuracy",
                "test loss", "wait (all workers)", "status"]
        rows = []
        for name, r in self.runs.items():
            rows.append((name, r.num_workers, r.num_ps, r.updates_applied, r.updates_dropped, r.final_version,
                         f"{format_us(r.sim_time_s * 1e6)} ({r.clock})", f"{r.test_accuracy:.4f}",
                         f"{r.test_loss:.4f}", format_us(sum(r.wait_s_by_worker().values()) * 1e6),
                         r.status if r.error is None else _shorten(f"{r.status}: {r.error}", 90)))
        text = ("applied/dropped count pushed gradients; a sync or bounded_delay update averages one gradient per "
                "worker, an async or ssp update applies one gradient.")
        return _html.heading("parameter-server runs") + _html.table(head, rows, numeric=(1, 2, 3, 4, 5, 6, 7, 8, 9)) \
            + _html.note(text)

    def _frame_svg(self, name, k, width_px):
        record, lanes = self.runs[name], self.lanes[name]
        if k is None:
            t1 = _ps_lanes.run_end_s(record)
            plot = width_px - _ps_lanes.LABEL_WIDTH - _ps_lanes.RIGHT_PAD
            caption = (f"{name}: the whole run, {format_us(t1 * 1e6)} ({record.clock} time); each column: "
                       "the share of its time in each phase, over a few whole updates")
            edges = _ps_lanes.overview_edges(record, t1, plot)
            return _ps_lanes.draw(lanes, 0.0, t1, width_px, caption, edges, record.faults)
        t0, t1 = self.windows[name][k]
        applied = sorted({u.version_applied_at for u in record.updates if u.applied and t0 <= u.sim_time_s < t1})
        versions = (f"updates {applied[0]}–{applied[-1]} applied" if len(applied) > 1 else
                    f"update {applied[0]} applied" if applied else "no update applied")
        caption = (f"{name}: window {k + 1} of {len(self.windows[name])}, {format_us(t0 * 1e6)} → "
                   f"{format_us(t1 * 1e6)} ({record.clock} time) · {versions}")
        return _ps_lanes.draw(lanes, t0, t1, width_px, caption, faults=record.faults)

    def _time_table(self, name):
        kinds = ("compute", "pull", "push", "wait", "recv")
        rows = []
        for lane in self.lanes[name]:
            totals = _ps_lanes.time_by_kind(lane)
            rows.append([lane.title] + [format_us(totals[k] * 1e6) if k in totals else "—" for k in kinds])
        head = ["task", "compute", "pull", "push", "wait", "ps inbound link"]
        return _html.heading(f"{name}: time per task and phase") + _html.table(head, rows, numeric=(1, 2, 3, 4, 5))

    def _load_html(self, width_px):
        loads: dict[tuple[PsLoad, ...], list[str]] = {}
        for name, r in self.runs.items():
            loads.setdefault(r.ps_load, []).append(name)
        parts = []
        for load, names in loads.items():
            label = "" if len(loads) == 1 else _html.note(", ".join(names))
            parts.append(label + _ps_charts.ps_load_svg(load, width_px))
        return "".join(parts) + self._traffic_html()

    def _traffic_html(self):
        """Per run, each ps task's pushes and inbound-link time, the hot ps (the busiest link) marked."""
        rows = []
        for name, r in self.runs.items():
            traffic = r.ps_traffic()
            if not traffic:
                continue
            hot = max(traffic, key=lambda task: (traffic[task][1], task))
            end = _ps_lanes.run_end_s(r) or 1.0
            for task, (pushes, busy) in traffic.items():
                rows.append((name, _ps_lanes.task_title(task) + (" (hot)" if task == hot else ""), pushes,
                             format_us(busy * 1e6), f"{100 * busy / end:.1f}%"))
        if not rows:
            return ""
        head = ["run", "ps task", "pushes received", "inbound link busy", "share of the run"]
        text = "the hot ps is the one whose inbound link is busiest: it sets the pace of every push."
        return (_html.heading("ps load over the run") + _html.table(head, rows, numeric=(2, 3, 4))
                + _html.note(text))

    def _staleness_html(self, width_px):
        names = list(self.runs)
        svg = _ps_charts.histograms_svg(names, [self.histograms[n] for n in names],
                                        [self.runs[n].updates_dropped for n in names], width_px)
        text = ("staleness = the version a gradient was applied at minus the version it was computed on "
                "(0: computed on the parameters it updated).")
        return _html.heading("staleness of the applied gradients") + _html.note(text) + svg

    def _curves_html(self, width_px):
        half = (width_px - 20) / 2
        clocks = {r.clock for r in self.runs.values()}
        clock = clocks.pop() if len(clocks) == 1 else "simulated or wall"
        loss = [(n, _ps_charts.run_color(i), [(e.sim_time_s, e.loss) for e in r.evals])
                for i, (n, r) in enumerate(self.runs.items())]
        accuracy = [(n, c, [(e.sim_time_s, e.accuracy) for e in r.evals])
                    for (n, c, _), r in zip(loss, self.runs.values())]
        charts = (_ps_charts.curves_svg("test loss", loss, half, 230, "loss", clock=clock)
                  + '<span style="display:inline-block;width:20px"></span>'
                  + _ps_charts.curves_svg("test accuracy", accuracy, half, 230, "accuracy", (0.0, 1.0), clock))
        legend = _html.legend([], [_html.Raw(_html.swatch(c) + _html.cell(n)) for n, c, _ in loss])
        return _html.heading("test loss and accuracy against time") + legend + f"<div>{charts}</div>"

    def __repr__(self):
        records = list(self.runs.values())
        workers = "/".join(str(w) for w in sorted({r.num_workers for r in records}))
        ps = "/".join(str(p) for p in sorted({r.num_ps for r in records}))
        plural = "" if workers == "1" else "s"
        return f"<ParameterServerView: {count(len(records), 'run')}, {workers} worker{plural}, {ps} ps>"


def _shorten(text, limit):
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _lane_legend():
    chips = [_html.Raw(_html.swatch(*_ps_lanes.PHASE_STYLE[kind]) + label) for kind, label in _ps_lanes.LEGEND]
    fault = f'<span style="color:{_palette.TRANSFER};font-weight:bold">✕</span> fault (task died, error)'
    return _html.legend([], chips + [_html.Raw("│ update applied"), _html.Raw(fault)])


def run_name(record):
    """A run's default name: ``sync``, ``sync 3 of 4`` (backup workers), ``async``, ``ssp s=2``, ``bounded_delay s=2``;
    `` (threads)`` for a free-running run."""
    name = record.mode
    if record.staleness is not None:  # ssp and bounded_delay
        name += f" s={record.staleness}"
    elif record.mode == "sync" and record.replicas_to_aggregate < record.num_workers:
        name += f" {record.replicas_to_aggregate} of {record.num_workers}"
    return name + (" (threads)" if record.execution == "threads" else "")


def _named_runs(source):
    _check.expect("ParameterServerView", "run_or_runs", source, _check.RUN_RECORDS)
    if isinstance(source, dict):
        runs = {str(k): v for k, v in source.items()}
    elif isinstance(source, (list, tuple)):
        runs = {}
        for record in source:
            _record(record)
            name, k = run_name(record), 2
            while name in runs:
                name, k = f"{run_name(record)} ({k})", k + 1
            runs[name] = record
    else:
        runs = {run_name(source): source}
    if not runs:
        raise ValueError("ParameterServerView needs at least one run record")
    for record in runs.values():
        _record(record)
    return runs


def _record(record):
    return _check.expect("ParameterServerView", "run_or_runs", record, _check.RUN_RECORD)
