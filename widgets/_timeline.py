"""A step's ops and transfers as spans on one clock, their overlap, and the SVG that draws them.

Pure functions over a :class:`~dfcore.runtime.step_stats.StepStats` (no ipywidgets).

- Times are microseconds from the step's first start, on the *simulated* clock
  (``sim_start_micros``/``sim_end_micros``) or the *wall* clock (``all_start_micros``
  and ``all_end_rel_micros``).
- A transfer pairs a ``_Send`` and a ``_Recv`` by their rendezvous key's parts, the loop iteration
  included (:func:`dfcore.runtime.transfer_pairs.pair_transfers`, which the Chrome trace uses too); it
  spans from the end of the send (the value is posted) to the end of the recv (the receiver has it).
  Feeds and fetches (``_Arg``/``_Retval``, the step's call frame) are not transfers.
- The compute/communication overlap of a step is the share of communication time
  during which some device computes: ``|C ∩ T| / |T|`` in %, where ``T`` is the union
  of the transfer spans and ``C`` the union of the spans of every op that is not a
  ``_Send``/``_Recv``.
- Control flow: a node run inside a loop carries its ``(frame_id, iteration)`` (its record's
  ``detail.frame_iter``), so each iteration is its own bar, labelled ``name ·i``, and a ``_Send``/``_Recv``
  pairs with the one of the same iteration; nodes that ran dead (given the run's ``StepRecords.dead_nodes``) are
  grey dashed outlines, and a transfer whose ``_Recv`` ran dead is grey. A dotted line marks where each
  iteration of a loop frame starts (its first node run, on any device), labelled ``iter i`` where there is room.
"""

import dataclasses

from dfcore.runtime.transfer_pairs import TRANSFER_ROLES, pack_lanes, pair_transfers

from . import _palette, _svg
from ._format import device_sort_key, format_bytes, format_us, short_device

MODES = ("simulated", "wall")
LABEL_WIDTH, RIGHT_PAD, CAPTION_HEIGHT, AXIS_HEIGHT = 112, 16, 22, 28
#: A lane title's width per character: bold sans-serif, 11 px for compute lanes, 10 px for transfers.
LABEL_PX_PER_CHAR = {"compute": 6.2, "transfers": 5.6}
ROW_HEIGHT, COMPUTE_PAD, MAX_ROWS = 18, 4, 6


@dataclasses.dataclass(frozen=True)
class OpSpan:
    """One node run: ``start_us``/``end_us`` from the step's start on the chosen clock; ``frame_iter`` is
    ``(frame_id, iteration)`` inside a loop (else None); ``dead`` is True when it ran dead."""

    device: str
    name: str
    op_type: str
    start_us: float
    end_us: float
    frame_iter: tuple | None = None
    dead: bool = False

    @property
    def title(self):
        """The name, with ``·<iteration>`` inside a loop."""
        return self.name if self.frame_iter is None else f"{self.name} ·{self.frame_iter[1]}"


@dataclasses.dataclass(frozen=True)
class TransferSpan:
    """One ``_Send`` → ``_Recv`` transfer of ``nbytes`` from ``src_device`` to ``dst_device``."""

    tensor_name: str
    src_device: str
    dst_device: str
    send: OpSpan
    recv: OpSpan
    nbytes: int

    @property
    def start_us(self):
        return self.send.end_us

    @property
    def end_us(self):
        return max(self.recv.end_us, self.send.end_us)

    @property
    def dead(self):
        """True when the value carried was dead (its ``_Recv`` ran dead)."""
        return self.recv.dead


@dataclasses.dataclass(frozen=True)
class StepSpans:
    """A step on one clock: ops in execution order (start, device, name), transfers, devices."""

    mode: str
    ops: tuple
    transfers: tuple
    devices: tuple
    end_us: float


def has_simulated_times(step_stats):
    """True when every node of ``step_stats`` carries simulated start and end times."""
    return all(ns.sim_start_micros is not None and ns.sim_end_micros is not None
               for dev in step_stats.dev_stats for ns in dev.node_stats)


