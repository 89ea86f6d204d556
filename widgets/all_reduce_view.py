"""``AllReduceView``: an all-reduce round by round — chunks, partial sums, bytes — and busbw from algbw.

Shows a :class:`~dfcore.distribute.trace.CollectiveTrace` (or the
:class:`~dfcore.distribute.trace.AllReduceResult` holding one): the devices on the
algorithm's topology with the bytes each link carried so far, a device × chunk matrix
with the actual partial sums and which chunk each device sends and receives in the
round, the phase of every round, and the bytes each device sent and received so far
(see :mod:`widgets._chunk_state` and :mod:`widgets._chunk_svg`). One frame per round
plus a start frame is precomputed into a ``Stack`` that ``Play`` and ``IntSlider`` drive
through ``jslink``, so stepping works in a static HTML export with no kernel.

Below, a panel derives nccl-tests' bus bandwidth from the algorithm bandwidth by
counting the bytes the trace moved (:mod:`widgets._bandwidth`), on the simulated clock
by default.
"""

import html

import ipywidgets as widgets
import numpy as np

from dfcore.distribute.trace import AllReduceResult

from . import _bandwidth, _check, _chunk_state, _chunk_svg, _html, _palette
from ._format import count, format_bytes
from ._static import StaticPicture


class AllReduceView(StaticPicture, widgets.VBox):
    """Step through an all-reduce's rounds; derive busbw from algbw.

    Args:
        result_or_trace: an ``AllReduceResult`` (run with ``trace=True``) or a ``CollectiveTrace``.
        clock: the time t of ``algbw = S/t``: ``"simulated"`` (default), ``"predicted"`` (α-β)
            or ``"wall"`` (an ``AllReduceResult`` only). A bare trace gets its times by
            replaying its schedule on ``machine``.
        machine: the ``MachineProfile`` for a bare trace's times and the link bandwidth
            (default: the devices as ``all_reduce`` models them).
        max_values: at most this many leading values of a chunk are shown in a cell.
        width_px: width of a frame's drawing.

    Attributes:
        trace, result (None for a bare trace), frame_states: :class:`~widgets._chunk_state.Frame`
        per frame; times: ``{clock: s}``; bandwidth: :class:`~widgets._bandwidth.BusBandwidth`
        (None when t is 0 or unknown); play, slider, stack (the frames' ``Stack``), links.

    Raises:
        ValueError: a result without a trace, an unknown clock, or a clock with no time.
        TypeError: neither a result nor a trace.
    """

    def __init__(self, result_or_trace, clock="simulated", machine=None, max_values=3, width_px=1040, **kwargs):
        self.trace, self.result = _unpack(result_or_trace)
        if clock not in _bandwidth.CLOCKS:
            raise ValueError(f"clock must be one of {_bandwidth.CLOCKS}, got {clock!r}")
        self.times = _bandwidth.collective_times(self.trace, self.result, machine)
        if clock not in self.times:
            raise ValueError(f"No {_bandwidth.CLOCK_LABELS[clock]} for this trace: pass the AllReduceResult "
                             "(wall time) or a machine whose schedule matches the trace")
        self.clock = clock
        time_s = self.times[clock]
        self.bandwidth = (_bandwidth.bus_bandwidth(self.trace, time_s, clock, machine) if time_s > 0 else None)
        self.frame_states = _chunk_state.frames(self.trace)
        last = len(self.frame_states) - 1
        pages = [widgets.HTML(self._frame_html(f, width_px, max_values)) for f in self.frame_states]
        self.stack = widgets.Stack(pages, selected_index=0, layout=widgets.Layout(overflow="auto"))
        self.play = widgets.Play(value=0, min=0, max=last, step=1, interval=1400, description="play")
        self.slider = widgets.IntSlider(value=0, min=0, max=last, description="frame",
                                        layout=widgets.Layout(width="420px"))
        self.links = [widgets.jslink((self.play, "value"), (self.slider, "value")),
                      widgets.jslink((self.slider, "value"), (self.stack, "selected_index"))]
        controls = widgets.HBox([self.play, self.slider, widgets.HTML(_html.note(
            "frame 0: the inputs · frame r + 1: round r"))])
        super().__init__([widgets.HTML(self._header_html()), controls, self.stack,
                          widgets.HTML(self._bandwidth_html())], **kwargs)

    # -- pieces ------------------------------------------------------------------------------------
    def _header_html(self):
        t, n = self.trace, len(self.trace.devices)
        size = t.num_elements * np.dtype(t.dtype).itemsize
        convention = f" ({t.convention} convention)" if t.algorithm == "ring" else ""
        text = (f"{t.algorithm} all-reduce{convention}: {t.reduction} of {t.num_elements:,} {t.dtype} elements "
                f"({size:,} B) per device on {count(n, 'device')} · {count(t.num_rounds, 'round')}, "
                f"{count(len(t.transfers), 'message')}, {count(len(t.chunk_ranges), 'chunk')}")
        if self.clock in self.times:
            text += f" · {_bandwidth.seconds(self.times[self.clock])} ({_bandwidth.CLOCK_LABELS[self.clock]})"
        ink = _palette.tint("#5A5A5A", 0.62)
        extras = [_html.Raw(_html.swatch("#FFFFFF", _palette.TRANSFER) + "dashed: sends this round"),
                  _html.Raw(_html.swatch(_palette.tint(_palette.TRANSFER, 0.8), _palette.TRANSFER)
                            + "solid: receives this round"),
                  _html.Raw(_html.swatch(ink, _palette.INK) + "darker: more ranks combined; outlined: all"),
                  _html.Raw(_html.swatch(_chunk_svg.WARM) + "reducing rounds"),
                  _html.Raw(_html.swatch(_chunk_svg.COOL) + "distributing rounds")]
        return _html.heading(text) + _html.legend(t.devices, extras)

    def _frame_html(self, frame, width_px, max_values):
        svg = _chunk_svg.frame_svg(self.trace, frame, width_px, format_bytes, max_values)
        return (f'<div style="font-size:12.5px;font-weight:bold;{_html.FONT};margin:2px 0 4px 0">'
                f"{html.escape(self._caption(frame))}</div>{svg}{self._bytes_table(frame)}")

    def _caption(self, frame):
        t, n = self.trace, len(self.trace.devices)
        if frame.round is None:
            return (f"start: each of the {n} ranks holds its own input, cut into "
                    f"{count(len(t.chunk_ranges), 'chunk')}; press ▶ or drag the slider")
        record = frame.round
        rule = _chunk_state.ring_rule(t, record) or _describe(record)
        text = f"round {record.round} (of 0–{t.num_rounds - 1}) · {record.phase} · {rule}"
        if frame.index == len(self.frame_states) - 1 and all(
                len(c.contributors) == n for row in frame.cells for c in row):
            text += f" · done: every rank holds the {t.reduction} of all {n} inputs"
        return text

    def _bytes_table(self, frame):
        t = self.trace
        rows = [(_html.device_chip(d), f"{frame.bytes_sent[r]:,} B", f"{frame.bytes_received[r]:,} B",
                 f"{t.bytes_sent_per_device[d]:,} B") for r, d in enumerate(t.devices)]
        head = ["device", "sent so far", "received so far", "sends in all"]
        return _html.heading("bytes per device") + _html.table(head, rows, numeric=(1, 2, 3))

    def _bandwidth_html(self):
        title = _html.heading("bus bandwidth from algorithm bandwidth, by counting bytes (nccl-tests)")
        bw = self.bandwidth
        if bw is None:
            return title + _html.note("The all-reduce took no time (one device, or nothing to send): "
                                      "there is no bandwidth to derive.")
        n = bw.num_devices
        intro = (f"algbw is the tensor size over the time. In an all-reduce each rank's data must reach the "
                 f"{n - 1} others and come back reduced: a ring sends 2(N−1)/N × S bytes out of every device "
                 f"over its one link, so busbw = algbw × 2(N−1)/N is what each link carried per second — "
                 f"comparable with the link's hardware bandwidth, for any N.")
        rows = _bandwidth.derivation_rows(bw, self.trace.algorithm)
        return title + _html.note(intro) + _html.table(["quantity", "value", "how"], rows, numeric=(1,))

    def __repr__(self):
        t = self.trace
        return f"<AllReduceView: {t.algorithm}, {count(len(t.devices), 'device')}, {count(t.num_rounds, 'round')}>"


def _unpack(source):
    _check.expect("AllReduceView", "result_or_trace", source, _check.ALL_REDUCE)
    if not isinstance(source, AllReduceResult):
        return source, None
    if source.trace is None:
        raise ValueError("This AllReduceResult has no trace: run all_reduce(..., trace=True)")
    return source.trace, source


def _describe(record):
    """The messages of a round as ``1→0 c0 adds, 2→0 c0 adds`` (at most six, then a count)."""
    parts = [f"{t.src}→{t.dst} {_chunk_svg.chunk_label(t.chunk_ids)} {'adds' if t.op == 'reduce' else 'stores'}"
             for t in record.transfers]
    return ", ".join(parts[:6]) + (f" and {len(parts) - 6} more" if len(parts) > 6 else "")

