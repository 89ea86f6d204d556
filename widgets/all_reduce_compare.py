"""``AllReduceComparison``: several all-reduce algorithms on the same input, side by side.

Runs :func:`dfcore.distribute.all_reduce` once per algorithm on the same tensors and
devices and shows, per algorithm, the rounds, the messages, the bytes each device sent
(the busiest device and every device), the simulated time and the α-β prediction, and
nccl-tests' algbw/busbw on the simulated clock — as a table and two small bar charts
(bytes sent per device, with the ring's 2(N−1)/N × S marked; simulated time, with the
prediction marked).
"""

import dataclasses

import ipywidgets as widgets
import numpy as np

from dfcore.distribute import all_reduce, schedules

from . import _bandwidth, _check, _html, _palette, _svg
from ._format import count, format_bytes
from ._static import StaticPicture

DEFAULT_ALGORITHMS = ("ring", "reduce_to_one", "tree")
_BAR_H, _VALUE_W = 7, 110


@dataclasses.dataclass(frozen=True)
class ComparisonRow:
    """One algorithm's numbers (bytes, seconds, decimal GB/s; ``bytes_per_device`` in rank order)."""

    algorithm: str
    rounds: int
    messages: int
    bytes_per_device: tuple
    total_bytes: int
    simulated_time_s: float
    predicted_time_s: float
    algbw_GBps: float
    busbw_GBps: float