def step_spans(step_stats, mode="simulated", dead=frozenset()):
    """The :class:`StepSpans` of ``step_stats`` on the ``simulated`` or ``wall`` clock.

    ``dead``: ``(device, node name, frame_iter)`` of the node runs that ran dead
    (``StepRecords.dead_nodes``); they get ``OpSpan.dead``.

    Raises:
        ValueError: an unknown mode, or ``simulated`` without simulated times.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "simulated" and not has_simulated_times(step_stats):
        raise ValueError("These step stats have no simulated times; use mode='wall'.")
    raw = []
    for dev in step_stats.dev_stats:
        for ns in dev.node_stats:
            start, end = ((ns.sim_start_micros, ns.sim_end_micros) if mode == "simulated"
                          else (ns.all_start_micros, ns.all_end_micros))
            raw.append((dev.device, ns, start, end))
    origin = min((start for _, _, start, _ in raw), default=0)
    dead = frozenset(dead)
    spans = []
    for device, ns, start, end in raw:
        frame_iter = ns.detail.frame_iter
        spans.append(OpSpan(device, ns.node_name, ns.op_type, start - origin, end - origin, frame_iter,
                            (device, ns.node_name, frame_iter) in dead))
    ops = sorted(spans, key=lambda s: (s.start_us, device_sort_key(s.device), s.name, s.frame_iter or ()))
    transfers = _transfers(zip(spans, raw))
    devices = tuple(sorted({dev.device for dev in step_stats.dev_stats}, key=device_sort_key))
    end = max([s.end_us for s in ops] + [t.end_us for t in transfers], default=0)
    return StepSpans(mode, tuple(ops), transfers, devices, end)


def _transfers(spans_and_stats):
    """The :class:`TransferSpan` s of a step's ``(OpSpan, (device, stats, start, end))`` pairs."""
    pairs = pair_transfers(((device, ns, (span, ns)) for span, (device, ns, _, _) in spans_and_stats),
                           lambda end: end[0].start_us)
    transfers = [TransferSpan(p.key.tensor_name, p.key.src_device, p.key.dst_device, p.send[0], p.recv[0],
                              (p.recv[1].output_bytes or (0,))[0]) for p in pairs]
    return tuple(sorted(transfers, key=lambda t: (t.start_us, t.end_us, t.tensor_name)))


def loops(spans):
    """``[(frame_id, iterations, transfers per iteration), ...]`` of the loop frames in a step, by frame id.

    ``iterations`` counts the iterations any node ran in (the last test included); the transfers of
    iteration ``i`` are the pairs whose ``_Recv`` ran in it.
    """
    iterations: dict[int, set[int]] = {}
    transfers: dict[int, dict[int, int]] = {}
    for span in spans.ops:
        if span.frame_iter is not None:
            iterations.setdefault(span.frame_iter[0], set()).add(span.frame_iter[1])
    for t in spans.transfers:
        if t.recv.frame_iter is not None:
            frame, it = t.recv.frame_iter
            transfers.setdefault(frame, {}).setdefault(it, 0)
            transfers[frame][it] += 1
    return [(frame, len(its), tuple(transfers.get(frame, {}).get(i, 0) for i in sorted(its)))
            for frame, its in sorted(iterations.items())]


def iteration_starts(spans):
    """``[(frame_id, iteration, start µs), ...]``: when each iteration of each loop frame first ran a node."""
    first: dict[tuple[int, int], float] = {}
    for span in spans.ops:
        if span.frame_iter is not None:
            first[span.frame_iter] = min(first.get(span.frame_iter, span.start_us), span.start_us)
    return [(frame, it, start) for (frame, it), start in sorted(first.items())]


def union(intervals):
    """Merge ``(start, end)`` intervals into sorted disjoint ones (empty intervals dropped)."""
    merged: list[list[float]] = []
    for start, end in sorted((s, e) for s, e in intervals if e > s):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [tuple(m) for m in merged]


def _intersection_length(a, b):
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        total += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlap(spans):
    """``(overlap %, communication µs, compute µs)`` of a step (see the module docstring).

    The % is 0.0 when the step has no transfer time.
    """
    comm = union((t.start_us, t.end_us) for t in spans.transfers)
    compute = union((s.start_us, s.end_us) for s in spans.ops if s.op_type not in TRANSFER_ROLES)
    comm_us = sum(e - s for s, e in comm)
    compute_us = sum(e - s for s, e in compute)
    percent = 100.0 * _intersection_length(comm, compute) / comm_us if comm_us else 0.0
    return percent, comm_us, compute_us


