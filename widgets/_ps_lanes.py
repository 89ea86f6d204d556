"""A parameter-server run as lanes: one per ps and worker task, its phases as bars (pure strings).

Pure functions over a :class:`~dfcore.distribute.staleness.RunRecord` (no ipywidgets).
A worker's lane shows ``pull`` (reading the parameters), ``compute`` (the gradient),
``push`` (sending it to every ps task) and ``wait`` (barrier, token or staleness bound);
a ps task's lane shows ``recv`` (its inbound link carrying one worker's push) and
``apply`` (a parameter update, drawn as a tick). Times are the record's seconds (the
simulated clock, or the wall clock of a threaded run).

A window ``(t0, t1)`` draws the phases that intersect it, clipped, one bar each; the
overview of a whole run draws instead, per lane and bin of a few pixels, the share of
time each kind took, so it stays small however many steps the run has.
"""

import bisect
import dataclasses
import math

from dfcore.distribute.staleness import PhaseRecord
from dfcore.framework.device import DeviceSpec

from . import _palette, _svg
from ._format import format_us

LABEL_WIDTH, RIGHT_PAD, CAPTION_HEIGHT, AXIS_HEIGHT, LANE_HEIGHT = 78, 14, 22, 28, 22
#: Least width of one bin of the whole-run overview.
OVERVIEW_BIN_PX = 6
#: Phase kind → (fill, stroke): compute in blue, pull in bluish green, pushes and the ps link in
#: the transfer vermillion (vermillion marks transfers: docs/architecture.md#widgets), waiting in light grey.
PHASE_STYLE = {
    "compute": (_palette.tint("#0072B2", 0.45), "#0072B2"),
    "pull": (_palette.tint("#009E73", 0.35), "#009E73"),
    "push": (_palette.tint(_palette.TRANSFER, 0.35), _palette.TRANSFER),
    "recv": (_palette.tint(_palette.TRANSFER, 0.6), _palette.TRANSFER),
    "wait": ("#D6D6D6", "#8A8A8A"),
}
#: Drawing order inside a lane: long background phases first, short ones on top.
_ORDER = ("wait", "compute", "recv", "pull", "push")
LEGEND = (("compute", "compute (gradient)"), ("pull", "pull parameters"), ("push", "push gradient"),
          ("wait", "wait (barrier / token / bound)"), ("recv", "ps inbound link"))


@dataclasses.dataclass(frozen=True)
class Lane:
    """One task's lane: ``task`` (``/job:worker/replica:0/task:1``), a short ``title`` and its phases."""

    task: str
    title: str
    phases: tuple


def task_title(task):
    """``/job:worker/replica:0/task:3`` → ``worker 3``."""
    spec = DeviceSpec.from_string(task)
    return f"{spec.job} {spec.task or 0}"


def lanes(record):
    """The :class:`Lane` s of ``record``: every ps task, then every worker, each with its phases in time order.

    Tasks come from the run's shape (``num_ps``, ``num_workers``), so a task with no phase
    still has a lane; a phase of any other task gets a lane after them.
    """
    tasks = [f"/job:ps/replica:0/task:{j}" for j in range(record.num_ps)]
    tasks += [f"/job:worker/replica:0/task:{w}" for w in range(record.num_workers)]
    tasks += sorted({p.task for p in record.phases} - set(tasks))
    by_task: dict[str, list[PhaseRecord]] = {t: [] for t in tasks}
    for phase in record.phases:
        by_task[phase.task].append(phase)
    return tuple(Lane(t, task_title(t), tuple(sorted(by_task[t], key=lambda p: (p.start_s, p.end_s, p.kind))))
                 for t in tasks)


def run_end_s(record):
    """When the last phase of ``record`` ended (or the run's end time, if later)."""
    return max([p.end_s for p in record.phases] + [record.sim_time_s or 0.0])


def windows(end_s, count):
    """``count`` equal windows ``(t0, t1)`` tiling ``[0, end_s]`` (one window ``(0, 1)`` for an empty run)."""
    end_s = end_s if end_s > 0 else 1.0
    return [(end_s * k / count, end_s * (k + 1) / count) for k in range(count)]


def phases_in(lane, t0, t1):
    """The phases of ``lane`` that intersect ``[t0, t1]`` (a zero-length ``apply`` counts at its instant)."""
    return [p for p in lane.phases if p.end_s >= t0 and p.start_s <= t1 and (p.end_s > t0 or p.start_s == p.end_s)]


