"""The devices of one task: ``Device`` records and the ``DeviceSet`` a Session places on.

Source: ``tensorflow/core/common_runtime/device_set.{h,cc}``,
``device_factory.cc`` (``DeviceFactory::AddDevices``), ``threadpool_device_factory.cc``,
``gpu/gpu_device.cc`` and ``direct_session.cc`` (``Device mapping:``).

Without real GPUs every ``GPU:i`` is *simulated*: its kernels run on numpy on the
host and its cost comes from a hardware profile (``profile_name``). The default
machine (a ``ConfigProto`` without ``device_count``) is the seeds' server: one CPU
and four Tesla K20m. With cupy and CUDA GPUs visible (:mod:`dfcore.runtime.real_gpus`),
the GPUs are the real ones (or the logical GPUs ``GPUOptions.Experimental.virtual_devices``
carves out of them), unless ``DFCORE_SIMULATED_GPUS=1`` asks for simulated ones.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

from .. import backends, errors
from ..framework.device import DeviceSpec
from ..framework.protos import ConfigProto
from . import real_gpus

#: Factory priorities (``REGISTER_LOCAL_DEVICE_FACTORY``): a higher one is preferred.
DEVICE_TYPE_PRIORITY = {"GPU": 210, "CPU": 60}
#: Compute capability of the GPU profiles the mapping string knows.
COMPUTE_CAPABILITY = {"Tesla K20m": "3.5", "Tesla P100-PCIE-16GB": "6.0", "Tesla V100-SXM2-16GB": "7.0",
                      "Tesla V100-SXM2-32GB": "7.0",
                      "NVIDIA H100 80GB HBM3": "9.0", "NVIDIA H200": "9.0"}
DEFAULT_GPU_PROFILE = "Tesla K20m"
DEFAULT_GPU_COUNT = 4
CPU_PROFILE = "cpu"
#: The array backend of real GPUs (:mod:`dfcore.backends.cupy_backend`).
REAL_GPU_BACKEND = "cupy"


@dataclasses.dataclass(frozen=True)
class Device:
    """One device of a task.

    Attributes:
        name: the full name, ``/job:localhost/replica:0/task:0/device:GPU:0``.
        device_type: ``"CPU"`` or ``"GPU"``.
        index: the device index within its type.
        profile_name: the hardware profile (``"Tesla K20m"``, ``"cpu"``).
        simulated: True when kernels run on the host in place of this device.
        incarnation: a nonzero 64-bit id (:func:`incarnation_of` the name).
        physical_device_desc: TF's ``DeviceAttributes.physical_device_desc``
            (``device: 0, name: Tesla K20m, pci bus id: ..., compute capability: 3.5``);
            empty for CPUs, which ``Device mapping:`` leaves out.
        backend: the array backend holding the device's tensors (:mod:`dfcore.backends`; dfcore's, TF has
            none): ``"numpy"`` for CPUs and, unless ``DFCORE_SIMULATED_GPU_BACKEND`` says otherwise, for
            simulated GPUs; ``"cupy"`` for real GPUs.
        platform_device_id: for a real GPU, the CUDA ordinal of the board it runs on (TF's platform
            device id; several logical GPUs may share one); None for simulated devices and CPUs.
        memory_limit_bytes: a real logical GPU's share of its board's memory (``virtual_devices``), or None.
    """

    name: str
    device_type: str
    index: int
    profile_name: str
    simulated: bool
    incarnation: int
    physical_device_desc: str = ""
    backend: str = backends.NUMPY
    platform_device_id: int | None = None
    memory_limit_bytes: int | None = None

    @property
    def spec(self) -> DeviceSpec:
        return DeviceSpec.from_string(self.name)

    @property
    def priority(self) -> int:
        return DEVICE_TYPE_PRIORITY.get(self.device_type, 0)


def incarnation_of(device_name: str) -> int:
    """A deterministic nonzero uint64 for a device name (TF draws a random one per process).

    It travels in ``send_device_incarnation`` and in rendezvous keys
    (``rendezvous.cc``), where it is printed as 16 hex digits.
    """
    digest = hashlib.sha256(device_name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") or 1


def allocator_name(device_name: str) -> str:
    """The name TF gives the allocator of a device: ``cpu`` for a CPU, ``GPU_<i>_bfc`` for GPU ``i``
    (``gpu/gpu_device.cc``'s BFC allocator); it appears in StepStats and in OOM messages."""
    spec = DeviceSpec.from_string(device_name)
    return "cpu" if spec.device_type == "CPU" else f"{spec.device_type}_{spec.device_index}_bfc"


def local_gpu_profiles() -> tuple[str, ...]:
    """The profiles of this host's simulated GPUs when ``device_count`` does not name ``"GPU"``: the seeds'
    server's four Tesla K20m (real GPUs are :func:`real_gpu_devices`)."""
    return (DEFAULT_GPU_PROFILE,) * DEFAULT_GPU_COUNT


def real_gpu_devices(job: str, replica: int, task: int, gpu_options: Any = None,
                     count: int | None = None) -> list[Device]:
    """The task's real (logical) GPUs, ``[]`` without any (:func:`dfcore.runtime.real_gpus.detect_gpus`).

    ``count`` keeps the first ``count`` of them; more than there are gives all there are, as TF's GPU
    device factory does (a later ``/device:GPU:i`` beyond them fails in the placer, in TF's words).

    Raises:
        InvalidArgumentError: ``gpu_options`` that do not fit the GPUs (:func:`~dfcore.runtime.real_gpus.logical_gpus`).
    """
    physical = real_gpus.detect_gpus()
    if not physical:
        return []
    logical = real_gpus.logical_gpus(physical, gpu_options)
    out = []
    for gpu in logical[:count]:
        name = DeviceSpec(job, replica, task, "GPU", gpu.tf_id).to_string()
        out.append(Device(name, "GPU", gpu.tf_id, gpu.gpu.name, False, incarnation_of(name), gpu.gpu.desc,
                          REAL_GPU_BACKEND, gpu.gpu.platform_id, gpu.memory_limit_bytes))
    return out


def simulated_gpu_desc(index: int, profile_name: str) -> str:
    """TF's GPU ``physical_device_desc`` with a simulated PCI bus id (``0000:<index+2>:00.0``)."""
    desc = f"device: {index}, name: {profile_name}, pci bus id: 0000:{index + 2:02x}:00.0"
    capability = COMPUTE_CAPABILITY.get(profile_name)
    return desc if capability is None else f"{desc}, compute capability: {capability}"


def make_device(job: str, replica: int, task: int, device_type: str, index: int,
                profile_name: str | None = None) -> Device:
    """A simulated :class:`Device` with its full name, incarnation, description and array backend
    (:func:`dfcore.backends.default_backend`).

    Raises:
        ValueError: ``DFCORE_SIMULATED_GPU_BACKEND`` names no registered backend.
    """
    name = DeviceSpec(job, replica, task, device_type, index).to_string()
    if device_type == "CPU":
        profile_name, desc = profile_name or CPU_PROFILE, ""
    else:
        profile_name = profile_name or DEFAULT_GPU_PROFILE
        desc = simulated_gpu_desc(index, profile_name)
    return Device(name, device_type, index, profile_name, True, incarnation_of(name), desc,
                  backends.default_backend(device_type))


def passes_device_filters(name: str, device_filters: Iterable[str], own_task: str) -> bool:
    """True if a session with ``device_filters`` on ``own_task`` sees (and waits for) the task or device ``name``.

    Source: ``device_filters`` in TF's ``core/protobuf/config.proto``: with filters, a session ignores the
    devices (and tasks) matching none of them; the session's own task always stays.

    Args:
        name: a task (``/job:ps/replica:0/task:0``) or device name.
        device_filters: partial device names (``"/job:ps"``, ``"/job:worker/task:1"``); empty = everything.
        own_task: the session's task (``/job:worker/replica:0/task:1``).
    """
    spec = DeviceSpec.from_string(name)
    own = DeviceSpec.from_string(own_task)
    same_task = (spec.job, spec.replica or 0, spec.task or 0) == (own.job, own.replica or 0, own.task or 0)
    if not device_filters or same_task:
        return True
    return any(DeviceSpec.from_string(f).matches(name) for f in device_filters)


def _task_of(device):
    spec = device.spec
    return (spec.job, spec.replica, spec.task)


class DeviceSet:
    """The devices of one task (or of a whole cluster), in creation order (CPUs, then GPUs,
    as TF's DeviceMgr).

    Args:
        devices: :class:`Device` records.
        client_device: the full name of the client device (where feeds arrive and fetches
            leave); default: the CPU with the lowest index. In a cluster's set it is the
            session's task's CPU:0, and that task's devices come first in
            :meth:`prioritized_devices`, so an op with no device request stays on the
            session's task, as TF's placer prefers the client's task.
    Raises:
        NotFoundError: no CPU device (TF's ``No CPU devices are available in this process``).
        KeyError: ``client_device`` is not in ``devices``.
    """

    def __init__(self, devices: Iterable[Device], client_device: str | None = None) -> None:
        self._devices = tuple(devices)
        self._by_name = {d.name: d for d in self._devices}
        self._found: dict[str, list[Device]] = {}  # find's answers by canonical spec (the set never changes)
        self._backends = {t: frozenset(d.backend for d in self._devices if d.device_type == t)
                          for t in {d.device_type for d in self._devices}}
        cpus = [d for d in self._devices if d.device_type == "CPU"]
        if not cpus:
            raise errors.NotFoundError(None, None, "No CPU devices are available in this process")
        self._client = min(cpus, key=lambda d: d.index) if client_device is None else self.device(client_device)
        client_task = _task_of(self._client)
        # TF's device sort (FilterSupportedDevices): type priority, then the name as a string;
        # the client's task first.
        self._prioritized = tuple(sorted(self._devices, key=lambda d: (_task_of(d) != client_task,
                                                                       -d.priority, d.name)))

    @classmethod
    def from_config(cls, config: ConfigProto | None = None, job: str = "localhost", task: int = 0,
                    replica: int = 0) -> DeviceSet:
        """The devices a Session with ``config`` gets (TF's ``DeviceFactory::AddDevices``).

        Without ``device_count`` the session gets the default machine: one CPU and
        every GPU of the host (the real ones, :func:`real_gpu_devices`; without any,
        :func:`local_gpu_profiles`: four simulated Tesla K20m). With
        ``device_count={"CPU": c, "GPU": g}`` it gets exactly c CPUs and g simulated
        GPUs, or on real GPUs the first g of them (all there are if fewer, as TF), and
        a GPU type the map does not name gets none (dfcore's rule, so a lesson's config
        says all there is; TF would add the host's GPUs); an unnamed CPU type still gets
        the one CPU the client needs. Other keys are ignored, as TF ignores types without
        a device factory.

        Raises:
            NotFoundError: ``device_count`` gives zero CPUs.
            ValueError: a negative count.
            InvalidArgumentError: ``gpu_options`` that do not fit the real GPUs.
        """
        counts = dict(getattr(config, "device_count", None) or {})
        for key, value in counts.items():
            if int(value) < 0:
                raise ValueError(f"device_count[{key!r}] must be >= 0, got {value}")
        num_cpus = int(counts.get("CPU", 1))
        num_gpus = int(counts.get("GPU", 0)) if counts else None
        devices = [make_device(job, replica, task, "CPU", i) for i in range(num_cpus)]
        real = [] if num_gpus == 0 else real_gpu_devices(job, replica, task, getattr(config, "gpu_options", None),
                                                         num_gpus)
        if real:
            return cls(devices + real)
        gpu_profiles = local_gpu_profiles()
        if num_gpus is not None:
            gpu_profiles = tuple(gpu_profiles[i] if i < len(gpu_profiles) else DEFAULT_GPU_PROFILE
                                 for i in range(num_gpus))
        devices += [make_device(job, replica, task, "GPU", i, p) for i, p in enumerate(gpu_profiles)]
        return cls(devices)

    def backends_of_type(self, device_type: str) -> frozenset[str]:
        """The array backends of the devices of ``device_type`` (:attr:`Device.backend`)."""
        return self._backends.get(device_type, frozenset())

    @property
    def devices(self) -> tuple[Device, ...]:
        """All devices, in creation order."""
        return self._devices

    def names(self) -> list[str]:
        """The full device names, in creation order."""
        return [d.name for d in self._devices]

    def prioritized_devices(self) -> tuple[Device, ...]:
        """Devices by preference: type priority (GPU 210 before CPU 60), then name (TF's sort)."""
        return self._prioritized

    def device_types(self) -> list[str]:
        """The device types present, by priority (TF's ``PrioritizedDeviceTypeList``)."""
        return list(dict.fromkeys(d.device_type for d in self._prioritized))

    @property
    def client_device(self) -> Device:
        """CPU:0 of the task: where feeds arrive and fetches leave."""
        return self._client

    def find(self, spec: str | DeviceSpec | None) -> list[Device]:
        """Devices matching a (partial) spec (``"/gpu:1"``, ``"/job:localhost"``), in priority order.

        Raises:
            ValueError: a malformed device string.
        """
        wanted = DeviceSpec.from_string(spec or "")
        key = wanted.to_string()
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = [d for d in self._prioritized if wanted.matches(d.spec)]
        return list(found)

    def device(self, name: str) -> Device:
        """The device with this full name.

        Raises:
            KeyError: no such device.
        """
        return self._by_name[DeviceSpec.from_string(name).to_string()]

    def __contains__(self, name):
        return DeviceSpec.from_string(name).to_string() in self._by_name

    def __iter__(self) -> Iterator[Device]:
        return iter(self._devices)

    def __len__(self) -> int:
        return len(self._devices)

    def __repr__(self):
        return f"DeviceSet({', '.join(self.names())})"
