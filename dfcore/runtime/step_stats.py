"""Per-step execution statistics, with the field names of TF's ``step_stats.proto``.

Source: TF ``core/framework/step_stats.proto``, ``common_runtime/step_stats_collector.cc``
and the timeline label that ``executor.cc`` (``SetTimelineLabel``) writes.

Times are integer microseconds: ``all_start_micros`` is absolute (on whatever
clock the executor used), the ``*_rel_micros`` fields are relative to it.
``sim_start_micros``/``sim_end_micros`` are absolute times on the simulated
clock, filled in by the simulated-clock replay.

Each node's record carries its parts as a :class:`TimelineLabel` (``NodeExecStats.detail``: op, inputs,
the tensor and peer device of a transfer, the loop frame and iteration), and the timeline label, one TF
string format, is built from them (:meth:`TimelineLabel.text`, :func:`timeline_label`). dfcore's readers
(the Chrome trace, the widgets) read ``detail``; :func:`parse_timeline_label` turns a label back into its
parts only for records that come as labels alone (TF's ``StepStats`` message, as TF's ``timeline.py``
reads it, or a record built by hand). The format:

- ordinary op: ``"<node> = <OpType>(<input>, <input>, ...)"``, the inputs as in
  a NodeDef (``x`` for output 0, ``x:1``, ``^ctrl`` for control inputs);
- ``_Send``: ``"<node> = _Send(<tensor_name> @<recv_device>)"``;
- ``_Recv``: ``"<node> = _Recv(<tensor_name> @<send_device>)"``;
- (dfcore) a node run inside a loop: the label, then ``" @frame <frame_id> iter <iteration>"``
  (:func:`iteration_label`), so a timeline shows every iteration of a loop body.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from .. import errors
from ..framework import protos
from .device_set import allocator_name

_LABEL = re.compile(r"^(?P<node>.*?) = (?P<op>[^\s(]+)\((?P<body>.*)\)(?: @frame (?P<frame>\d+) iter (?P<iter>\d+))?$")


@dataclasses.dataclass(frozen=True)
class NodeExecStats:
    """How one node ran in one step (TF ``NodeExecStats``).

    ``output_bytes`` holds the size of each output in bytes (a tuple of ints; lists are
    converted). ``sim_*`` are None until the simulated clock has replayed the step. ``detail`` (dfcore's)
    is the structured form of ``timeline_label``; a record made without it takes the parts of its label
    (:func:`parse_timeline_label`; a label not of that form gives just the name and op type).
    """

    node_name: str
    op_type: str
    all_start_micros: int
    op_start_rel_micros: int
    op_end_rel_micros: int
    all_end_rel_micros: int
    thread_id: int
    output_bytes: tuple[int, ...]
    timeline_label: str
    sim_start_micros: int | None = None
    sim_end_micros: int | None = None
    detail: TimelineLabel | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "output_bytes", tuple(int(b) for b in self.output_bytes))
        if self.detail is None:
            object.__setattr__(self, "detail", _parts_of(self.timeline_label, self.node_name, self.op_type))

    @property
    def all_end_micros(self) -> int:
        """Absolute wall-clock end: ``all_start_micros + all_end_rel_micros``."""
        return self.all_start_micros + self.all_end_rel_micros


@dataclasses.dataclass(frozen=True)
class AllocatorMemoryUsed:
    """Memory one allocator of a device used during the step (TF ``AllocatorMemoryUsed``).

    TF's fields: ``total_bytes`` (bytes of the step's outputs on the device), ``peak_bytes`` (most of them
    alive at once), ``live_bytes`` (still alive when the step ended), ``allocator_bytes_in_use`` (the
    allocator's bytes in use then). dfcore's: ``allocation_count`` (outputs that took memory),
    ``new_buffers`` and ``reuse_hits`` (buffers the device's :class:`~dfcore.runtime.allocator.Allocator`
    made and took from its pools during the step), ``small_allocs`` (small allocations, below the
    allocator's ``POOL_MIN_BYTES``, that it made with ``np.empty`` and does not pool).
    """

    allocator_name: str
    total_bytes: int
    peak_bytes: int
    allocation_count: int
    live_bytes: int = 0
    allocator_bytes_in_use: int = 0
    new_buffers: int = 0
    reuse_hits: int = 0
    small_allocs: int = 0


@dataclasses.dataclass(frozen=True)
class DeviceStepStats:
    """The nodes one device ran, and its allocators' memory (TF ``DeviceStepStats``)."""

    device: str
    node_stats: list[NodeExecStats]
    memory: list[AllocatorMemoryUsed] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class StepStats:
    """All devices' stats for one step (TF ``StepStats``); JSON-ready via :meth:`to_dict`."""

    dev_stats: list[DeviceStepStats]

    def to_dict(self) -> dict[str, Any]:
        """A dict of plain lists, ints and strings (``json.dumps``-able)."""
        return {
            "dev_stats": [
                {
                    "device": dev.device,
                    "node_stats": [_node_to_dict(ns) for ns in dev.node_stats],
                    "memory": [dataclasses.asdict(m) for m in dev.memory],
                }
                for dev in self.dev_stats
            ]
        }

    def to_proto(self) -> protos.StepStats:
        """TF's ``StepStats`` message of the wall-clock times (what TensorBoard and TF's tools read).

        Each node's outputs become ``NodeOutput`` records (shape of unknown rank: TensorBoard's graph fails to
        join the stats when a ``NodeOutput`` has no shape) and one ``AllocatorMemoryUsed`` on its device's
        allocator (TensorBoard's graph colours nodes by that ``total_bytes``). The simulated-clock times and
        the per-device allocator totals have no field in TF's message and stay in this record.
        """
        proto = protos.StepStats()
        for dev in self.dev_stats:
            allocator = allocator_name(dev.device)
            dev_proto = proto.dev_stats.add(device=dev.device)
            for ns in dev.node_stats:
                node = dev_proto.node_stats.add(
                    node_name=ns.node_name, all_start_micros=ns.all_start_micros,
                    op_start_rel_micros=ns.op_start_rel_micros, op_end_rel_micros=ns.op_end_rel_micros,
                    all_end_rel_micros=ns.all_end_rel_micros, timeline_label=ns.timeline_label,
                    thread_id=ns.thread_id % 2 ** 32)  # uint32 in TF; dfcore keeps Python thread idents
                for slot, size in enumerate(ns.output_bytes):
                    output = node.output.add(slot=slot)
                    output.tensor_description.shape.unknown_rank = True  # not recorded; TensorBoard needs a shape
                    output.tensor_description.allocation_description.requested_bytes = size
                    output.tensor_description.allocation_description.allocated_bytes = size
                    output.tensor_description.allocation_description.allocator_name = allocator
                if ns.output_bytes:
                    node.memory.add(allocator_name=allocator, total_bytes=sum(ns.output_bytes),
                                    peak_bytes=max(ns.output_bytes))
        return proto

    @classmethod
    def from_proto(cls, proto: protos.StepStats) -> StepStats:
        """A StepStats of TF's ``StepStats`` message (wall clock only; no simulated times): the op type and
        the other parts of ``detail`` come from each node's timeline label (as TF's ``timeline.py`` reads
        them), ``output_bytes`` from its outputs' requested bytes."""
        devices: list[DeviceStepStats] = []
        for dev in proto.dev_stats:
            nodes: list[NodeExecStats] = []
            for ns in dev.node_stats:
                detail = _parts_of(ns.timeline_label, ns.node_name, "")  # TF's message has only the label
                sizes = {o.slot: o.tensor_description.allocation_description.requested_bytes for o in ns.output}
                nodes.append(NodeExecStats(
                    node_name=ns.node_name, op_type=detail.op_type, detail=detail,
                    all_start_micros=ns.all_start_micros, op_start_rel_micros=ns.op_start_rel_micros,
                    op_end_rel_micros=ns.op_end_rel_micros, all_end_rel_micros=ns.all_end_rel_micros,
                    thread_id=ns.thread_id, output_bytes=tuple(sizes.get(i, 0) for i in range(len(sizes))),
                    timeline_label=ns.timeline_label))
            devices.append(DeviceStepStats(device=dev.device, node_stats=nodes))
        return cls(dev_stats=devices)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepStats:
        """Inverse of :meth:`to_dict`.

        Raises:
            InvalidArgumentError: if a field is missing or unknown, naming it.
        """
        try:
            return cls(
                dev_stats=[
                    DeviceStepStats(
                        device=dev["device"],
                        node_stats=[_node_from_dict(ns) for ns in dev["node_stats"]],
                        memory=[AllocatorMemoryUsed(**m) for m in dev.get("memory", [])],
                    )
                    for dev in data["dev_stats"]
                ]
            )
        except (KeyError, TypeError) as error:
            raise errors.InvalidArgumentError(None, None, f"Malformed StepStats dict: {error}") from error


def _node_to_dict(ns: NodeExecStats) -> dict[str, Any]:
    out = dataclasses.asdict(ns)
    out["output_bytes"] = list(ns.output_bytes)
    return out


def _node_from_dict(data: Mapping[str, Any]) -> NodeExecStats:
    fields = dict(data)
    detail = fields.pop("detail", None)
    if detail is not None:
        frame_iter = detail.get("frame_iter")
        fields["detail"] = TimelineLabel(**{**detail, "inputs": tuple(detail.get("inputs", ())),
                                            "frame_iter": tuple(frame_iter) if frame_iter is not None else None})
    return NodeExecStats(**fields)


class StepStatsCollector:
    """Gathers node and memory stats from many executor threads (TF ``StepStatsCollector``).

    Thread-safe. :meth:`finalize` returns devices sorted by name, each device's nodes
    ordered by ``(all_start_micros, node_name)`` and its memory by allocator name, so
    the result does not depend on thread timing.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, list[NodeExecStats]] = {}
        self._memory: dict[str, dict[str, AllocatorMemoryUsed]] = {}

    def record(self, device: str, node_stats: NodeExecStats) -> None:
        """Add one :class:`NodeExecStats` for ``device``."""
        with self._lock:
            self._nodes.setdefault(device, []).append(node_stats)

    def record_memory(self, device: str, memory: AllocatorMemoryUsed) -> None:
        """Set the :class:`AllocatorMemoryUsed` of one allocator of ``device`` (the last record wins)."""
        with self._lock:
            self._memory.setdefault(device, {})[memory.allocator_name] = memory

    def finalize(self) -> StepStats:
        """A :class:`StepStats` of everything recorded so far (the collector stays usable)."""
        with self._lock:
            devices = sorted(set(self._nodes) | set(self._memory))
            return StepStats(
                dev_stats=[
                    DeviceStepStats(
                        device=device,
                        node_stats=sorted(
                            self._nodes.get(device, []), key=lambda ns: (ns.all_start_micros, ns.node_name)
                        ),
                        memory=[m for _, m in sorted(self._memory.get(device, {}).items())],
                    )
                    for device in devices
                ]
            )


@dataclasses.dataclass(frozen=True)
class TimelineLabel:
    """The parts of a node's timeline label: the node, its op type, its NodeDef-style ``inputs``;
    ``tensor_name``/``peer_device`` only for transfers (a ``_Send``'s peer is the recv device, a ``_Recv``'s
    the send device); ``frame_iter`` = ``(frame_id, iteration)`` for a run inside a loop, else None."""

    node_name: str
    op_type: str
    inputs: tuple[str, ...] = ()
    tensor_name: str | None = None
    peer_device: str | None = None
    frame_iter: tuple[int, int] | None = None

    @property
    def is_transfer(self) -> bool:
        """True for ``_Send``/``_Recv`` labels (they name a tensor and the peer device)."""
        return self.tensor_name is not None

    def text(self) -> str:
        """The timeline label these parts make (:func:`timeline_label`, then :func:`iteration_label`)."""
        label = timeline_label(self.node_name, self.op_type, self.inputs, self.tensor_name, self.peer_device)
        return iteration_label(label, self.frame_iter)


def loop_iteration(frame_iter: tuple[int, int] | None) -> tuple[int, int] | None:
    """``frame_iter = (frame_id, iter)`` of a run inside a loop frame; None for the root frame (``frame_id``
    0) or None."""
    return None if frame_iter is None or frame_iter[0] == 0 else (frame_iter[0], frame_iter[1])


def iteration_label(label: str, frame_iter: tuple[int, int] | None) -> str:
    """``label`` of a node run in iteration ``frame_iter = (frame_id, iter)`` of a loop frame; unchanged
    for the root frame (``frame_id`` 0) or None."""
    frame_iter = loop_iteration(frame_iter)
    return label if frame_iter is None else f"{label} @frame {frame_iter[0]} iter {frame_iter[1]}"


def instance_name(node_name: str, frame_iter: tuple[int, int] | None) -> str:
    """The name of one execution of a node: the node's name, with ``@<frame_id>:<iter>`` inside a loop
    (the simulated clock's task name for that iteration)."""
    frame_iter = loop_iteration(frame_iter)
    return node_name if frame_iter is None else f"{node_name}@{frame_iter[0]}:{frame_iter[1]}"


def timeline_label(node_name: str, op_type: str, inputs: Sequence[str] = (), tensor_name: str | None = None,
                   peer_device: str | None = None) -> str:
    """Build a node's timeline label (TF ``SetTimelineLabel`` in ``executor.cc``).

    Args:
        node_name, op_type: the node's name and TF op type.
        inputs: NodeDef-style input names, for ordinary ops.
        tensor_name, peer_device: for ``_Send`` (peer = recv device) and ``_Recv``
            (peer = send device); give both or neither, and then no inputs.

    Raises:
        InvalidArgumentError: on an inconsistent combination.
    """
    if (tensor_name is None) != (peer_device is None) or (tensor_name is not None and inputs):
        raise errors.InvalidArgumentError(
            None, None, f"timeline_label for {node_name}: give inputs, or tensor_name and peer_device, not both"
        )
    body = f"{tensor_name} @{peer_device}" if tensor_name is not None else ", ".join(inputs)
    return f"{node_name} = {op_type}({body})"


def parse_timeline_label(label: str) -> TimelineLabel:
    """Split a label built by :func:`timeline_label` into a :class:`TimelineLabel`.

    Raises:
        InvalidArgumentError: if ``label`` is not of the form ``<node> = <Op>(...)``.
    """
    match = _LABEL.match(label)
    if match is None:
        raise errors.InvalidArgumentError(None, None, f"Invalid timeline label: {label!r}")
    node, op, body = match.group("node", "op", "body")
    frame_iter = (int(match.group("frame")), int(match.group("iter"))) if match.group("frame") else None
    tensor_name, at, peer = body.partition(" @")
    if at:
        return TimelineLabel(node, op, (), tensor_name, peer, frame_iter)
    return TimelineLabel(node, op, tuple(body.split(", ")) if body else (), frame_iter=frame_iter)


def _parts_of(label: str, node_name: str, op_type: str) -> TimelineLabel:
    try:
        return parse_timeline_label(label)
    except errors.InvalidArgumentError:  # a label from another tool: only the name and op type are known
        return TimelineLabel(node_name, op_type)