def coverage(phases, kind, edges):
    """The share of each bin ``[edges[i], edges[i+1]]`` that ``kind`` phases cover (0…1 each)."""
    shares = [0.0] * (len(edges) - 1)
    for p in phases:
        if p.kind != kind:
            continue
        first = max(bisect.bisect_right(edges, p.start_s) - 1, 0)
        for i in range(first, len(shares)):
            lo, hi = edges[i], edges[i + 1]
            if lo >= p.end_s:
                break
            if hi > lo:
                shares[i] += max(0.0, min(p.end_s, hi) - max(p.start_s, lo)) / (hi - lo)
    return [min(x, 1.0) for x in shares]


def overview_edges(record, end_s, plot_px):
    """Bin edges for the overview: every k-th parameter update (k so that a bin is about
    :data:`OVERVIEW_BIN_PX` px or more), so each bin holds whole updates and a steady run draws
    steady columns; equal bins of that width when the run applied no update."""
    end_s = end_s if end_s > 0 else 1.0
    target = max(1, int(plot_px / OVERVIEW_BIN_PX))
    times = sorted({u.version_applied_at: u.sim_time_s for u in record.updates if u.applied}.values())
    times = [t for t in times if 0 < t < end_s]
    if not times:
        return [end_s * i / target for i in range(target + 1)]
    k = max(1, math.ceil(len(times) / target))
    return [0.0] + times[k - 1::k] + ([end_s] if times[k - 1::k][-1:] != [end_s] else [])


def height(num_lanes):
    """The SVG height of a lane chart with ``num_lanes`` lanes."""
    return CAPTION_HEIGHT + num_lanes * LANE_HEIGHT + AXIS_HEIGHT


def draw(run_lanes, t0, t1, width, caption, overview_edges=None, faults=()):
    """The SVG of ``run_lanes`` over the window ``[t0, t1]`` (seconds), ``width`` px wide, with ``caption``.

    With ``overview_edges`` (see :func:`overview_edges`) each lane is cut into those bins, each
    drawn as a column stacked by the share of its time each phase kind took (equal neighbours
    merged), so a run of thousands of steps stays a small picture; else every phase is a bar
    with a tooltip, grouped by kind (fill and stroke set once per group). Each of ``faults``
    (``FaultRecord`` s) in the window is a vermillion ✕ on its task's lane.
    """
    span = t1 - t0 if t1 > t0 else 1.0
    plot = width - LABEL_WIDTH - RIGHT_PAD

    def x_of(t):
        return LABEL_WIDTH + plot * (min(max(t, t0), t0 + span) - t0) / span

    total_h = height(len(run_lanes))
    body = [axis(LABEL_WIDTH, plot, t0, t0 + span, total_h - AXIS_HEIGHT + 2, CAPTION_HEIGHT)]
    for i, lane in enumerate(run_lanes):
        top = CAPTION_HEIGHT + i * LANE_HEIGHT
        ps = lane.task.startswith("/job:ps")
        body.append(_svg.rect(0, top, width, LANE_HEIGHT, "#F0F0F0" if ps else ("#FAFAFA" if i % 2 else "#FFFFFF"),
                              rx=0))
        body.append(f"<g><title>{_svg.esc(lane.task)}</title>"
                    + _svg.text(6, top + LANE_HEIGHT / 2 + 4, lane.title, size=11, weight="bold") + "</g>")
        shown = phases_in(lane, t0, t0 + span)
        if overview_edges is not None:
            body.append(_stacked_columns(shown, overview_edges, x_of, top))
            continue
        body += [_bar_group(kind, [p for p in shown if p.kind == kind], x_of, top) for kind in _ORDER]
        ticks = "".join(f'<line x1="{_f(x_of(p.start_s))}" y1="{_f(top + 2)}" x2="{_f(x_of(p.start_s))}" '
                        f'y2="{_f(top + LANE_HEIGHT - 2)}"><title>update {p.step} applied at '
                        f"{_us(p.start_s)}</title></line>" for p in shown if p.kind == "apply")
        if ticks:
            body.append(f'<g stroke="{_palette.INK}" stroke-width="1.5">{ticks}</g>')
    row = {lane.task: i for i, lane in enumerate(run_lanes)}
    for f in faults:
        if f.task in row and t0 <= f.sim_time_s <= t0 + span:
            what = " ".join(filter(None, (f.kind, f.error_type)))
            body.append(f"<g><title>{_svg.esc(f'{what} at {_us(f.sim_time_s)}: {f.message}')}</title>"
                        + _svg.text(x_of(f.sim_time_s), CAPTION_HEIGHT + row[f.task] * LANE_HEIGHT + 16, "✕", size=15,
                                    anchor="middle", fill=_palette.TRANSFER, weight="bold") + "</g>")
    body.append(_svg.text(LABEL_WIDTH, 15, caption, size=11, weight="bold"))
    return _svg.document(width, total_h, "".join(body))


