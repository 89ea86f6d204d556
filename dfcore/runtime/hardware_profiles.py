"""Hardware profiles of the simulated clock: devices and links, from their datasheets.

Convention, one for every figure: a profile holds *achieved* rates, each the datasheet's
peak times a named efficiency (what a well-written program measures), so compute, memory
and links are on one footing:

* :data:`COMPUTE_EFFICIENCY` = 0.8 of the fp32 peak (nominal: a large SGEMM reaches about
  75-90 % of it on these boards);
* :data:`MEMORY_EFFICIENCY` = 0.8 of the memory's peak bandwidth (nominal: a STREAM-style
  copy, ECC on);
* :data:`PCIE_EFFICIENCY` = 0.75 of a PCIe x16 link's per-direction rate after line coding
  (CUDA's bandwidthTest with pinned memory: 6 of 8 GB/s on Gen2, 12 of 15.75 GB/s on Gen3);
* :data:`NVLINK_EFFICIENCY` = 0.9 of NVLink's per-direction rate (nominal, nccl-tests' bus
  bandwidth on NVLink systems);
* :data:`ETHERNET_EFFICIENCY` = 0.8 of the line rate (TCP/IP overhead: 1 of 1.25 GB/s on
  10 GbE, the seeds' parameter-server figure);
* :data:`INFINIBAND_EFFICIENCY` = 0.9 of the data rate (nominal, RDMA write bandwidth).

Latencies are nominal (10 µs a PCIe copy's setup, 5 µs an NVLink copy, 50 µs a TCP message,
2 µs an RDMA message) and so is the 5 µs launch overhead of every GPU. The nominal hosts
(:data:`CPU`, :data:`NUMPY_CORE`) are achieved figures already. Every link's bandwidth is per
direction; a device's NVLink (``peer_link``) is its whole NVLink bandwidth as one port, as
behind an NVSwitch (HGX A100/H100); a DGX-1's V100 pairs share only 1-2 of their 6 links
(give those as ``MachineProfile(links=...)``).
"""

from __future__ import annotations

import dataclasses
import math

COMPUTE_EFFICIENCY = 0.8
MEMORY_EFFICIENCY = 0.8
PCIE_EFFICIENCY = 0.75
NVLINK_EFFICIENCY = 0.9
ETHERNET_EFFICIENCY = 0.8
INFINIBAND_EFFICIENCY = 0.9


@dataclasses.dataclass(frozen=True)
class LinkProfile:
    """A link between two devices: achieved bandwidth per direction (bytes/s, may be ``math.inf``) and latency (s)."""

    name: str
    bandwidth_Bps: float
    latency_s: float


@dataclasses.dataclass(frozen=True)
class DeviceProfile:
    """A device's achieved speed: fp32 FLOP/s, memory bandwidth (bytes/s), memory size (bytes) and the fixed
    cost of launching one op (s). ``name`` is what the placement log prints (``name: Tesla K20m``);
    ``device_type`` is ``"CPU"`` or ``"GPU"``. ``host_bus``: the link the board sits on (a GPU's PCIe
    generation), which copies to and from it cross inside one task unless the machine names another link;
    None for the host itself. ``peer_link``: the board's NVLink to the other GPUs of its task, or None."""

    name: str
    device_type: str
    flops_per_s: float
    mem_bandwidth_Bps: float
    memory_bytes: int
    launch_overhead_s: float
    host_bus: LinkProfile | None = None
    peer_link: LinkProfile | None = None


def gpu(name: str, peak_flops_per_s: float, peak_mem_Bps: float, memory_bytes: int, host_bus: LinkProfile,
        peer_link: LinkProfile | None = None) -> DeviceProfile:
    """A GPU's :class:`DeviceProfile` from its datasheet peaks (fp32 FLOP/s, memory bytes/s) times
    :data:`COMPUTE_EFFICIENCY` and :data:`MEMORY_EFFICIENCY`, with the nominal 5 µs launch overhead."""
    return DeviceProfile(name, "GPU", peak_flops_per_s * COMPUTE_EFFICIENCY, peak_mem_Bps * MEMORY_EFFICIENCY,
                         memory_bytes, 5e-6, host_bus, peer_link)


