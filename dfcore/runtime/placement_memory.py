"""Device memory as a placement constraint: what each device holds as nodes are placed on it, and the OOM error.

Source: the memory model of :mod:`dfcore.runtime.placement_costs` (a node holds its outputs for the whole
step; a tensor received from another device is a copy held on the receiver, once per device) and TF's OOM
wording (``op_kernel.cc``, :func:`~dfcore.runtime.kernel_errors.oom_message`). A device's limit is its
hardware profile's ``memory_bytes`` (Tesla K20m 5 GB, V100 16 or 32 GB, H100 80 GB) unless a limit is given.

Invariant: after every :meth:`MemoryLedger.commit`, each device's ``used`` is at most its limit.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable, Mapping, Sequence

from .. import errors
from ..framework import dtypes
from ..framework.device import DeviceSpec
from ..framework.operation import Operation
from ..framework.tensor import Tensor
from .kernel_errors import oom_message
from .placement_costs import CostTable


def memory_limits(costs: CostTable, devices: Iterable[str], limits: Mapping[str, int] | None = None) -> dict[str, int]:
    """Device → memory limit in bytes: ``limits[name]`` where given, else its profile's ``memory_bytes``. A
    name in ``limits`` may be partial (``"/gpu:1"``) but must match exactly one of ``devices``.

    Raises:
        InvalidArgumentError: a limit that is not an integer >= 0, or a name that is not a device name.
        ValueError: a name matching no device or several.
    """
    devices = list(devices)
    given = {}
    for name, value in check_memory_limits(limits).items():
        spec = DeviceSpec.from_string(name)
        matches = [d for d in devices if spec.matches(DeviceSpec.from_string(d))]
        if len(matches) != 1:
            raise ValueError(f"memory limit given for '{name}', which matches {len(matches)} devices of the "
                             f"session ({', '.join(devices)}); name exactly one")
        given[matches[0]] = value
    return {d: given.get(d, costs.machine.device(d).memory_bytes) for d in devices}


def check_memory_limits(limits: Mapping[str, int] | None) -> dict[str, int]:
    """``limits`` (device name -> bytes, or None) as a dict of ints, checked.

    Raises:
        InvalidArgumentError: ``limits`` is not a mapping, a name is not a string, or a limit is not an
            integer >= 0 (``bool`` is not one).
    """
    if limits is None:
        return {}
    if not isinstance(limits, Mapping):
        raise errors.InvalidArgumentError(None, None, "memory_limit_bytes must be a mapping of device name to "
                                          f"bytes, got {type(limits).__name__}")
    checked: dict[str, int] = {}
    for name, value in limits.items():
        if not isinstance(name, str):
            raise errors.InvalidArgumentError(None, None, f"memory_limit_bytes: a device name must be a string, "
                                              f"got {name!r}")
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise errors.InvalidArgumentError(None, None, f"memory_limit_bytes['{name}'] must be an integer >= 0 "
                                              f"(bytes), got {value!r}")
        checked[name] = int(value)
    return checked


@dataclasses.dataclass(frozen=True)
class Pending:
    """The ops a placement decision holds memory for, their own bytes, and their inputs with sizes."""

    ops: list[Operation]
    own_bytes: int
    inputs: list[tuple[Tensor, int]]


class MemoryLedger:
    """Bytes held per device while a placer assigns nodes in order.

    Args:
        costs: the :class:`~dfcore.runtime.placement_costs.CostTable` giving tensor sizes.
        limits: device → limit in bytes (:func:`memory_limits`).
    """

    def __init__(self, costs: CostTable, limits: Mapping[str, int]) -> None:
        self.costs = costs
        self.limits = dict(limits)
        self.used = dict.fromkeys(self.limits, 0)
        self._reserved: set[Operation] = set()
        self._held: set[tuple[Tensor, str]] = set()

    def free(self, device: str) -> int:
        """Bytes still free on ``device``."""
        return self.limits[device] - self.used[device]

    def prepare(self, op: Operation, members: Sequence[Operation]) -> Pending:
        """What placing ``op`` will hold wherever it goes: the outputs of ``op`` and of the other not yet
        reserved ``members`` of its colocation group (they will follow it), and their inputs with sizes."""
        ops = [op] if len(members) == 1 else [m for m in dict.fromkeys([op, *members]) if m not in self._reserved]
        if op in self._reserved:
            ops = [m for m in ops if m is not op]
        own = sum(self.costs.memory_bytes(m) for m in ops)
        inputs = [(t, self.tensor_bytes(t)) for t in dict.fromkeys(t for m in ops for t in m.inputs)]
        return Pending(ops, own, inputs)

    def need_on(self, pending: Pending, device: str, device_of: Mapping[Operation, str]) -> int:
        """Bytes ``pending`` adds on ``device``: its own, and the inputs from nodes already placed on other
        devices that ``device`` does not hold yet."""
        return pending.own_bytes + sum(n for t, n in self._received(pending, device, device_of))

    def commit(self, pending: Pending, device: str, device_of: Mapping[Operation, str]) -> None:
        """Hold what :meth:`need_on` counts on ``device``."""
        received = self._received(pending, device, device_of)
        self.used[device] += pending.own_bytes + sum(n for _, n in received)
        self._held.update((t, device) for t, _ in received)
        self._reserved.update(pending.ops)

    def _received(self, pending, device, device_of):
        return [(t, n) for t, n in pending.inputs
                if device_of.get(t.op, device) != device and (t, device) not in self._held]

    def tensor_bytes(self, tensor: Tensor) -> int:
        return self.costs.output_bytes(tensor.op)[tensor.value_index]

    def oom_error(self, op: Operation, members: Sequence[Operation], needs: Mapping[str, int],
                  all_ops: Iterable[Operation]) -> errors.ResourceExhaustedError:
        """The error for ``op`` (with its colocation group ``members``) fitting none of its devices, where it
        would need ``needs[device]`` bytes.

        TF's OOM sentence names the largest tensor of the node (or of its group) on the first device; then
        why: each device's need and free memory, the colocation group when the group does not fit, and the
        largest tensor of the graph when it alone exceeds every device's limit.
        """
        tensor = _largest([t for m in members for t in m.outputs] or list(op.inputs), self)
        devices = list(needs)
        head = (oom_message(tensor.shape, dtypes.tf_type_name(tensor.dtype), devices[0]) if tensor is not None
                else f"OOM when placing a node on {devices[0]}")
        free = "; ".join(f"{d}: needs {n}, {self.free(d)} of {self.limits[d]} bytes free" for d, n in needs.items())
        text = f"{head}: node '{op.name}' ({op.type}) fits on no device it may go to ({free})."
        if len(members) > 1:
            text += (f" Its colocation group (loc:@{members[0].name}: {', '.join(m.name for m in members)}) must "
                     "share one device, so the group's memory counts on one device.")
        largest = _largest([t for o in all_ops for t in o.outputs], self)
        if largest is not None and self.tensor_bytes(largest) > max(self.limits[d] for d in devices):
            text += (f" The largest tensor of the graph, '{largest.name}' with shape{largest.shape.tf_str()} "
                     f"({self.tensor_bytes(largest)} bytes), exceeds the memory of every device it may go to.")
        text += " Give devices more memory (memory_limit_bytes), add devices, or make the model smaller."
        return errors.ResourceExhaustedError(None, op, text)


def _largest(tensors, ledger):
    return max(tensors, key=ledger.tensor_bytes, default=None)
