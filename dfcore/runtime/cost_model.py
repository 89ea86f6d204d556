"""Hardware profiles and the cost formulas behind simulated time.

Source: TF whitepaper (2015) §3.2.1 (a cost model estimates op times and transfer
costs per device) and TF's ``core/grappler/costs/op_level_cost_estimator.cc``
(roofline: an op is bound by compute or by memory). The devices and links are those of
:mod:`dfcore.runtime.hardware_profiles`: achieved rates, each a datasheet's fp32 peak
times a named efficiency; what is nominal says so.

Formulas (SI units: seconds, bytes, FLOP; ``B`` = bandwidth in bytes/s):

* op cost: ``op_cost(...) = OpCost(flops, bytes_accessed)`` from the op type's
  registered cost function (:mod:`dfcore.ops.op_costs`), with
  ``bytes_accessed = elements_accessed · dtype_size``; op types with none get
  ``flops = |output elements|``, ``bytes = (|inputs| + |outputs|) · dtype_size``.
* op time (roofline): ``launch_overhead_s + max(flops / flops_per_s,
  bytes_accessed / mem_bandwidth_Bps)``; 0 for an op with no work at all.
* transfer time: ``latency_s + nbytes / bandwidth_Bps`` (0 on the same device).
* ring all-reduce of K bytes over n ranks (α = latency, β = 1/B):
  ``2(n−1)·α + 2(n−1)/n · K·β`` — n−1 reduce-scatter and n−1 allgather steps,
  each moving K/n bytes over every link at once.
* parameter server, n workers, s PS shards: each worker pushes K bytes of gradients
  and pulls K bytes of parameters, split evenly over the shards; each shard's
  interface carries the workers' messages one at a time and each worker's interface
  its own s messages one at a time. One direction costs ``max(n, s) · (α + K/(s·B))``;
  a full-duplex link overlaps push and pull, so a step costs that once (twice on a
  half-duplex link).
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping, Sequence
from typing import Any

from ..framework import registry
from ..framework.device import DeviceSpec
from ..ops import op_costs
from .hardware_profiles import (  # noqa: F401  (the profiles are the cost model's API too)
    A100_40GB,
    A100_80GB,
    CPU,
    ETHERNET_10G,
    ETHERNET_25G,
    ETHERNET_100G,
    GPUS,
    H100,
    H200,
    INFINIBAND_HDR,
    LOOPBACK,
    NUMPY_CORE,
    NVLINK_A100,
    NVLINK_H100,
    NVLINK_V100,
    PCIE_2_X16,
    PCIE_3_X16,
    PCIE_4_X16,
    PCIE_5_X16,
    TESLA_K20M,
    TESLA_V100,
    TESLA_V100_32GB,
    DeviceProfile,
    LinkProfile,
)


@dataclasses.dataclass(frozen=True)
class OpCost:
    """Work of one op execution: floating-point operations and bytes read plus written."""

    flops: int
    bytes_accessed: int



def nic_ports(src_task: str, dst_task: str) -> tuple[str, str]:
    """The two ends a message between two tasks occupies: the sender's outbound network interface
    (``"<src task> NIC out"``) and the receiver's inbound one (``"<dst task> NIC in"``), each one message at a
    time (full duplex: a task sends and receives at once). The one rule for the network; the event-driven
    simulations (:mod:`dfcore.distribute.ps_simulation`) use it for their task names directly."""
    return f"{src_task} NIC out", f"{dst_task} NIC in"


class MachineProfile:
    """Devices (full names → :class:`DeviceProfile`) and the links between them.

    ``link(src, dst)`` is, in order: :data:`LOOPBACK` for the same device; the entry
    ``links[(src, dst)]`` if given; between two GPUs of one task that both have a ``peer_link``
    (NVLink), the slower of the two, unless the machine was given an ``intra_task_link``; between two
    devices of one task (CPU↔GPU, GPU↔GPU), the slower ``host_bus`` of the two devices' profiles (a
    K20m's PCIe 2.0), or ``intra_task_link`` (PCIe 3.0 by default) when neither profile names one;
    ``inter_task_link`` (10 GbE by default) between tasks.

    ``transfer_resources(src, dst)`` is the one definition of what a transfer occupies on the
    simulated clock (both ends of the link, each one transfer at a time unless
    :meth:`capacities` says more):

    * between tasks: the sender's ``"<task> NIC out"`` and the receiver's ``"<task> NIC in"``
      (:func:`nic_ports`);
    * between two GPUs of one task over NVLink: each GPU's NVLink ports, ``"<gpu> NVLink out"`` and
      ``"<gpu> NVLink in"``;
    * otherwise within a task: each GPU's own bus, ``"<gpu> bus out"`` when it sends and ``"<gpu> bus in"``
      when it receives (a PCIe x16 link is full duplex), and the host's memory
      (``"<task> host memory"``) when a CPU device is an end; the host's memory takes
      ``⌊host memory bandwidth / bus bandwidth⌋`` copies at once (3 for the nominal 20 GB/s host and
      PCIe 2.0's 6 GB/s);
    * a pair given in ``links`` (a dedicated NVLink): its own channel ``"<src> -> <dst>"``;
      ``link_resources[(src, dst)]`` overrides all of these with one named channel.

    Simplifications, stated: a transfer holds each port whole for its duration (no fair sharing of one
    port's bandwidth between concurrent transfers: they queue); a copy between tasks does not also
    occupy the GPUs' buses; PCIe switches and NUMA are not modelled.

    Device names are canonicalised (``/job:w/replica:0/task:0/gpu:0`` →
    ``/job:w/replica:0/task:0/device:GPU:0``) and must name job, replica, task, type
    and index. Mappings given are copied and read-only.

    Raises:
        ValueError: a device name that is not fully specified.
        KeyError: from :meth:`device` for an unknown device, listing the known ones.
    """

    def __init__(self, devices: Mapping[str, DeviceProfile], links: Mapping[tuple[str, str], LinkProfile] | None = None,
                 link_resources: Mapping[tuple[str, str], str] | None = None,
                 intra_task_link: LinkProfile | None = None, inter_task_link: LinkProfile = ETHERNET_10G) -> None:
        self.devices = types.MappingProxyType({_full_name(d): p for d, p in devices.items()})
        self.links = types.MappingProxyType(_pair_map(links))
        self.link_resources = types.MappingProxyType(_pair_map(link_resources))
        self._use_peer_links = intra_task_link is None
        self.intra_task_link = PCIE_3_X16 if intra_task_link is None else intra_task_link
        self.inter_task_link = inter_task_link
        self._capacities = types.MappingProxyType(self._host_memory_capacities())

    def device(self, name: str) -> DeviceProfile:
        """The :class:`DeviceProfile` of a device name."""
        key = _full_name(name)
        try:
            return self.devices[key]
        except KeyError:
            raise KeyError(f"Unknown device '{key}'; the machine has: {', '.join(sorted(self.devices))}") from None

    def link(self, src: str, dst: str) -> LinkProfile:
        """The :class:`LinkProfile` a tensor crosses from device ``src`` to ``dst``."""
        src, dst = _full_name(src), _full_name(dst)
        if src == dst:
            return LOOPBACK
        if (src, dst) in self.links:
            return self.links[(src, dst)]
        if _task_of(src) != _task_of(dst):
            return self.inter_task_link
        peers = self._peer_links(src, dst)
        if peers:
            return min(peers, key=lambda link: link.bandwidth_Bps)
        profiles = [self.devices.get(name) for name in (src, dst)]
        buses = [p.host_bus for p in profiles if p is not None and p.host_bus is not None]
        return min(buses, key=lambda bus: bus.bandwidth_Bps) if buses else self.intra_task_link

    def transfer_resources(self, src: str, dst: str) -> tuple[str, ...]:
        """The resources a ``src`` → ``dst`` transfer holds while it runs (see the class doc); () on one device."""
        src, dst = _full_name(src), _full_name(dst)
        if src == dst:
            return ()
        if (src, dst) in self.link_resources:
            return (self.link_resources[(src, dst)],)
        if (src, dst) in self.links:
            return (f"{src} -> {dst}",)
        if _task_of(src) != _task_of(dst):
            return nic_ports(_task_of(src), _task_of(dst))
        if self._peer_links(src, dst):
            return f"{src} NVLink out", f"{dst} NVLink in"
        ends = [f"{_task_of(src)} host memory" if _is_cpu(src) else f"{src} bus out",
                f"{_task_of(dst)} host memory" if _is_cpu(dst) else f"{dst} bus in"]
        return tuple(dict.fromkeys(ends))

    def _peer_links(self, src, dst):
        """The two devices' ``peer_link`` s when both have one (NVLink between them), else ()."""
        links = [getattr(self.devices.get(name), "peer_link", None) for name in (src, dst)]
        return tuple(links) if self._use_peer_links and all(link is not None for link in links) else ()

    def capacities(self) -> Mapping[str, int]:
        """Resource name → how many transfers may hold it at once, where more than one (a host's memory)."""
        return self._capacities

    def _host_memory_capacities(self):
        out = {}
        for task in sorted({_task_of(d) for d in self.devices}):
            names = [d for d in self.devices if _task_of(d) == task]
            hosts = [self.devices[d] for d in names if _is_cpu(d)]
            if not hosts:
                continue
            buses = [self.devices[d].host_bus or self.intra_task_link for d in names if not _is_cpu(d)]
            fastest = max((b.bandwidth_Bps for b in buses), default=self.intra_task_link.bandwidth_Bps)
            out[f"{task} host memory"] = max(1, int(min(h.mem_bandwidth_Bps for h in hosts) // fastest))
        return out

    def __repr__(self):
        return f"MachineProfile({', '.join(f'{d}: {p.name}' for d, p in sorted(self.devices.items()))})"


def default_machine(num_gpus: int = 4, job: str = "localhost", task: int = 0) -> MachineProfile:
    """The seeds' machine: ``CPU:0`` plus ``num_gpus`` simulated Tesla K20m on PCIe 2.0 x16 (their bus)."""
    prefix = f"/job:{job}/replica:0/task:{task}/device:"
    devices = {prefix + "CPU:0": CPU}
    devices.update({f"{prefix}GPU:{i}": TESLA_K20M for i in range(num_gpus)})
    return MachineProfile(devices)


def op_cost(op_type: str, input_shapes: Sequence[Any], output_shapes: Sequence[Any], dtype_size: int = 4,
            attrs: Mapping[str, Any] | None = None) -> OpCost:
    """Estimated work of one execution of an ``op_type`` op.

    Args:
        input_shapes, output_shapes: sequences of fully known shapes (int sequences).
        dtype_size: bytes per element (4 for float32).
        attrs: the op's attrs (``Operation.attrs``), e.g. ``transpose_a``.

    Returns:
        :class:`OpCost`; see the module docstring for the fallback.

    Raises:
        ValueError: a shape with an unknown (None) or negative dimension.
    """
    ins, outs = _int_shapes(input_shapes), _int_shapes(output_shapes)
    fn = registry.cost_function(op_type)
    if fn is None:
        flops = sum(map(op_costs.num_elements, outs))
        elements = op_costs.io_elements(ins, outs)
    else:
        flops, elements = fn(ins, outs, dict(attrs or {}))
    return OpCost(int(flops), int(elements) * int(dtype_size))


def op_time_s(cost: OpCost, device: DeviceProfile) -> float:
    """Roofline time of ``cost`` (:class:`OpCost`) on ``device`` (:class:`DeviceProfile`);
    an op with no work (no flops, no bytes: graph plumbing) launches nothing and takes 0 s."""
    if cost.flops == 0 and cost.bytes_accessed == 0:
        return 0.0
    compute_s = cost.flops / device.flops_per_s
    memory_s = cost.bytes_accessed / device.mem_bandwidth_Bps
    return device.launch_overhead_s + max(compute_s, memory_s)


def transfer_time_s(nbytes: float, link: LinkProfile) -> float:
    """``latency + nbytes / bandwidth`` for one message over ``link`` (:class:`LinkProfile`)."""
    return link.latency_s + nbytes / link.bandwidth_Bps


def ring_allreduce_time_s(nbytes: float, n: int, link: LinkProfile) -> float:
    """α-β time of a ring all-reduce of ``nbytes`` per rank over ``n`` ranks.

    ``2(n−1)·α + 2(n−1)/n · nbytes/B``: 2(n−1) steps (reduce-scatter, then allgather),
    each sending nbytes/n on every link at once. The bandwidth term is the optimum
    (Patarasuk & Yuan 2009) and flat in n. The reduction term γ is left out.
    Sources: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
    Operations in MPICH", IJHPCA 19(1), 2005; Gibiansky, "Bringing HPC Techniques to
    Deep Learning" (Baidu Research, 2017). 0 for one rank.

    Raises:
        ValueError: ``n < 1``.
    """
    _check_count("n", n)
    steps = 2 * (n - 1)
    return steps * link.latency_s + steps / n * nbytes / link.bandwidth_Bps


def ps_sync_time_s(nbytes: float, n_workers: int, link: LinkProfile, n_ps: int = 1, full_duplex: bool = True) -> float:
    """Communication time of one synchronous parameter-server step.

    Each of ``n_workers`` pushes its ``nbytes`` of gradients and pulls ``nbytes`` of
    parameters, split evenly over ``n_ps`` shards, every message holding both ends of its
    link (:func:`nic_ports`). A shard's inbound interface carries the ``n_workers``
    pushes of ``nbytes/n_ps`` one at a time, and a worker's outbound interface its
    ``n_ps`` pushes one at a time, so one direction takes
    ``max(n_workers, n_ps) · (α + nbytes/(n_ps·B))`` — at least ``max(n_workers·K/(n_ps·B), K/B)``.
    On a ``full_duplex`` link the PS sends back each variable as soon as all workers'
    gradients for it have arrived, while later variables are still coming in: pull
    overlaps push and the step costs one direction, an idealised pipelined bound. On a
    half-duplex link it costs push plus pull, twice that.

    Seeds' example: 300 M float32 parameters (1.2 GB), 10 workers, 1 GB/s → 12 s. The
    seeds' and Baidu's 10.8 s counts 9 senders (one of the 10 GPUs is the reducer):
    ``ps_sync_time_s(1.2e9, 9, ETHERNET_10G)``. Source: Gibiansky, "Bringing HPC
    Techniques to Deep Learning" (Baidu Research, 2017), naive single-reducer scheme;
    the per-port bound is the α-β model of Thakur, Rabenseifner & Gropp (IJHPCA 2005).

    Raises:
        ValueError: ``n_workers < 1`` or ``n_ps < 1``.
    """
    _check_count("n_workers", n_workers)
    _check_count("n_ps", n_ps)
    one_direction = max(n_workers, n_ps) * transfer_time_s(nbytes / n_ps, link)
    return one_direction if full_duplex else 2 * one_direction


def _check_count(name, value):
    if int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _int_shapes(shapes):
    out = []
    for shape in shapes:
        dims = tuple(shape)
        if any(d is None or int(d) < 0 for d in dims):
            raise ValueError(f"The cost model needs fully known shapes, got {list(dims)}")
        out.append(tuple(int(d) for d in dims))
    return out


def _full_name(name):
    spec = DeviceSpec.from_string(name)
    if None in (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index):
        raise ValueError(f"Device name '{name}' must give job, replica, task, type and index, "
                         "e.g. '/job:localhost/replica:0/task:0/device:GPU:0'")
    return spec.to_string()


def _is_cpu(name):
    return DeviceSpec.from_string(name).device_type == "CPU"


def _task_of(name):
    spec = DeviceSpec.from_string(name)
    return f"/job:{spec.job}/replica:{spec.replica}/task:{spec.task}"


def _pair_map(mapping):
    return {(_full_name(s), _full_name(d)): v for (s, d), v in (mapping or {}).items()}