def _bar_group(kind, phases, x_of, top):
    if not phases:
        return ""
    fill, stroke = PHASE_STYLE[kind]
    pad = 6 if kind == "wait" else 4
    y, h = _f(top + pad / 2), _f(LANE_HEIGHT - pad)
    dash = ' stroke-dasharray="3,2"' if kind == "wait" else ""
    parts, labels = [f'<g fill="{fill}" stroke="{stroke}" stroke-width="0.8"{dash}>'], []
    for p in phases:
        x0, x1 = x_of(p.start_s), x_of(p.end_s)
        sender = p.detail.split()[-1] if kind == "recv" and p.detail else ""
        title = f"{kind} step {p.step}{' from worker ' + sender if sender else ''}: {_us(p.start_s)} → {_us(p.end_s)}"
        parts.append(f'<rect x="{_f(x0)}" y="{y}" width="{_f(max(x1 - x0, 1))}" height="{h}">'
                     f"<title>{_svg.esc(title)}</title></rect>")
        label = f"w{sender}" if sender else str(p.step) if kind == "compute" else ""
        if label and x1 - x0 > 6 * len(label) + 4:
            labels.append(_svg.text(x0 + 2, top + LANE_HEIGHT - 7, label, size=9))
    return "".join(parts) + "</g>" + "".join(labels)


def _stacked_columns(phases, edges, x_of, top):
    """Per bin, a column stacked bottom-up in :data:`_ORDER` by the share of time of each kind."""
    inner = LANE_HEIGHT - 4
    kinds = [k for k in _ORDER if any(p.kind == k for p in phases)]
    if not kinds:
        return ""
    heights = list(zip(*[[round(inner * c) for c in coverage(phases, k, edges)] for k in kinds]))
    groups: dict[str, list[str]] = {k: [] for k in kinds}
    i = 0
    while i < len(heights):
        j = i
        while j + 1 < len(heights) and heights[j + 1] == heights[i]:
            j += 1
        y, x0 = top + 2 + inner, x_of(edges[i])
        for kind, h in zip(kinds, heights[i]):
            if h:
                y -= h
                groups[kind].append(f'<rect x="{_f(x0)}" y="{_f(y)}" width="{_f(x_of(edges[j + 1]) - x0)}" '
                                    f'height="{h}"/>')
        i = j + 1
    return "".join(f'<g fill="{PHASE_STYLE[k][0]}">{"".join(g)}</g>' for k, g in groups.items() if g)


def axis(x0, width, t0, t1, y, grid_top):
    """A time axis for the window ``[t0, t1]`` (seconds): ticks at round multiples, light grid lines."""
    parts = [_svg.line(x0, y, x0 + width, y, _palette.INK)]
    span = t1 - t0
    if span <= 0:
        return parts[0]
    step = _svg.nice_step(span, 6)
    first = math.ceil(t0 / step - 1e-9)
    for k in range(first, int(math.floor(t1 / step + 1e-9)) + 1):
        x = x0 + width * (k * step - t0) / span
        parts.append(_svg.line(x, grid_top, x, y, "#E4E4E4"))
        parts.append(_svg.line(x, y, x, y + 4, _palette.INK))
        parts.append(_svg.text(x, y + 15, _us(k * step), size=10, anchor="middle"))
    return "".join(parts)


def time_by_kind(lane):
    """``{kind: seconds}`` the lane spent in each phase kind (``apply`` left out)."""
    totals: dict[str, float] = {}
    for p in lane.phases:
        if p.kind != "apply":
            totals[p.kind] = totals.get(p.kind, 0.0) + (p.end_s - p.start_s)
    return totals


def _f(value):
    return f"{value:.1f}"


def _us(seconds):
    return format_us(seconds * 1e6)
