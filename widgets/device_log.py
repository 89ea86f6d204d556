"""``DeviceLog``: what ``log_device_placement`` prints, as tables you can filter.

- TF's ``Device mapping:`` header (one line per GPU with its description);
- the placement log (``<name>: (<OpType>): <device>``) as a table with the requested
  device, the assigned one and the placer's reason, filtered by device and op type;
- from a traced run's ``RunMetadata``: the rendezvous events of the step (sent,
  requested, matched, how long the receiver waited, bytes) and the memory each
  device's allocators used (allocated in the step, peak).
"""

import ipywidgets as widgets

from dfcore.runtime.config import step_records
from dfcore.runtime.placer import placement_log_lines

from . import _check, _html
from ._format import count, device_sort_key, format_bytes, format_us, short_device
from ._static import StaticPicture

ALL = ""
_TRACE_HINT = ("Pass run_metadata from a run with options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE) "
               "to see the rendezvous events and memory of a step.")


def filter_records(records, device=ALL, op_type=ALL):
    """The placement records on ``device`` with type ``op_type`` (``ALL`` matches anything)."""
    return [r for r in records if (device == ALL or r.assigned_device == device)
            and (op_type == ALL or r.op_type == op_type)]


def transfer_rows(transfers):
    """Rows ``(tensor_name, from, to, bytes, sent, requested, matched, waited)`` of transfer records.

    Times are µs since the step's first rendezvous event (a send or a request); rows keep
    the records' match order. Feeds and fetches are not transfers: they go through the step's
    call frame (``_Arg``/``_Retval``), not the rendezvous.
    """
    if not transfers:
        return []
    origin = min(min(t.send_time_s, t.recv_request_time_s) for t in transfers)

    def us(seconds):
        return format_us((seconds - origin) * 1e6)

    return [(t.tensor_name, short_device(t.src_device), short_device(t.dst_device), format_bytes(t.nbytes),
             us(t.send_time_s), us(t.recv_request_time_s), us(t.match_time_s), format_us(t.recv_wait_s * 1e6))
            for t in transfers]


def memory_rows(step_stats):
    """Rows ``(device, allocator, allocated, peak, live at the end, allocations, new buffers, reused)``, devices
    in reading order: TF's ``AllocatorMemoryUsed`` fields of the step, then what the device's allocator did
    (buffers it made, buffers it handed out again from its pools)."""
    rows = []
    for dev in sorted(step_stats.dev_stats, key=lambda d: device_sort_key(d.device)):
        for m in dev.memory:
            rows.append((_html.device_chip(dev.device), m.allocator_name, format_bytes(m.total_bytes),
                         format_bytes(m.peak_bytes), format_bytes(m.live_bytes), m.allocation_count, m.new_buffers,
                         m.reuse_hits))
    return rows


class DeviceLog(StaticPicture, widgets.VBox):
    """The device mapping, a filterable placement table, rendezvous events and memory.

    Args:
        session: a ``dfcore.Session`` that has run (or built a plan with ``partitions``).
        run_metadata: optional ``RunMetadata`` of a run with ``FULL_TRACE``.

    Raises:
        TypeError: ``session`` is not a Session, or ``run_metadata`` not a RunMetadata.

    Attributes:
        device_filter, op_type_filter: the ``Dropdown`` filters (value ``""`` = all).
        placements: ``HTML`` with the filtered table. transfers, memory: ``HTML`` tables.
    """

    def __init__(self, session, run_metadata=None, **kwargs):
        _check.expect("DeviceLog", "session", session, _check.SESSION)
        _check.expect("DeviceLog", "run_metadata", run_metadata, _check.RUN_METADATA, optional=True)
        self._records = session.placement_records()
        lines = placement_log_lines(session.device_set, self._records)
        self.mapping_lines = lines[:len(lines) - len(self._records)]
        self.devices = sorted({r.assigned_device for r in self._records}, key=device_sort_key)
        types = sorted({r.op_type for r in self._records})
        self.device_filter = widgets.Dropdown(options=[("all devices", ALL)] + [(short_device(d), d)
                                                                                for d in self.devices],
                                              value=ALL, description="device")
        self.op_type_filter = widgets.Dropdown(options=[("all op types", ALL)] + [(t, t) for t in types],
                                               value=ALL, description="op type")
        self.placements = widgets.HTML(self._placements_html())
        for control in (self.device_filter, self.op_type_filter):
            control.observe(self._on_filter, names=["value"])
        traced = _traced(run_metadata)
        self._transfers = list(traced.transfers) if traced is not None else []
        step_stats = traced.step_stats if traced is not None else None
        self.transfers = widgets.HTML(self._transfers_html(traced))
        self.memory = widgets.HTML(_html.heading("Memory per device") + (
            _html.table(["device", "allocator", "allocated", "peak", "live at end", "allocations", "new buffers",
                         "reused"], memory_rows(step_stats), numeric=(2, 3, 4, 5, 6, 7))
            if step_stats is not None else _html.note(_TRACE_HINT)))
        header = widgets.HTML(_html.heading("Device mapping") + _html.pre(self.mapping_lines))
        filters = widgets.HBox([self.device_filter, self.op_type_filter])
        super().__init__([header, widgets.HTML(_html.heading("Placement log")), filters, self.placements,
                          self.transfers, self.memory], **kwargs)

    def _on_filter(self, change):
        self.placements.value = self._placements_html()

    def _placements_html(self):
        if not self._records:
            return _html.note("Nothing placed yet: run the session (or call session.partitions) first.")
        shown = filter_records(self._records, self.device_filter.value, self.op_type_filter.value)
        rows = [(r.node_name, r.op_type, r.requested_device or "(none)", _html.device_chip(r.assigned_device),
                 r.reason, r.colocation_group or "") for r in shown]
        return (_html.note(f"{len(shown)} of {len(self._records)} nodes") + _html.table(
            ["node", "op type", "requested", "assigned", "why", "colocation group"], rows, max_height_px=320))

    def _transfers_html(self, traced):
        title = _html.heading("Rendezvous events of the step")
        if traced is None:
            return title + _html.note(_TRACE_HINT)
        if not self._transfers:
            return title + _html.note("No tensor went through the rendezvous in this step.")
        return title + _html.note("Times in µs (wall clock) since the step's first send or request.") + _html.table(
            ["tensor_name", "from", "to", "bytes", "sent", "requested", "matched", "waited"],
            transfer_rows(self._transfers), numeric=(3, 4, 5, 6, 7), max_height_px=260)

    def __repr__(self):
        return (f"<DeviceLog: {count(len(self._records), 'node')} on {count(len(self.devices), 'device')}, "
                f"{count(len(self._transfers), 'transfer')}>")


def _traced(run_metadata):
    """dfcore's step records of ``run_metadata``, or None when there is none or the run was not traced."""
    if run_metadata is None:
        return None
    try:
        return step_records(run_metadata)
    except ValueError:
        return None