def _rows(spans):
    """Greedy rows so that spans in one row never overlap (at most MAX_ROWS rows; the last one may)."""
    rows, count = pack_lanes([(s.start_us, s.end_us) for s in spans], MAX_ROWS)
    return dict(zip(spans, rows)), max(count, 1)


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where things go: ``x(t)``, and per lane its top, height and the row of each span."""

    width: float
    height: float
    end_us: float
    lanes: tuple  # (title, device, kind, top, height, rows {span: row})
    label_width: float = LABEL_WIDTH  # wider when a lane title would not fit (task-qualified device names)

    def x(self, t_us):
        plot = self.width - self.label_width - RIGHT_PAD
        return self.label_width + (plot * t_us / self.end_us if self.end_us > 0 else 0)

    def row_box(self, lane_index, span):
        """``(top, height)`` of the row where ``span`` sits in lane ``lane_index``."""
        _, _, _, top, _, rows = self.lanes[lane_index]
        return top + COMPUTE_PAD / 2 + rows.get(span, 0) * ROW_HEIGHT, ROW_HEIGHT - 2


def layout(spans, width=960):
    """A :class:`Layout`: per device a compute lane, then a transfers lane if it receives any."""
    lanes, top = [], CAPTION_HEIGHT
    for device in spans.devices:
        for kind, members in (("compute", [s for s in spans.ops if s.device == device]),
                              ("transfers", [t for t in spans.transfers if t.dst_device == device])):
            if kind == "transfers" and not members:
                continue
            rows, count = _rows(members)
            height = count * ROW_HEIGHT + COMPUTE_PAD
            title = short_device(device) if kind == "compute" else f"transfers → {short_device(device)}"
            lanes.append((title, device, kind, top, height, rows))
            top += height
    widest = max((len(title) * LABEL_PX_PER_CHAR[kind] for title, _, kind, *_ in lanes), default=0)
    return Layout(width, top + AXIS_HEIGHT, spans.end_us or 1, tuple(lanes), max(LABEL_WIDTH, widest + 12))


def draw(spans, lay):
    """The SVG of the whole step: lanes, op bars, transfer bars and Send→Recv arrows."""
    body = [_svg.time_axis(lay.label_width, lay.width - lay.label_width - RIGHT_PAD, lay.end_us,
                           lay.height - AXIS_HEIGHT + 2, format_us, grid_top=CAPTION_HEIGHT)]
    lane_of = {}
    for index, (title, device, kind, top, height, _) in enumerate(lay.lanes):
        color = _palette.device_color(device)
        body.append(_svg.rect(0, top, lay.width, height, _palette.tint(color, 0.94 if kind == "compute" else 0.97),
                              rx=0))
        body.append(_svg.text(6, top + height / 2 + 4, title, size=11 if kind == "compute" else 10,
                              fill=color if kind == "compute" else _palette.TRANSFER, weight="bold"))
        lane_of[(device, kind)] = index
    body += _iteration_marks(spans, lay)
    for span in spans.ops:
        body.append(_op_bar(span, lay, lane_of[(span.device, "compute")]))
    for t in spans.transfers:
        body.append(_transfer_bar(t, lay, lane_of[(t.dst_device, "transfers")]))
    for t in spans.transfers:
        (y1, h1), (y2, h2) = (lay.row_box(lane_of[(t.src_device, "compute")], t.send),
                              lay.row_box(lane_of[(t.dst_device, "compute")], t.recv))
        down = y2 > y1
        body.append(_svg.arrow(lay.x(t.send.end_us), y1 + (h1 if down else 0), lay.x(t.recv.end_us),
                               y2 + (0 if down else h2), _palette.TRANSFER,
                               title=f"{t.tensor_name}: {short_device(t.src_device)} → {short_device(t.dst_device)}"))
    return _svg.document(lay.width, lay.height, "".join(body))


def _iteration_marks(spans, lay, min_gap_px=34):
    """A dotted line where each loop iteration starts, and ``iter i`` beside it where the previous label left room."""
    marks, last_label_x = [], None
    top, bottom = CAPTION_HEIGHT, lay.height - AXIS_HEIGHT
    for _, it, start in iteration_starts(spans):
        x = lay.x(start)
        marks.append(_svg.line(x, top, x, bottom, _palette.DEAD_INK, dash="1,2"))
        if last_label_x is None or x - last_label_x >= min_gap_px:
            marks.append(_svg.text(x + 2, top + 8, f"iter {it}", size=8, fill=_palette.DEAD_INK))
            last_label_x = x
    return marks


def _op_bar(span, lay, lane):
    top, height = lay.row_box(lane, span)
    x0 = lay.x(span.start_us)
    width = max(lay.x(span.end_us) - x0, 2)
    where = "" if span.frame_iter is None else f", frame {span.frame_iter[0]} iteration {span.frame_iter[1]}"
    title = f"{span.name} ({span.op_type}) on {short_device(span.device)}{where}: " \
            f"{format_us(span.start_us)} → {format_us(span.end_us)}" + (" (ran dead)" if span.dead else "")
    if span.dead:
        return _svg.rect(x0, top, width, height, _palette.DEAD_FILL, _palette.DEAD_INK, title, dash="3,2")
    if span.op_type in TRANSFER_ROLES:
        return _svg.rect(x0, top, width, height, "white", _palette.TRANSFER, title, stroke_width=1.5)
    bar = _svg.rect(x0, top, width, height, _palette.device_fill(span.device), _palette.device_color(span.device),
                    title)
    if width > 7 * len(span.title) + 6:
        bar += _svg.text(x0 + 3, top + height - 5, span.title, size=10)
    return bar


def _transfer_bar(t, lay, lane):
    top, height = lay.row_box(lane, t)
    x0 = lay.x(t.start_us)
    width = max(lay.x(t.end_us) - x0, 2)
    text = f"{t.tensor_name} ({format_bytes(t.nbytes)})"
    title = f"{text}: {short_device(t.src_device)} → {short_device(t.dst_device)}, " \
            f"{format_us(t.start_us)} → {format_us(t.end_us)}"
    if t.dead:
        return _svg.rect(x0, top, width, height, _palette.DEAD_FILL, _palette.DEAD_INK, title + " (dead)", dash="3,2")
    bar = _svg.rect(x0, top, width, height, _palette.tint(_palette.TRANSFER, 0.55), _palette.TRANSFER, title)
    if width > 6 * len(text) + 6:
        bar += _svg.text(x0 + 3, top + height - 5, text, size=9)
    return bar


def frame(spans, lay, first, last):
    """The overlay for one step-through frame: ops ``first..last`` (execution order) have started.

    A veil covers everything after the start of op ``last``; ops ``first..last`` are
    outlined and named in a caption. The SVG has the base's size and ignores the mouse.
    """
    ops = spans.ops[first:last + 1]
    cursor = lay.x(ops[-1].start_us)
    top, bottom = CAPTION_HEIGHT, lay.height - AXIS_HEIGHT
    body = [_svg.rect(cursor, top, lay.width - cursor, bottom - top, "white", opacity=0.72, rx=0),
            _svg.line(cursor, top, cursor, bottom + 4, _palette.INK, width=1.5, dash="4,2")]
    lane_of = {(device, kind): i for i, (_, device, kind, _, _, _) in enumerate(lay.lanes)}
    for span in ops:
        y, h = lay.row_box(lane_of[(span.device, "compute")], span)
        x0 = lay.x(span.start_us)
        body.append(_svg.rect(x0 - 1.5, y - 1.5, max(lay.x(span.end_us) - x0, 2) + 3, h + 3, "none", _palette.INK,
                              stroke_width=2))
    steps = f"step {first + 1}" if first == last else f"steps {first + 1}–{last + 1}"
    names = ", ".join(f"{s.title} ({s.op_type}{', dead' if s.dead else ''}) on {short_device(s.device)}"
                      for s in ops[:3])
    more = f" and {len(ops) - 3} more" if len(ops) > 3 else ""
    caption = f"{steps} of {len(spans.ops)} · t = {format_us(ops[-1].start_us)} · {names}{more}"
    return caption_overlay(lay, caption, "".join(body))


def caption_overlay(lay, caption, body=""):
    """An overlay SVG of the base's size (mouse-transparent): ``body`` and a caption above the lanes."""
    content = body + _svg.text(lay.label_width, 15, caption, size=11, weight="bold")
    return _svg.document(lay.width, lay.height, content, style="pointer-events:none")


def frame_ranges(count, max_frames):
    """``[(first, last), ...]``: ``count`` ops in at most ``max_frames`` consecutive groups."""
    per = max(1, -(-count // max(max_frames, 1)))
    return [(i, min(i + per, count) - 1) for i in range(0, count, per)]