class AllReduceComparison(StaticPicture, widgets.VBox):
    """The same all-reduce under several algorithms: a table and two bar charts.

    Args:
        values: one array-like per device (as :func:`dfcore.distribute.all_reduce`).
        devices: device names (default ``GPU:0`` … ``GPU:N−1``).
        algorithms: the algorithms to run, in display order.
        reduction, num_subchunks, machine: passed to ``all_reduce`` for every algorithm.
        width_px: width of the charts.

    Attributes:
        results: ``{algorithm: AllReduceResult}``; rows: a :class:`ComparisonRow` per algorithm;
        devices: the full device names; size_bytes: S, one rank's tensor.

    Raises:
        TypeError: ``values`` is not a list or tuple (or what ``all_reduce`` raises for it).
        ValueError: no algorithm, or what ``all_reduce`` raises for the input, every algorithm
            checked before the first runs.
    """

    def __init__(self, values, devices=None, algorithms=DEFAULT_ALGORITHMS, reduction="sum", num_subchunks=1,
                 machine=None, width_px=960, **kwargs):
        _check.expect("AllReduceComparison", "values", values, _check.DEVICE_VALUES)
        if not algorithms:
            raise ValueError("AllReduceComparison needs at least one algorithm")
        for alg in algorithms if values else ():  # all checked before the first runs (all_reduce names [])
            schedules.check_arguments(alg, len(values), int(np.size(values[0])), num_subchunks, reduction=reduction)
        self.results = {alg: all_reduce(values, devices, algorithm=alg, reduction=reduction,
                                        num_subchunks=num_subchunks, machine=machine, name=f"compare/{alg}")
                        for alg in algorithms}
        first = self.results[algorithms[0]].trace
        assert first is not None, "all_reduce traces by default"
        self.devices = first.devices
        self.size_bytes = first.num_elements * np.dtype(first.dtype).itemsize
        self.rows = [_row(alg, result, self.size_bytes) for alg, result in self.results.items()]
        self._label_w = max(60, 6.5 * max(len(a) for a in algorithms) + 12)
        super().__init__([widgets.HTML(self._table_html()), widgets.HTML(self._charts_svg(width_px))], **kwargs)

    def _table_html(self):
        n = len(self.devices)
        trace = next(iter(self.results.values())).trace
        assert trace is not None
        title = _html.heading(f"{trace.reduction} of {trace.num_elements:,} {trace.dtype} elements "
                              f"({self.size_bytes:,} B) per device on {count(n, 'device')}, by algorithm")
        head = ["algorithm", "rounds", "messages", "busiest device sent", "least busy device sent", "all links",
                "simulated time", "α-β prediction", "algbw", "busbw"]
        rows = [(r.algorithm, r.rounds, r.messages, format_bytes(max(r.bytes_per_device, default=0)),
                 format_bytes(min(r.bytes_per_device, default=0)), format_bytes(r.total_bytes),
                 _bandwidth.seconds(r.simulated_time_s), _bandwidth.seconds(r.predicted_time_s),
                 _gbps(r.algbw_GBps), _gbps(r.busbw_GBps)) for r in self.rows]
        outputs = [res.outputs[0] for res in self.results.values()]
        spread = max(float(np.max(np.abs(o.astype(np.float64) - outputs[0]), initial=0.0)) for o in outputs)
        note = (f"All algorithms compute the same {trace.reduction} (largest difference between them: {spread:.3g}). "
                f"A ring sends 2(N−1)/N × S = {format_bytes(2 * (n - 1) * self.size_bytes // n)} per device; "
                "algbw = S / t and busbw = algbw × 2(N−1)/N on the simulated clock (decimal GB/s).")
        return title + _html.table(head, rows, numeric=tuple(range(1, 10))) + _html.note(note)

    def _charts_svg(self, width_px):
        half = max(320, (width_px - 30) / 2)
        bytes_body, bytes_h = self._bytes_chart(0, half)
        time_body, time_h = self._time_chart(half + 30, half)
        return _svg.document(2 * half + 30, max(bytes_h, time_h), bytes_body + time_body)

    def _bytes_chart(self, ox, width):
        n = len(self.devices)
        ring_law = 2 * (n - 1) * self.size_bytes / n
        top_value = max([b for r in self.rows for b in r.bytes_per_device] + [ring_law, 1])
        label_w = self._label_w
        plot = width - label_w - _VALUE_W
        parts = [_svg.text(ox, 14, "bytes sent per device", size=12, weight="bold")]
        y = 26
        for r in self.rows:
            group_h = n * (_BAR_H + 2) + 12
            parts.append(_svg.text(ox + label_w - 8, y + group_h / 2 + 2, r.algorithm, size=11, anchor="end"))
            for rank, nbytes in enumerate(r.bytes_per_device):
                device = self.devices[rank]
                w = plot * nbytes / top_value
                parts.append(_svg.rect(ox + label_w, y + 4 + rank * (_BAR_H + 2), w, _BAR_H,
                                       _palette.device_fill(device), _palette.device_color(device),
                                       title=f"{r.algorithm}: rank {rank} sent {nbytes:,} B", rx=1))
            busiest = max(r.bytes_per_device, default=0)
            rank = r.bytes_per_device.index(busiest) if r.bytes_per_device else 0
            parts.append(_svg.text(ox + label_w + plot * busiest / top_value + 5, y + 4 + rank * (_BAR_H + 2) + 7,
                                   f"{format_bytes(busiest)} (rank {rank})", size=10))
            y += group_h
        x_law = ox + label_w + plot * ring_law / top_value
        parts.append(_svg.line(x_law, 22, x_law, y, _palette.TRANSFER, 1.2, dash="4,3"))
        parts.append(_svg.text(x_law, y + 13, "ring: 2(N−1)/N × S", size=10, anchor="middle",
                               fill=_palette.TRANSFER))
        return "".join(parts), y + 20

    def _time_chart(self, ox, width):
        top_value = max([r.simulated_time_s for r in self.rows] + [r.predicted_time_s for r in self.rows]
                        + [1e-12])
        label_w = self._label_w
        plot = width - label_w - _VALUE_W
        parts = [_svg.text(ox, 14, "simulated time (bar) and α-β prediction (tick)", size=12, weight="bold")]
        y = 26
        for r in self.rows:
            parts.append(_svg.text(ox + label_w - 8, y + 15, r.algorithm, size=11, anchor="end"))
            w = plot * r.simulated_time_s / top_value
            parts.append(_svg.rect(ox + label_w, y + 4, w, 16, _palette.tint(_palette.INK, 0.75), _palette.INK,
                                   title=f"{r.algorithm}: simulated {_bandwidth.seconds(r.simulated_time_s)}"))
            x_pred = ox + label_w + plot * r.predicted_time_s / top_value
            parts.append(_svg.line(x_pred, y, x_pred, y + 24, _palette.TRANSFER, 2.2))
            parts.append(_svg.text(ox + label_w + max(w, plot * r.predicted_time_s / top_value) + 6, y + 16,
                                   _bandwidth.seconds(r.simulated_time_s), size=10))
            y += 30
        return "".join(parts), y + 8

    def __repr__(self):
        return (f"<AllReduceComparison: {', '.join(self.results)} on "
                f"{count(len(self.devices), 'device')}>")


def _row(algorithm, result, size_bytes):
    trace = result.trace
    sent = tuple(trace.bytes_sent_per_device[d] for d in trace.devices)
    time_s = result.simulated_time_s
    algbw = size_bytes / time_s / 1e9 if time_s > 0 else 0.0
    n = len(trace.devices)
    return ComparisonRow(algorithm, trace.num_rounds, len(trace.transfers), sent, sum(trace.bytes_per_link.values()),
                         time_s, result.predicted_time_s, algbw, algbw * 2 * (n - 1) / n)


def _gbps(value):
    return _bandwidth.gbps(value) if value else "—"
