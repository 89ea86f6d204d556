"""Device names: ``/job:<j>/replica:<r>/task:<t>/device:<TYPE>:<i>``.

Source: ``tensorflow/python/framework/device_spec.py`` and
``tensorflow/core/util/device_name_utils.cc``. One function pair builds and
parses the string form (:meth:`DeviceSpec.from_string` / :meth:`DeviceSpec.to_string`).
Legacy forms ``/cpu:0``, ``/gpu:1``, ``/GPU:1`` and partial specs are accepted.
"""

import re
from typing import Any

_FIELDS = ("job", "replica", "task", "device_type", "device_index")
_LEGACY = re.compile(r"^(cpu|gpu|CPU|GPU|tpu|TPU):(\d+|\*)$")
_DEVICE_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class DeviceSpec:
    """A (possibly partial) device specification; unset fields are None.

    Raises:
        ValueError: from :meth:`from_string` on a malformed string, naming the string.
    """

    __slots__ = _FIELDS

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self.job = job
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = None if device_type is None else _normalize_type(device_type)
        self.device_index = None if device_index is None else int(device_index)

    @classmethod
    def from_string(cls, spec):
        """Parse a device string; the empty string gives an empty spec."""
        if isinstance(spec, DeviceSpec):
            return spec
        if spec is None:
            return cls()
        if not isinstance(spec, str):
            raise TypeError(f"Device spec must be a string or DeviceSpec, got {type(spec).__name__}")
        fields: dict[str, Any] = {}  # DeviceSpec's keyword arguments
        for part in (p for p in spec.split("/") if p):
            key, sep, value = part.partition(":")
            legacy = _LEGACY.match(part)
            if key in ("job", "replica", "task") and value == "*":
                continue
            if key == "job" and sep and value:
                fields["job"] = value
            elif key == "replica" and sep and value.isdigit():
                fields["replica"] = int(value)
            elif key == "task" and sep and value.isdigit():
                fields["task"] = int(value)
            elif key == "device" and sep and value:
                dev_type, _, index = value.partition(":")
                if not (_DEVICE_TYPE.match(dev_type) or dev_type == "*") or (
                        index and not (index.isdigit() or index == "*")):
                    raise _malformed(spec)
                if dev_type != "*":
                    fields["device_type"] = dev_type
                if index and index != "*":
                    fields["device_index"] = int(index)
            elif legacy or (sep and _DEVICE_TYPE.match(key) and (value.isdigit() or value == "*")):
                fields["device_type"] = key
                if value != "*":
                    fields["device_index"] = int(value)
            elif not sep and _DEVICE_TYPE.match(part) and part.upper() in ("CPU", "GPU", "TPU"):
                fields["device_type"] = part
            else:
                raise _malformed(spec)
        return cls(**fields)

    def to_string(self):
        """The canonical string of the fields that are set (partial specs stay partial)."""
        out = []
        if self.job is not None:
            out.append(f"/job:{self.job}")
        if self.replica is not None:
            out.append(f"/replica:{self.replica}")
        if self.task is not None:
            out.append(f"/task:{self.task}")
        if self.device_type is not None:
            index = "*" if self.device_index is None else str(self.device_index)
            out.append(f"/device:{self.device_type}:{index}")
        elif self.device_index is not None:
            out.append(f"/device:*:{self.device_index}")
        return "".join(out)

    def make_merged_spec(self, dev):
        """A new spec: this one's fields overridden by the fields ``dev`` sets."""
        dev = DeviceSpec.from_string(dev)
        merged = self.copy()
        for name in _FIELDS:
            value = getattr(dev, name)
            if value is not None:
                setattr(merged, name, value)
        return merged

    def merge_from(self, dev):
        """In place: take every field that ``dev`` sets (TF1's mutable merge)."""
        merged = self.make_merged_spec(dev)
        for name in _FIELDS:
            setattr(self, name, getattr(merged, name))

    def replace(self, **kwargs):
        values = {name: getattr(self, name) for name in _FIELDS}
        values.update(kwargs)
        return DeviceSpec(**values)

    def copy(self):
        return DeviceSpec(**{name: getattr(self, name) for name in _FIELDS})

    def is_fully_specified(self):
        return all(getattr(self, name) is not None for name in _FIELDS)

    def matches(self, other):
        """True if every field set in this spec equals the same field of ``other``."""
        other = DeviceSpec.from_string(other)
        return all(getattr(self, n) is None or getattr(self, n) == getattr(other, n) for n in _FIELDS)

    def __eq__(self, other):
        if not isinstance(other, (DeviceSpec, str)):
            return NotImplemented
        return self.to_string() == DeviceSpec.from_string(other).to_string()

    def __hash__(self):
        return hash(self.to_string())

    def __repr__(self):
        return f"DeviceSpec({self.to_string()!r})"


def _normalize_type(device_type):
    upper = device_type.upper()
    return upper if upper in ("CPU", "GPU", "TPU") else device_type


def _malformed(spec):
    return ValueError(
        f"Unknown attribute: '{spec}' in '{spec}': device specification must look like "
        "/job:<name>/replica:<r>/task:<t>/device:<TYPE>:<i> (or /cpu:0, /gpu:1)"
    )


def canonical_name(spec):
    """The canonical string of a spec or string: ``/gpu:1`` → ``/device:GPU:1``."""
    return DeviceSpec.from_string(spec).to_string()


def merge_device(spec):
    """A device function for ``with device(spec)``: merge ``spec`` onto the op's device.

    Fields the op already requests keep priority over the outer scope (TF's
    ``MergeDevice``: the innermost scope wins field by field).
    """
    spec = DeviceSpec.from_string(spec)

    def _merge(op):
        current = DeviceSpec.from_string(op.device or "")
        return spec.make_merged_spec(current).to_string()

    return _merge
