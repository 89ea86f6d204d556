"""SVG of one all-reduce frame: the round strip, the devices on their topology, the device × chunk matrix.

Pure string builders over :mod:`widgets._chunk_state` frames (no ipywidgets).

- **Round strip**: one box per round (and ``start``), tinted by phase (reducing phases
  warm, distributing phases cool), phase names above, the frame's round outlined.
- **Topology**: devices on a ring (``ring``, ``recursive_halving_doubling``, rank 0 on top,
  clockwise), a binary heap tree (``tree``, rank 0 on top) or a star around the root
  (``reduce_to_one``). Every link the trace uses is a grey arrow labelled with the bytes
  it carried so far; this round's messages are vermillion arrows labelled with their
  chunks. Two opposite links between one pair are drawn side by side.
- **Matrix**: a row per device, a column per chunk; a cell shows the chunk's first
  values, which ranks' inputs are combined in it (darker grey: more ranks; outlined:
  all of them), and this round's traffic (dashed vermillion: ``to d``, sent; solid: ``from s: adds``
  or ``stores``, received).
"""

import math

from dfcore.distribute.schedules import tree_depth

from . import _palette, _svg
from ._chunk_state import contributors_text, format_values
from ._format import short_device

NODE_W, NODE_H = 74, 34
STRIP_H, GAP = 46, 22
ROW_H, HEAD_H, ROW_LABEL_W = 52, 32, 112
MIN_CELL_W, MAX_CELL_W, NARROW_CELL_W = 74, 132, 104
_REDUCING = {"scatter_reduce", "reduce", "fold"}
_CELL_INK = "#5A5A5A"
WARM, COOL = "#F6E3D3", "#DCE8F2"


def phase_fill(phase):
    """The round strip's tint for a phase: warm while reducing, cool while distributing."""
    return WARM if phase in _REDUCING else COOL


def chunk_label(chunk_ids):
    """``c2``, ``c0–3`` for a run of chunks."""
    return f"c{chunk_ids[0]}" if len(chunk_ids) == 1 else f"c{chunk_ids[0]}–{chunk_ids[-1]}"


# -- round strip ---------------------------------------------------------------------------------
def round_strip(trace, index, width):
    """The strip of ``start`` and every round, frame ``index`` outlined; ``STRIP_H`` tall."""
    count = trace.num_rounds + 1
    box = min(64.0, width / count)
    parts: list[str] = []
    groups: list[list] = []  # [phase, first round, last round]
    for r, record in enumerate(trace.rounds):
        if groups and groups[-1][0] == record.phase:
            groups[-1][2] = r
        else:
            groups.append([record.phase, r, r])
    for phase, first, last in groups:
        x0, x1 = box * (first + 1), box * (last + 2)
        parts.append(_svg.text((x0 + x1) / 2, 12, phase if x1 - x0 > 7 * len(phase) else phase[:4] + "…",
                               size=10.5, anchor="middle", weight="bold"))
        parts.append(_svg.line(x0 + 2, 16, x1 - 2, 16, _palette.INK))
    labels = ["start"] + [f"r{r.round}" for r in trace.rounds]
    fills = ["#FFFFFF"] + [phase_fill(r.phase) for r in trace.rounds]
    for i, (label, fill) in enumerate(zip(labels, fills)):
        current = i == index
        parts.append(_svg.rect(i * box + 1, 20, box - 2, 22, fill, _palette.INK if current else "#B8B8B8",
                               stroke_width=2.2 if current else 1))
        parts.append(_svg.text(i * box + box / 2, 35, label, size=10 if box > 30 else 8, anchor="middle",
                               weight="bold" if current else None))
    return "".join(parts)