# PCI-SIG base specs, per direction of an x16 link: Gen2 5 GT/s with 8b/10b = 8 GB/s; Gen3 8 GT/s with
# 128b/130b = 15.75 GB/s; Gen4 16 GT/s = 31.5 GB/s; Gen5 32 GT/s = 63 GB/s.
PCIE_2_X16 = LinkProfile("PCIe 2.0 x16", 8e9 * PCIE_EFFICIENCY, 10e-6)
PCIE_3_X16 = LinkProfile("PCIe 3.0 x16", 15.75e9 * PCIE_EFFICIENCY, 10e-6)
PCIE_4_X16 = LinkProfile("PCIe 4.0 x16", 31.5e9 * PCIE_EFFICIENCY, 10e-6)
PCIE_5_X16 = LinkProfile("PCIe 5.0 x16", 63e9 * PCIE_EFFICIENCY, 10e-6)
# NVIDIA Tesla V100 datasheet (2017): NVLink 2, six links, 300 GB/s total = 150 GB/s each way.
NVLINK_V100 = LinkProfile("NVLink 2 (V100)", 150e9 * NVLINK_EFFICIENCY, 5e-6)
# NVIDIA A100 Tensor Core GPU datasheet (2020): NVLink 3, twelve links, 600 GB/s total = 300 GB/s each way.
NVLINK_A100 = LinkProfile("NVLink 3 (A100)", 300e9 * NVLINK_EFFICIENCY, 5e-6)
# NVIDIA H100 Tensor Core GPU datasheet (2022): NVLink 4, eighteen links, 900 GB/s total = 450 GB/s each way
# (the H200's datasheet gives the same NVLink).
NVLINK_H100 = LinkProfile("NVLink 4 (H100)", 450e9 * NVLINK_EFFICIENCY, 5e-6)
# IEEE 802.3ae (10GBASE), 802.3by (25GBASE), 802.3ba (100GBASE): 1.25, 3.125, 12.5 GB/s line rates.
ETHERNET_10G = LinkProfile("10 Gigabit Ethernet", 1.25e9 * ETHERNET_EFFICIENCY, 50e-6)
ETHERNET_25G = LinkProfile("25 Gigabit Ethernet", 3.125e9 * ETHERNET_EFFICIENCY, 50e-6)
ETHERNET_100G = LinkProfile("100 Gigabit Ethernet", 12.5e9 * ETHERNET_EFFICIENCY, 50e-6)
# InfiniBand Trade Association, HDR 4x: 200 Gbit/s = 25 GB/s data rate.
INFINIBAND_HDR = LinkProfile("InfiniBand HDR", 25e9 * INFINIBAND_EFFICIENCY, 2e-6)
# Same device: no copy.
LOOPBACK = LinkProfile("loopback", math.inf, 0.0)

# NVIDIA "Tesla K20 GPU Accelerator" board specification (2012): K20m 3.52 TFLOP/s fp32, 208 GB/s GDDR5,
# 5 GB, PCI Express Gen2 x16.
TESLA_K20M = gpu("Tesla K20m", 3.52e12, 208e9, 5 * 10**9, PCIE_2_X16)
# NVIDIA Tesla V100 datasheet (2017), SXM2: 15.7 TFLOP/s fp32, 900 GB/s HBM2, 16 or 32 GB, PCIe Gen3 x16 to the
# host, NVLink 2 to the other GPUs.
TESLA_V100 = gpu("Tesla V100-SXM2-16GB", 15.7e12, 900e9, 16 * 10**9, PCIE_3_X16, NVLINK_V100)
TESLA_V100_32GB = gpu("Tesla V100-SXM2-32GB", 15.7e12, 900e9, 32 * 10**9, PCIE_3_X16, NVLINK_V100)
# NVIDIA A100 Tensor Core GPU datasheet (2020), SXM4: 19.5 TFLOP/s fp32, 1,555 GB/s HBM2 (40 GB) or 2,039 GB/s
# HBM2e (80 GB), PCIe Gen4 x16 to the host, NVLink 3. The names are the CUDA driver's.
A100_40GB = gpu("NVIDIA A100-SXM4-40GB", 19.5e12, 1555e9, 40 * 10**9, PCIE_4_X16, NVLINK_A100)
A100_80GB = gpu("NVIDIA A100-SXM4-80GB", 19.5e12, 2039e9, 80 * 10**9, PCIE_4_X16, NVLINK_A100)
# NVIDIA H100 Tensor Core GPU datasheet (2022), SXM5: 67 TFLOP/s fp32, 3.35 TB/s HBM3, 80 GB, PCIe Gen5 x16,
# NVLink 4. The name is the one the CUDA driver reports for that board (and device_set's description uses).
H100 = gpu("NVIDIA H100 80GB HBM3", 67e12, 3.35e12, 80 * 10**9, PCIE_5_X16, NVLINK_H100)
# NVIDIA H200 Tensor Core GPU datasheet (2024), SXM: 67 TFLOP/s fp32, 4.8 TB/s HBM3e, 141 GB, PCIe Gen5 x16,
# NVLink 4; the driver's name.
H200 = gpu("NVIDIA H200", 67e12, 4.8e12, 141 * 10**9, PCIE_5_X16, NVLINK_H100)
# Nominal modest host, not a datasheet figure: 100 GFLOP/s, 20 GB/s, 16 GB, 1 µs per op (achieved).
CPU = DeviceProfile("CPU", "CPU", 100e9, 20e9, 16 * 10**9, 1e-6)
# Nominal, not a datasheet figure: one host core running numpy kernels as dfcore does:
# ~10 GFLOP/s on small matrices, 10 GB/s, ~10 µs to dispatch one op (Python and numpy
# call overhead). The parameter-server driver's default worker.
NUMPY_CORE = DeviceProfile("numpy core", "CPU", 10e9, 10e9, 16 * 10**9, 10e-6)
#: every GPU profile above, by the name the CUDA driver reports (what a session's devices carry)
GPUS = {p.name: p for p in (TESLA_K20M, TESLA_V100, TESLA_V100_32GB, A100_40GB, A100_80GB, H100, H200)}
