"""Assign every op of one run to a device, as TF's heuristic ``Placer``.

Source: ``tensorflow/core/common_runtime/placer.cc`` (TF 1.x ``ColocationGraph``
and ``Placer::Run``). Pure: the Graph is read, never changed.

Rules, in order:
1. an op with an ``assigned_device`` keeps it, and pins its colocation group;
2. colocation groups: ops sharing a ``_class`` entry ``loc:@name`` (every op is in
   the group of its own name), then each op with a reference input
   (:func:`registry.ref_inputs`) joins the producer of the reference; a group's
   requested devices are merged field by field and its supported device types
   intersected; once one member is placed the others follow it;
3. heuristic B: a metadata op (``Shape``, ``Size``, ``Rank``) goes with its input;
4. heuristic A: a generator (no data input, one non-reference output) is placed in a
   second pass, with its consumers if they all sit on one device;
5. otherwise the first device, by priority (GPU before CPU), that matches the
   group's request and supports every member's op type;
6. ``allow_soft_placement``: when nothing matches, drop the device type and index
   of the request and try again.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping, Sequence

from .. import errors
from ..framework import registry
from ..framework.device import DeviceSpec
from ..framework.operation import Operation
from .colocation import EMPTY_SPEC, ColocationGroup, colocation_groups, group_name
from .device_set import DeviceSet
from .placement_log import parse_placement_log_line, placement_log_line, placement_log_lines  # noqa: F401 (public here)

DEFAULT_DEVICE_TYPES = ("GPU", "CPU")
#: Op types with only a CPU kernel in TF 1.x (the summary ops: ``core/kernels/summary_*op.cc``, which is
#: why the CIFAR-10 multi-GPU tutorial asks for ``allow_soft_placement``).
CPU_ONLY_OP_TYPES = ("AsString", "DecodeCSV", "HistogramSummary", "ImageSummary", "MergeSummary", "Print", "PrintV2",
                     "PyFunc", "PyFuncStateless", "Qr", "RandomShuffle", "ReduceJoin", "ScalarSummary", "StringJoin",
                     "StringSplit", "StringToNumber", "TensorSummaryV2")
#: Ops that read only the shape of their input (TF's ``NC_METADATA`` node class).
METADATA_OP_TYPES = frozenset({"Shape", "Size", "Rank"})

_DEVICE_TYPES: dict[str, tuple[str, ...]] = {}

REASON_ASSIGNED = "assigned"
REASON_REQUESTED = "requested"
REASON_COLOCATION = "colocation"
REASON_GENERATOR = "heuristic A: generator with its consumers"
REASON_METADATA = "heuristic B: metadata op with its input"
REASON_SOFT = "soft placement"
REASON_DEFAULT = "default: highest-priority device"


def register_device_types(op_type: str, *device_types: str) -> None:
    """Declare the device types that have a kernel for ``op_type`` (default: GPU and CPU)."""
    _DEVICE_TYPES[op_type] = tuple(device_types)


def supported_device_types(op_type: str, device_set: DeviceSet | None = None) -> tuple[str, ...]:
    """The device types with a kernel for ``op_type``; with ``device_set``, less the types whose devices' array
    backend lacks it (a numpy-only kernel on an ``array_api_strict`` or cupy GPU, :mod:`dfcore.backends`)."""
    types = _DEVICE_TYPES.get(op_type, DEFAULT_DEVICE_TYPES)
    if device_set is None:
        return types
    return tuple(t for t in types if not any(registry.lacks_kernel_on(op_type, b)
                                             for b in device_set.backends_of_type(t)))


for _op_type in CPU_ONLY_OP_TYPES:
    register_device_types(_op_type, "CPU")


@dataclasses.dataclass(frozen=True)
class PlacementRecord:
    """Why one op went where it went.

    ``colocation_group`` is ``loc:@<first member>`` for a group of two or more ops
    of this run, else None; ``reason`` is one of the ``REASON_*`` strings.
    """

    node_name: str
    op_type: str
    requested_device: str
    assigned_device: str
    colocation_group: str | None
    reason: str


class Placement:
    """The result of :func:`place`: op → full device name, plus a record per op (op-id order).

    ``records``: the :class:`PlacementRecord` per op, or a function that makes them, called when they are
    first read (most runs never read them)."""

    def __init__(self, devices: Mapping[Operation, str],
                 records: Iterable[PlacementRecord] | Callable[[], Iterable[PlacementRecord]]) -> None:
        self._devices = dict(devices)
        self._make_records = records if callable(records) else None
        self._records: tuple[PlacementRecord, ...] = () if callable(records) else tuple(records)

    def __getitem__(self, op: Operation) -> str:
        return self._devices[op]

    def __contains__(self, op):
        return op in self._devices

    def __len__(self) -> int:
        return len(self._devices)

    def __iter__(self) -> Iterator[Operation]:
        return iter(self._devices)

    def items(self) -> ItemsView[Operation, str]:
        return self._devices.items()

    def records(self) -> list[PlacementRecord]:
        """One :class:`PlacementRecord` per op, in op-id order."""
        if self._make_records is not None:
            self._records, self._make_records = tuple(self._make_records()), None
        return list(self._records)

    def devices_used(self) -> list[str]:
        """The distinct devices of this placement, in order of first use."""
        return list(dict.fromkeys(self._devices[op] for op in sorted(self._devices, key=_op_id)))


def _op_id(op):
    return op._id


def place(ops: Iterable[Operation], device_set: DeviceSet, allow_soft_placement: bool = False) -> Placement:
    """Place ``ops`` (the pruned ops of one run) on the devices of ``device_set``.

    Returns:
        a :class:`Placement`.
    Raises:
        InvalidArgumentError: an impossible explicit request (TF's ``Cannot assign a
            device for operation 'X': ...`` with ``Colocation Debug Info`` for a group),
            conflicting requests in one colocation group (``Cannot colocate nodes``),
            or an op type with no kernel for any device of the set.
    """
    ops, groups = hard_constraints(ops, device_set, allow_soft_placement)
    chosen, reasons, second_pass = {}, {}, []
    for op in ops:
        if op.assigned_device:
            chosen[op], reasons[op] = groups[op].device, REASON_ASSIGNED
        elif _is_generator(op):
            second_pass.append(op)
        else:
            hints = [op.inputs[0].op] if op.type in METADATA_OP_TYPES and op.inputs else []
            _assign(op, groups[op], device_set, allow_soft_placement, chosen, reasons, hints, REASON_METADATA)
    consumers = _consumers(ops, second_pass)
    for op in second_pass:
        _assign(op, groups[op], device_set, allow_soft_placement, chosen, reasons, consumers[op], REASON_GENERATOR)
    group_names = {op: group_name(group) for op, group in groups.items() if len(group.members) > 1}

    def records() -> list[PlacementRecord]:
        return [PlacementRecord(op.name, op.type, op.device, chosen[op], group_names.get(op), reasons[op])
                for op in ops]

    return Placement(chosen, records)


def _consumers(ops: Sequence[Operation], producers: Sequence[Operation]) -> dict[Operation, list[Operation]]:
    """``{producer: the ops with a data or control input from it, in op order}`` for ``producers`` only."""
    consumers: dict[Operation, list[Operation]] = {op: [] for op in producers}
    if consumers:
        for op in ops:
            read = [t.op for t in op.inputs if t.op in consumers] + [c for c in op.control_inputs if c in consumers]
            for producer in dict.fromkeys(read):
                consumers[producer].append(op)
    return consumers


def hard_constraints(ops: Iterable[Operation], device_set: DeviceSet,
                     allow_soft_placement: bool = False) -> tuple[list[Operation], dict[Operation, ColocationGroup]]:
    """Rules 1-2 (and 6's relaxed request): ``ops`` in op-id order and each op's :class:`ColocationGroup`, its
    request merged, its supported types intersected, pinned to an assigned device where a member has one.

    Raises:
        InvalidArgumentError: as :func:`place` (conflicting requests, no kernel, unknown assigned device).
    """
    ops = sorted(set(ops), key=_op_id)
    groups = colocation_groups(ops)
    available = device_set.device_types()
    kernel_types: dict[str, frozenset[str]] = {}  # op type -> its supported types among the available ones
    for group in dict.fromkeys(groups.values()):
        _merge_group(group, device_set, allow_soft_placement, available, kernel_types)
    for op in ops:
        if op.assigned_device:
            _pin_assigned(op, groups[op], device_set)
    return ops, groups


def feasible_devices(op: Operation, group: ColocationGroup, device_set: DeviceSet, soft: bool) -> list[str]:
    """The full names of the devices ``op``'s group may go to, in priority order (TF's ``GetDevicesForNode``).

    Raises:
        InvalidArgumentError: no device fits (TF's three ``Cannot assign a device`` messages).
    """
    return _candidates(group, op, device_set, soft)


def _is_generator(op):
    """TF's ``IsGeneratorNode``: no data inputs and one non-reference output."""
    return not op.inputs and len(op.outputs) == 1 and not op.outputs[0].dtype.is_ref


def _member_spec(op):
    return _parsed(op.assigned_device or op.device or "")


@functools.lru_cache(maxsize=4096)
def _parsed(device):
    """``device`` parsed once per string (a big graph names a few devices many times; the placer only reads
    the spec)."""
    return DeviceSpec.from_string(device)


def _merge_group(group, device_set, soft, available, kernel_types):
    """Merge the members' requests (``MergeDevNames``) and supported types of one group (``available``: the
    set's device types; ``kernel_types``: a cache of each op type's supported types among them).

    Ops that take a reference input are merged last and yield on conflict: the
    reference edge puts them with the variable (placer.cc step 2).
    """
    everywhere = types = frozenset(available)
    for op in group.members:
        own = kernel_types.get(op.type)
        if own is None:
            own = kernel_types[op.type] = frozenset(supported_device_types(op.type, device_set)) & everywhere
        if not own:
            raise _no_kernel_error(op, device_set)
        types &= own
        if not types:
            raise errors.InvalidArgumentError(
                None, op, f"Cannot colocate nodes '{op.name}' and '{group.members[0].name}' because no device "
                f"type supports both of those nodes and the other nodes colocated with them."
                f"{debug_info(group.members, device_set)}")
    shared = group._shared
    group.types = shared.get(types)
    if group.types is None:  # one list per set of types (groups only read it)
        group.types = shared[types] = [t for t in available if t in types]
    readers = group.ref_readers
    merged = [m for m in group.members if m not in readers] + readers if readers else group.members
    first, spec = merged[0], _member_spec(merged[0])
    group.spec = spec  # merged into an empty request: the first member's own
    if len(merged) > 1:  # which member set each field: named when a later one conflicts
        group.origin = {field: first for field, _ in _FIELD_PLURALS if getattr(spec, field) is not None}
        for op in merged[1:]:
            _merge_spec(group, op, soft, yield_on_conflict=op in readers)


_FIELD_PLURALS = (("job", "jobs"), ("replica", "replicas"), ("task", "tasks"), ("device_type", "types"),
                  ("device_index", "ids"))


def _merge_spec(group, op, soft, yield_on_conflict):
    spec = _member_spec(op)
    for field, plural in _FIELD_PLURALS:
        value, current = getattr(spec, field), getattr(group.spec, field)
        if value is None or value == current:
            continue
        if current is None:
            group.spec = group.spec.replace(**{field: value})
            group.origin[field] = op
        elif yield_on_conflict:
            continue
        elif soft and field in ("device_type", "device_index"):
            cleared = {"device_index": None, "device_type": None} if field == "device_type" else {field: None}
            group.spec = group.spec.replace(**cleared)
            group.soft = True
        else:
            first = group.origin[field]
            raise errors.InvalidArgumentError(
                None, op, f"Cannot colocate nodes '{first.name}' and '{op.name}': Cannot merge devices with "
                f"incompatible {plural}: '{_member_spec(first).to_string()}' and '{spec.to_string()}'")


def _pin_assigned(op, group, device_set):
    name = DeviceSpec.from_string(op.assigned_device).to_string()
    if name not in device_set:
        raise errors.InvalidArgumentError(None, op, f"Assigned device '{name}' does not match any device")
    if group.device is not None and group.device != name:
        raise errors.InvalidArgumentError(
            None, op, f"Cannot colocate nodes '{group.members[0].name}' and '{op.name}': they are assigned to "
            f"different devices '{group.device}' and '{name}'")
    group.device = name


def _candidates(group, op, device_set, soft):
    """TF's ``GetDevicesForNode``: the group's feasible devices in priority order."""
    if group.candidates is None:
        key = (_spec_key(group.spec), id(group.types), soft)  # a group's types list is shared, see _merge_group
        known = group._shared.get(key)
        if known is None:
            found, relaxed_used = [d.name for d in device_set.find(group.spec) if d.device_type in group.types], False
            if not found and soft:
                relaxed = group.spec.replace(device_type=None, device_index=None)
                found = [d.name for d in device_set.find(relaxed) if d.device_type in group.types]
                relaxed_used = bool(found)
            if not found:
                raise _unsatisfiable_error(op, group, device_set)
            known = group._shared[key] = (found, relaxed_used)
        group.soft = group.soft or known[1]
        group.candidates = list(known[0])
    return group.candidates


def _spec_key(spec):
    return spec.job, spec.replica, spec.task, spec.device_type, spec.device_index


def _assign(op, group, device_set, soft, chosen, reasons, neighbours, heuristic):
    """Choose a device for ``op``: its group's, a heuristic's, or the first candidate."""
    if group.device is not None:
        chosen[op], reasons[op] = group.device, REASON_COLOCATION
        return
    candidates = _candidates(group, op, device_set, soft)
    constrained = _spec_key(group.spec) != _EMPTY_KEY  # some field requested
    neighbour_devices = {chosen.get(n) for n in neighbours}
    if group.soft:
        reason = REASON_SOFT
    elif constrained:
        reason = REASON_REQUESTED if op.device else REASON_COLOCATION
    else:
        reason = REASON_DEFAULT
    device = candidates[0]
    if len(neighbour_devices) == 1 and None not in neighbour_devices:
        hinted = next(iter(neighbour_devices))
        if hinted in candidates and (len(candidates) > 1 or not constrained):
            device, reason = hinted, heuristic
    group.device = chosen[op] = device
    reasons[op] = reason


_EMPTY_KEY = _spec_key(EMPTY_SPEC)


def debug_info(members: Sequence[Operation], device_set: DeviceSet) -> str:
    """TF's ``Colocation Debug Info`` text for a group of two or more ops, else ''."""
    if len(members) < 2:
        return ""
    available = device_set.device_types()
    by_type = {op.type: "".join(f"{t} " for t in available if t in supported_device_types(op.type, device_set))
               for op in members}
    lines = ["", "Colocation Debug Info:", "Colocation group had the following types and devices: "]
    lines += [f"{op_type}: {types}" for op_type, types in sorted(by_type.items())]
    lines += ["", "Colocation members and user-requested devices:"]
    lines += [f"  {op.name} ({op.type}) {op.device}" for op in members]
    return "\n".join(lines) + "\n"


def _registered_kernels(op_type, device_set):
    return "".join(f"  device='{t}'\n" for t in supported_device_types(op_type, device_set))


def _no_kernel_error(op, device_set):
    return errors.InvalidArgumentError(
        None, op, f"No OpKernel was registered to support Op '{op.type}' with these attrs.  Registered devices: "
        f"[{','.join(sorted(device_set.device_types()))}], Registered kernels:\n"
        f"{_registered_kernels(op.type, device_set)}")


def _unsatisfiable_error(op, group, device_set):
    """The three messages of TF's ``GetDevicesForNode`` when no device fits."""
    requested = op.device
    info = debug_info(group.members, device_set)
    own = DeviceSpec.from_string(requested)
    if requested and own == group.spec:
        if not device_set.find(own):
            names = ", ".join(sorted(device_set.names()))
            message = (f"Operation was explicitly assigned to {requested} but available devices are [ {names} ]. "
                       f"Make sure the device specification refers to a valid device.{info}")
        elif own.device_type is not None:
            message = (f"Could not satisfy explicit device specification '{requested}' because no supported kernel "
                       f"for {own.device_type} devices is available.{info}\nRegistered kernels:\n"
                       f"{_registered_kernels(op.type, device_set)}")
        else:
            message = f"Could not satisfy explicit device specification '{requested}'{info}"
    else:
        message = (f"Could not satisfy explicit device specification '{requested}' because the node was colocated "
                   f"with a group of nodes that required incompatible device '{group.spec.to_string()}'{info}")
    return errors.InvalidArgumentError(None, op, f"Cannot assign a device for operation '{op.name}': {message}")