# -- topology -----------------------------------------------------------------------------------
def topology_layout(algorithm, n):
    """``(centres, width, height)``: each rank's node centre for the algorithm's drawing.

    Ring: a circle, rank 0 on top, clockwise. Tree: the binary heap tree by depth.
    Reduce-to-one: rank 0 (the root) in the centre of a circle of the others. Recursive
    halving-doubling: the power-of-two ranks on a circle in Gray-code order (so the
    partners of the first rounds sit side by side), each extra rank outside its partner.
    """
    if algorithm == "tree":
        depth = tree_depth(n - 1)
        width = max(300, (2 ** depth) * (NODE_W + 40))
        centres: list[tuple[float, float]] = []
        for r in range(n):
            d = tree_depth(r)
            centres.append((width * (r - (2 ** d - 1) + 0.5) / 2 ** d, 30 + d * 112))
        return centres, width, 60 + depth * 112
    order, outer = list(range(n)), {}
    if algorithm == "reduce_to_one":
        order = list(range(1, n))
    elif algorithm == "recursive_halving_doubling":
        p = 1 << (n.bit_length() - 1)
        order = [k ^ (k >> 1) for k in range(p)]
        outer = {r: r - p for r in range(p, n)}
    radius = max(150.0 if algorithm == "reduce_to_one" else 118.0, len(order) * 20.0)
    reach = radius + (84 if outer else 0)
    cx, cy = reach + NODE_W / 2 + 12, reach + NODE_H / 2 + 12
    centres = [(cx, cy)] * n
    angles = {r: -math.pi / 2 + 2 * math.pi * k / max(len(order), 1) for k, r in enumerate(order)}
    angles.update({r: angles[partner] for r, partner in outer.items()})
    for r, angle in angles.items():
        distance = reach if r in outer else radius
        centres[r] = (cx + distance * math.cos(angle), cy + distance * math.sin(angle))
    return centres, 2 * cx, 2 * cy


def _clip(length_x, length_y):
    """Distance from a node's centre to its border along a unit direction, plus a margin."""
    ax, ay = abs(length_x), abs(length_y)
    return min(NODE_W / 2 / ax if ax > 1e-9 else math.inf, NODE_H / 2 / ay if ay > 1e-9 else math.inf) + 3


