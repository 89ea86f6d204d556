"""Small SVG charts of parameter-server runs: ps load bars, staleness histograms, loss/accuracy curves.

Pure functions (no ipywidgets) returning SVG text; several runs are compared side by
side, each in its colour from :data:`RUN_COLORS` (Okabe & Ito's hues, as the devices').
"""

import math

from . import _palette, _svg
from ._format import format_bytes, format_us
from ._ps_lanes import task_title

RUN_COLORS = _palette.ACCELERATOR_HUES


def run_color(index):
    """The colour of the ``index``-th run."""
    return RUN_COLORS[index % len(RUN_COLORS)]


def ps_load_svg(loads, width):
    """Bars of bytes per ps task (``loads``: ``PsLoad`` records), each with its variables named.

    One row per task: the task, a bar proportional to its bytes, then the bytes, the
    number of variables and their names.
    """
    label_w, row_h = 60, 24
    top_bytes = max([load.nbytes for load in loads] + [1])
    plot = max(width * 0.35, 120)
    parts = [_svg.text(0, 14, "ps load: bytes and variables per ps task", size=12, weight="bold")]
    y = 24
    for load in loads:
        title = f"{load.task}: {load.num_variables} variables, {load.nbytes:,} B: {', '.join(load.variables)}"
        parts.append(_svg.text(label_w - 6, y + 15, task_title(load.task), size=11, anchor="end", weight="bold"))
        w = plot * load.nbytes / top_bytes
        parts.append(_svg.rect(label_w, y + 4, w, row_h - 8, _palette.tint(_palette.CPU_GREYS[0], 0.6),
                               _palette.CPU_GREYS[2], title))
        names = ", ".join(load.variables)
        if len(names) > 70:
            names = names[:67] + "..."
        text = f"{format_bytes(load.nbytes)} · {load.num_variables} variable{'s' * (load.num_variables != 1)}"
        parts.append(_svg.text(label_w + max(w, 1) + 6, y + 15, f"{text}: {names}" if names else text, size=10))
        y += row_h
    return _svg.document(width, y + 4, "".join(parts))


def histograms_svg(names, histograms, dropped, width):
    """Staleness histograms of several runs side by side, on a shared staleness axis.

    Args:
        names: run names; histograms: ``{staleness: applied gradients}`` per run; dropped:
            the dropped gradients per run (noted under its panel).
    Each panel has its own count scale (the count is written on every bar).
    """
    top_s = max([max(h) for h in histograms if h] + [0])
    n = max(len(names), 1)
    gap = 18
    panel_w = (width - gap * (n - 1)) / n
    plot_h, head, foot = 110, 46, 40
    parts = []
    for i, (name, hist, drop) in enumerate(zip(names, histograms, dropped)):
        ox = i * (panel_w + gap)
        color = run_color(i)
        total = sum(hist.values())
        parts.append(_svg.text(ox, 14, name, size=12, weight="bold", fill=color))
        parts.append(_svg.text(ox, 27, f"{total} applied · {drop} dropped", size=10))
        top_count = max(list(hist.values()) + [1])
        slot = panel_w / (top_s + 1)
        base = head + plot_h
        parts.append(_svg.line(ox, base, ox + panel_w, base, _palette.INK))
        for s in range(top_s + 1):
            count = hist.get(s, 0)
            h = plot_h * count / top_count
            x = ox + s * slot
            if count:
                parts.append(_svg.rect(x + slot * 0.12, base - h, slot * 0.76, h, _palette.tint(color, 0.45), color,
                                       f"{name}: {count} gradients applied with staleness {s}", rx=1))
                if slot >= 16:
                    parts.append(_svg.text(x + slot / 2, base - h - 3, str(count), size=9, anchor="middle"))
            if slot >= 12 or s % max(1, math.ceil(12 / slot)) == 0:
                parts.append(_svg.text(x + slot / 2, base + 13, str(s), size=10, anchor="middle"))
        parts.append(_svg.text(ox + panel_w / 2, base + 28, "staleness (versions behind)", size=10,
                               anchor="middle"))
    return _svg.document(width, head + plot_h + foot, "".join(parts))


def curves_svg(title, series, width, height, y_label, y_range=None, clock="simulated"):
    """One line chart: ``series`` is ``[(name, colour, [(t_s, value), ...])]`` against time (seconds).

    ``y_range`` (lo, hi) fixes the value axis (default: 0 to the largest value). Each point is
    a dot with a tooltip; a run with one point is a dot only.
    """
    left, right, top, bottom = 52, 14, 24, 34
    points = [p for _, _, pts in series for p in pts if math.isfinite(p[1])]
    t_end = max([t for t, _ in points] + [0]) or 1.0
    lo, hi = y_range if y_range else (0.0, max([v for _, v in points] + [1e-12]))
    hi = hi if hi > lo else lo + 1.0
    plot_w, plot_h = width - left - right, height - top - bottom

    def xy(t, v):
        return left + plot_w * t / t_end, top + plot_h * (1 - (v - lo) / (hi - lo))

    parts = [_svg.text(left, 14, title, size=12, weight="bold")]
    step = _svg.nice_step(hi - lo, 4)
    for k in range(math.ceil(lo / step - 1e-9), int(math.floor(hi / step + 1e-9)) + 1):
        _, y = xy(0, k * step)
        parts.append(_svg.line(left, y, left + plot_w, y, "#E4E4E4"))
        parts.append(_svg.text(left - 5, y + 3.5, f"{k * step:.4g}", size=10, anchor="end"))
    parts.append(_svg.line(left, top, left, top + plot_h, _palette.INK))
    t_step = _svg.nice_step(t_end, 5)
    for k in range(int(math.floor(t_end / t_step + 1e-9)) + 1):
        x, _ = xy(k * t_step, lo)
        parts.append(_svg.line(x, top + plot_h, x, top + plot_h + 4, _palette.INK))
        parts.append(_svg.text(x, top + plot_h + 15, format_us(k * t_step * 1e6), size=10, anchor="middle"))
    parts.append(_svg.line(left, top + plot_h, left + plot_w, top + plot_h, _palette.INK))
    parts.append(_svg.text(left + plot_w / 2, height - 4, f"{clock} time", size=10, anchor="middle"))
    parts.append(f'<text x="11" y="{top + plot_h / 2:.1f}" font-size="10" text-anchor="middle" '
                 f'transform="rotate(-90 11 {top + plot_h / 2:.1f})">{_svg.esc(y_label)}</text>')
    for name, color, pts in series:
        pts = [(t, v) for t, v in pts if math.isfinite(v)]
        coords = [xy(t, v) for t, v in pts]
        if len(coords) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.8"/>')
        for (t, v), (x, y) in zip(pts, coords):
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.6" fill="{color}"><title>'
                         f'{_svg.esc(f"{name}: {y_label} {v:.4g} at {format_us(t * 1e6)}")}</title></circle>')
    return _svg.document(width, height, "".join(parts))