def _segment(a, b, offset):
    """The arrow from node ``a`` to node ``b``: clipped ends, shifted ``offset`` px to its right."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    length = math.hypot(dx, dy) or 1.0
    ux, uy = dx / length, dy / length
    nx, ny = -uy, ux
    clip = _clip(ux, uy)
    return ((a[0] + ux * clip + nx * offset, a[1] + uy * clip + ny * offset),
            (b[0] - ux * clip + nx * offset, b[1] - uy * clip + ny * offset), (nx, ny))


def straight_arrow(p, q, color, width=1.2, head=7, dash=None):
    """A straight arrow from ``p`` to ``q`` with a polygon head at ``q``."""
    angle = math.atan2(q[1] - p[1], q[0] - p[0])
    left, right = angle + math.pi - 0.42, angle + math.pi + 0.42
    points = [q, (q[0] + head * math.cos(left), q[1] + head * math.sin(left)),
              (q[0] + head * math.cos(right), q[1] + head * math.sin(right))]
    base = (q[0] + head * 0.8 * math.cos(angle + math.pi), q[1] + head * 0.8 * math.sin(angle + math.pi))
    polygon = " ".join(f"{_svg._n(x)},{_svg._n(y)}" for x, y in points)
    return (_svg.line(p[0], p[1], base[0], base[1], color, width, dash)
            + f'<polygon points="{polygon}" fill="{color}"/>')


def topology(trace, frame, ox, oy, format_bytes):
    """The devices and links of ``frame``, drawn at ``(ox, oy)``; returns ``(svg, width, height)``."""
    n = len(trace.devices)
    centres, width, height = topology_layout(trace.algorithm, n)
    centres = [(x + ox, y + oy) for x, y in centres]
    active: dict[tuple[int, int], list[int]] = {}
    for t in (frame.round.transfers if frame.round is not None else ()):
        active.setdefault((t.src, t.dst), []).extend(t.chunk_ids)
    parts, labels = [], []
    for (s, d), nbytes in sorted(frame.link_bytes.items()):
        both = (d, s) in frame.link_bytes
        p, q, (nx, ny) = _segment(centres[s], centres[d], 7 if both else 0)
        moving = (s, d) in active
        parts.append(straight_arrow(p, q, _palette.TRANSFER if moving else "#9A9A9A", 2.6 if moving else 1.1,
                                    9 if moving else 6))
        at = 0.3 if both else 0.5
        mx, my = p[0] + (q[0] - p[0]) * at, p[1] + (q[1] - p[1]) * at
        along = 0.4 if both else 0.5
        lx, ly = p[0] + (q[0] - p[0]) * along + nx * 20, p[1] + (q[1] - p[1]) * along + ny * 20
        labels.append(_svg.text(lx, ly + 3.5, format_bytes(nbytes), size=9.5, anchor="middle", fill="#555555"))
        if moving:
            text = chunk_label(sorted(set(active[(s, d)])))
            w = 7 * len(text) + 8
            labels.append(_svg.rect(mx - w / 2, my - 8, w, 16, "#FFFFFF", _palette.TRANSFER, stroke_width=1.2, rx=3)
                          + _svg.text(mx, my + 4, text, size=10.5, anchor="middle", fill=_palette.TRANSFER,
                                      weight="bold"))
    for r, (x, y) in enumerate(centres):
        device = trace.devices[r]
        parts.append(_svg.rect(x - NODE_W / 2, y - NODE_H / 2, NODE_W, NODE_H, _palette.device_fill(device),
                               _palette.device_color(device), title=device, stroke_width=1.6, rx=6))
        parts.append(_svg.text(x, y - 3, f"rank {r}", size=11, anchor="middle", weight="bold"))
        parts.append(_svg.text(x, y + 11, short_device(device), size=10, anchor="middle"))
    return "".join(parts + labels), width, height


# -- matrix -------------------------------------------------------------------------------------
def cell_width(num_chunks, available):
    """The width of a matrix column: the space shared out, within [MIN_CELL_W, MAX_CELL_W]."""
    return max(MIN_CELL_W, min(MAX_CELL_W, (available - ROW_LABEL_W) / max(num_chunks, 1)))


def matrix(trace, frame, ox, oy, available, max_values=3):
    """The device × chunk matrix of ``frame`` at ``(ox, oy)``; returns ``(svg, width, height)``."""
    n = len(trace.devices)
    cw = cell_width(len(trace.chunk_ranges), available)
    parts = []
    for c, (lo, hi) in enumerate(trace.chunk_ranges):
        x = ox + ROW_LABEL_W + c * cw + cw / 2
        parts.append(_svg.text(x, oy + 12, f"chunk {c}", size=11, anchor="middle", weight="bold"))
        parts.append(_svg.text(x, oy + 25, _element_span(lo, hi), size=9.5,
                               anchor="middle", fill="#555555"))
    parts.append(_svg.text(ox + ROW_LABEL_W - 8, oy + 25, "elements", size=9.5, anchor="end", fill="#555555"))
    for r in range(n):
        y = oy + HEAD_H + r * ROW_H
        device = trace.devices[r]
        parts.append(_svg.rect(ox, y + 4, 6, ROW_H - 8, _palette.device_color(device), rx=1))
        parts.append(_svg.text(ox + 12, y + 19, f"rank {r}", size=11, weight="bold"))
        parts.append(_svg.text(ox + 12, y + 33, short_device(device), size=10, fill=_palette.device_color(device)))
        for c in range(len(trace.chunk_ranges)):
            parts.append(_cell(trace, frame, r, c, ox + ROW_LABEL_W + c * cw, y, cw, max_values))
    width = ROW_LABEL_W + len(trace.chunk_ranges) * cw
    return "".join(parts), width, HEAD_H + n * ROW_H


def _element_span(lo, hi):
    """``0–2``, ``8`` (one element), ``empty``."""
    if hi <= lo:
        return "empty"
    return f"{lo}" if hi - lo == 1 else f"{lo}–{hi - 1}"


def _cell(trace, frame, r, c, x, y, cw, max_values):
    n = len(trace.devices)
    cell = frame.cells[r][c]
    k = len(cell.contributors)
    complete = k == n
    fraction = (k - 1) / (n - 1) if n > 1 else 1.0
    fill = _palette.tint(_CELL_INK, 0.95 - 0.33 * fraction)
    sends = [(dst, op) for chunk, dst, op in frame.sends.get(r, ()) if chunk == c]
    receives = frame.receives.get((r, c), ())
    title = f"rank {r}, chunk {c}: {contributors_text(cell.contributors, n, trace.reduction, max_listed=n)}"
    if cell.values is not None:
        title += " " + format_values(cell.values, max_values=8, digits=6)
    parts = [_svg.rect(x + 2, y + 2, cw - 4, ROW_H - 4, fill, _palette.INK if complete else "#C4C4C4", title,
                       stroke_width=1.5 if complete else 0.8)]
    if sends:
        parts.append(_svg.rect(x + 4, y + 4, cw - 8, ROW_H - 8, "none", _palette.TRANSFER, stroke_width=1.8,
                               dash="4,2"))
    if receives:
        parts.append(_svg.rect(x + 4, y + 4, cw - 8, ROW_H - 8, "none", _palette.TRANSFER, stroke_width=2.6))
    lines: list[tuple[str, str, str | None]] = []
    if cell.values is not None:
        lines.append((_fit_values(cell.values, max_values, cw), _palette.INK, None))
    lines.append((contributors_text(cell.contributors, n, trace.reduction), "#333333",
                  "bold" if complete else None))
    traffic = " · ".join([f"to {dst}" for dst, _ in sends] + _receive_text(receives, cw < NARROW_CELL_W))
    if traffic:
        lines.append((traffic, _palette.TRANSFER, "bold"))
    top = y + (ROW_H - 13 * len(lines)) / 2 + 9.5
    for i, (content, color, weight) in enumerate(lines):
        if color == _palette.TRANSFER:
            w = min(len(content) * 5.8 + 8, cw - 12)
            parts.append(_svg.rect(x + (cw - w) / 2, top + 13 * i - 9.5, w, 12.5, "#FFFFFF", rx=3, opacity=0.9))
        parts.append(_svg.text(x + cw / 2, top + 13 * i, content, size=10, anchor="middle", fill=color,
                               weight=weight))
    return "".join(parts)


def _receive_text(receives, narrow):
    """``from 0: adds`` (``from 0 (+)`` in a narrow cell; ``from 5 ranks`` beyond four senders)."""
    if not receives:
        return []
    ops = {op for _, op in receives}
    verb = "adds" if ops == {"reduce"} else "stores" if ops == {"copy"} else "stores, adds"
    sources = ",".join(str(src) for src, _ in receives) if len(receives) <= 4 else f"{len(receives)} ranks"
    if narrow:
        return [f"from {sources} ({'+' if verb == 'adds' else '='})"]
    return [f"from {sources}: {verb}"]


def _fit_values(values, max_values, cw):
    """As many leading values as fit in a cell ``cw`` px wide (at least one)."""
    for count in range(max_values, 0, -1):
        text = format_values(values, count)
        if len(text) * 5.6 <= cw - 10:
            return text
    return format_values(values, 1)


# -- the whole frame ----------------------------------------------------------------------------
def frame_svg(trace, frame, width, format_bytes, max_values=3):
    """One frame as an SVG document: strip on top, topology left, matrix right."""
    topo, topo_w, topo_h = topology(trace, frame, 0, STRIP_H + 10, format_bytes)
    grid, grid_w, grid_h = matrix(trace, frame, topo_w + GAP, STRIP_H + 10, width - topo_w - GAP, max_values)
    total_w = max(width, topo_w + GAP + grid_w)
    strip = round_strip(trace, frame.index, total_w)
    height = STRIP_H + 10 + max(topo_h, grid_h) + 6
    return _svg.document(total_w, height, strip + topo + grid)
