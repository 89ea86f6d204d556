"""Cost model: datasheet profiles, link rules, per-op cost formulas, roofline times and the
α-β collective formulas against the seeds' parameter-server vs ring all-reduce numbers."""

import dataclasses
import math
import uuid

import pytest

import dfcore as tf
from dfcore.framework import registry
from dfcore.ops import op_costs
from dfcore.runtime import cost_model as cm

PREFIX = "/job:localhost/replica:0/task:0/device:"
CPU0, GPU0, GPU1 = PREFIX + "CPU:0", PREFIX + "GPU:0", PREFIX + "GPU:1"

# The seeds' example: Deep Speech 2, 300 M float32 parameters over 1 GB/s links.
MODEL_BYTES = 300_000_000 * 4


# -- profiles ---------------------------------------------------------------------
def test_device_profiles_carry_the_datasheet_figures_times_the_named_efficiencies():
    from dfcore.runtime import hardware_profiles as hw
    assert (hw.COMPUTE_EFFICIENCY, hw.MEMORY_EFFICIENCY) == (0.8, 0.8)
    k20m, v100 = cm.TESLA_K20M, cm.TESLA_V100
    assert (k20m.name, k20m.flops_per_s, k20m.mem_bandwidth_Bps) == ("Tesla K20m", 3.52e12 * 0.8, 208e9 * 0.8)
    assert cm.TESLA_K20M.memory_bytes == 5_000_000_000 and k20m.host_bus is cm.PCIE_2_X16
    assert (v100.flops_per_s, v100.mem_bandwidth_Bps, v100.memory_bytes) == (15.7e12 * 0.8, 900e9 * 0.8, 16e9)
    assert (v100.host_bus, v100.peer_link) == (cm.PCIE_3_X16, cm.NVLINK_V100)
    assert (cm.A100_40GB.flops_per_s, cm.A100_40GB.mem_bandwidth_Bps) == (19.5e12 * 0.8, 1555e9 * 0.8)
    assert (cm.A100_80GB.host_bus, cm.A100_80GB.peer_link) == (cm.PCIE_4_X16, cm.NVLINK_A100)
    assert (cm.H100.flops_per_s, cm.H100.mem_bandwidth_Bps, cm.H100.memory_bytes) == (67e12 * 0.8, 3.35e12 * 0.8,
                                                                                      80e9)
    for board in (cm.H100, cm.H200):
        assert (board.host_bus, board.peer_link) == (cm.PCIE_5_X16, cm.NVLINK_H100)
    assert [p.device_type for p in (cm.TESLA_K20M, cm.TESLA_V100, cm.H100, cm.CPU)] == ["GPU", "GPU", "GPU", "CPU"]
    assert cm.CPU.flops_per_s < cm.TESLA_K20M.flops_per_s < cm.TESLA_V100.flops_per_s < cm.H100.flops_per_s


def test_link_profiles_are_the_line_rates_times_the_named_efficiencies():
    # per direction, after line coding: PCIe x16 Gen2-5 8, 15.75, 31.5, 63 GB/s, at 75 % (bandwidthTest: 6 of 8)
    assert [link.bandwidth_Bps for link in (cm.PCIE_2_X16, cm.PCIE_3_X16, cm.PCIE_4_X16, cm.PCIE_5_X16)] == \
        pytest.approx([6e9, 11.8125e9, 23.625e9, 47.25e9])
    assert cm.PCIE_3_X16.latency_s == 10e-6
    # NVLink 2/3/4: 150, 300, 450 GB/s each way (300, 600, 900 GB/s aggregate), at 90 %
    assert [link.bandwidth_Bps for link in (cm.NVLINK_V100, cm.NVLINK_A100, cm.NVLINK_H100)] == \
        pytest.approx([135e9, 270e9, 405e9])
    assert cm.NVLINK_V100.latency_s == 5e-6
    # Ethernet at 80 % of the line rate: 10 GbE is the seeds' 1 GB/s
    assert (cm.ETHERNET_10G.bandwidth_Bps, cm.ETHERNET_10G.latency_s) == (1e9, 50e-6)
    assert (cm.ETHERNET_25G.bandwidth_Bps, cm.ETHERNET_100G.bandwidth_Bps) == (2.5e9, 10e9)
    assert cm.INFINIBAND_HDR.bandwidth_Bps == pytest.approx(22.5e9)
    assert cm.LOOPBACK.bandwidth_Bps == math.inf and cm.LOOPBACK.latency_s == 0.0


def test_profiles_are_frozen_and_users_can_define_their_own():
    with pytest.raises(dataclasses.FrozenInstanceError):
        cm.TESLA_K20M.flops_per_s = 1.0
    mine = cm.DeviceProfile("My GPU", "GPU", 1e12, 1e11, 2**30, 0.0)
    machine = cm.MachineProfile({GPU0: mine}, links={(GPU0, GPU1): cm.NVLINK_V100})
    assert machine.device("/job:localhost/replica:0/task:0/gpu:0") is mine


# -- machine ----------------------------------------------------------------------
def test_default_machine_is_one_cpu_and_four_k20m():
    machine = cm.default_machine()
    assert list(machine.devices) == [CPU0] + [PREFIX + f"GPU:{i}" for i in range(4)]
    assert machine.device(CPU0) is cm.CPU
    assert all(machine.device(PREFIX + f"GPU:{i}") is cm.TESLA_K20M for i in range(4))
    assert len(cm.default_machine(num_gpus=2).devices) == 3


def test_default_link_rules():
    ps = "/job:ps/replica:0/task:0/device:CPU:0"
    worker = "/job:worker/replica:0/task:1/device:GPU:0"
    machine = cm.MachineProfile({CPU0: cm.CPU, GPU0: cm.TESLA_K20M, GPU1: cm.TESLA_K20M,
                                 ps: cm.CPU, worker: cm.TESLA_K20M})
    assert machine.link(GPU0, GPU0) is cm.LOOPBACK
    assert machine.link(CPU0, GPU0) is cm.PCIE_2_X16  # the K20m's own bus
    assert machine.link(GPU1, CPU0) is cm.PCIE_2_X16
    assert machine.link(GPU0, GPU1) is cm.PCIE_2_X16
    v100 = cm.MachineProfile({CPU0: cm.CPU, GPU0: cm.TESLA_V100, GPU1: cm.TESLA_K20M})
    assert v100.link(CPU0, GPU0) is cm.PCIE_3_X16
    assert v100.link(GPU0, GPU1) is cm.PCIE_2_X16  # the slower bus of the two boards
    mine = cm.DeviceProfile("My GPU", "GPU", 1e12, 1e11, 2**30, 0.0)
    custom = cm.MachineProfile({CPU0: cm.CPU, GPU0: mine}, intra_task_link=cm.NVLINK_V100)
    assert custom.link(CPU0, GPU0) is cm.NVLINK_V100  # no bus in the profile: the machine's intra-task link
    h100 = cm.MachineProfile({CPU0: cm.CPU, GPU0: cm.H100, GPU1: cm.H100})
    assert h100.link(CPU0, GPU0) is cm.PCIE_5_X16 and h100.link(GPU0, GPU1) is cm.NVLINK_H100
    assert h100.transfer_resources(GPU0, GPU1) == (f"{GPU0} NVLink out", f"{GPU1} NVLink in")
    # a machine given an intra-task link joins its GPUs by it, NVLink boards or not (what-ifs over the link)
    pcie = cm.MachineProfile({GPU0: dataclasses.replace(cm.H100, host_bus=None), GPU1: cm.H100},
                             intra_task_link=cm.PCIE_3_X16)
    assert pcie.link(GPU0, GPU1) is cm.PCIE_5_X16 and pcie.transfer_resources(GPU0, GPU1)[0] == f"{GPU0} bus out"
    assert machine.link(worker, ps) is cm.ETHERNET_10G
    assert machine.link(GPU0, worker) is cm.ETHERNET_10G


def test_links_and_link_resources_can_be_overridden_in_legacy_spelling():
    machine = cm.MachineProfile(
        {GPU0: cm.TESLA_V100, GPU1: cm.TESLA_V100},
        links={("/job:localhost/replica:0/task:0/gpu:0", GPU1): cm.NVLINK_V100},
        link_resources={(GPU0, GPU1): "nvlink-0-1"},
    )
    assert machine.link(GPU0, GPU1) is cm.NVLINK_V100
    assert machine.link(GPU1, GPU0) is cm.NVLINK_V100  # the boards' own NVLink
    assert machine.transfer_resources(GPU0, GPU1) == ("nvlink-0-1",)
    assert machine.transfer_resources(GPU1, GPU0) == (f"{GPU1} NVLink out", f"{GPU0} NVLink in")
    linked = cm.MachineProfile({GPU0: cm.TESLA_K20M, GPU1: cm.TESLA_K20M}, links={(GPU0, GPU1): cm.NVLINK_V100})
    assert linked.transfer_resources(GPU0, GPU1) == (f"{GPU0} -> {GPU1}",)  # a dedicated link: its own channel


def test_cross_task_transfers_hold_the_senders_and_the_receivers_interface():
    machine = cm.MachineProfile({})
    ps = "/job:ps/replica:0/task:0/device:CPU:0"
    w0, w1 = (f"/job:worker/replica:0/task:{i}/device:GPU:0" for i in range(2))
    assert machine.transfer_resources(w0, ps) == ("/job:worker/replica:0/task:0 NIC out",
                                                  "/job:ps/replica:0/task:0 NIC in")
    assert machine.transfer_resources(w1, ps)[1] == machine.transfer_resources(w0, ps)[1]
    # a broadcast's messages share the sender's outbound port
    assert machine.transfer_resources(ps, w0)[0] == machine.transfer_resources(ps, w1)[0] == \
        "/job:ps/replica:0/task:0 NIC out"
    assert cm.nic_ports("/job:a/replica:0/task:0", "/job:b/replica:0/task:1") == machine.transfer_resources(
        "/job:a/replica:0/task:0/device:CPU:0", "/job:b/replica:0/task:1/device:CPU:0")


def test_transfers_within_a_task_hold_each_gpus_bus_and_the_hosts_memory():
    machine = cm.default_machine(4)
    gpus = [f"/job:localhost/replica:0/task:0/device:GPU:{i}" for i in range(4)]
    assert machine.transfer_resources(gpus[1], gpus[0]) == (f"{gpus[1]} bus out", f"{gpus[0]} bus in")
    assert machine.transfer_resources(CPU0, gpus[0]) == ("/job:localhost/replica:0/task:0 host memory",
                                                        f"{gpus[0]} bus in")
    assert machine.transfer_resources(gpus[2], CPU0) == (f"{gpus[2]} bus out",
                                                        "/job:localhost/replica:0/task:0 host memory")
    assert machine.transfer_resources(CPU0, CPU0) == ()
    # the nominal host's 20 GB/s memory takes three 6 GB/s PCIe 2.0 copies at once
    assert machine.capacities() == {"/job:localhost/replica:0/task:0 host memory": 3}


def test_unknown_and_partial_device_names_are_reported():
    machine = cm.default_machine(num_gpus=1)
    with pytest.raises(KeyError, match="Unknown device '/job:localhost/replica:0/task:0/device:GPU:3'.*GPU:0"):
        machine.device(PREFIX + "GPU:3")
    with pytest.raises(ValueError, match="must give job, replica, task, type and index"):
        machine.device("/gpu:0")


# -- op costs ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "ta, tb, a, b",
    [(False, False, (2, 3), (3, 5)), (True, False, (3, 2), (3, 5)),
     (False, True, (2, 3), (5, 3)), (True, True, (3, 2), (5, 3))],
)
def test_matmul_cost_honours_transpose_attrs(ta, tb, a, b):
    cost = cm.op_cost("MatMul", [a, b], [(2, 5)], 4, {"transpose_a": ta, "transpose_b": tb})
    assert cost == cm.OpCost(2 * 2 * 3 * 5, (6 + 15 + 10) * 4)


def test_matmul_cost_from_a_built_op_and_its_attrs():
    a = tf.placeholder(tf.float32, [64, 128])
    b = tf.placeholder(tf.float32, [256, 128])
    op = tf.matmul(a, b, transpose_b=True).op
    shapes = [tuple(t.shape.as_list()) for t in op.inputs]
    cost = cm.op_cost(op.type, shapes, [tuple(op.outputs[0].shape.as_list())], 4, op.attrs)
    assert cost.flops == 2 * 64 * 128 * 256


def test_elementwise_costs_one_flop_per_output_and_every_element_touched_once():
    cost = cm.op_cost("Add", [(3, 1), (1, 4)], [(3, 4)], 8)
    assert cost == cm.OpCost(12, (3 + 4 + 12) * 8)
    for op_type in ("Sub", "Mul", "RealDiv", "Neg", "Maximum"):
        assert cm.op_cost(op_type, [(10,), (10,)], [(10,)]).flops == 10
    assert cm.op_cost("SquaredDifference", [(10,), (10,)], [(10,)]).flops == 20
    assert cm.op_cost("Sigmoid", [(10,)], [(10,)]).flops == 40
    assert cm.op_cost("AddN", [(4, 5)] * 3, [(4, 5)]).flops == 2 * 20


def test_reduction_costs():
    # Sum over axis 1 of a 2x3: inputs x and axes=[1]; 2 rows of 2 adds each.
    assert cm.op_cost("Sum", [(2, 3), (1,)], [(2,)]) == cm.OpCost(4, (6 + 1 + 2) * 4)
    assert cm.op_cost("Sum", [(2, 3), (2,)], [()]).flops == 5
    assert cm.op_cost("Mean", [(2, 3), (1,)], [(2,)]).flops == 6
    assert cm.op_cost("ArgMax", [(8, 10), ()], [(8,)]).flops == 72


def test_softmax_and_cross_entropy_costs():
    assert cm.op_cost("Softmax", [(8, 10)], [(8, 10)]) == cm.OpCost(400, 160 * 4)
    xent = cm.op_cost("SoftmaxCrossEntropyWithLogits", [(8, 10), (8, 10)], [(8,), (8, 10)])
    assert xent == cm.OpCost(9 * 80, (80 + 80 + 8 + 80) * 4)
    sparse = cm.op_cost("SparseSoftmaxCrossEntropyWithLogits", [(8, 10), (8,)], [(8,), (8, 10)])
    assert sparse.flops == 6 * 80 + 8


def test_bookkeeping_ops_are_free_and_unregistered_ops_fall_back():
    assert cm.op_cost("Identity", [(1000,)], [(1000,)]) == cm.OpCost(0, 0)
    assert cm.op_cost("Reshape", [(10, 10), (1,)], [(100,)]) == cm.OpCost(0, 0)
    assert registry.cost_function("NoSuchOpType") is None
    assert cm.op_cost("NoSuchOpType", [(2, 3), (3,)], [(4, 5), (2,)], 2) == cm.OpCost(22, (6 + 3 + 20 + 2) * 2)


def test_every_per_element_op_counts_its_table_entry():
    for op_type, per_element in op_costs.FLOPS_PER_ELEMENT.items():
        assert cm.op_cost(op_type, [(7,), (7,)], [(7,)]).flops == 7 * per_element, op_type


def test_registered_cost_functions_receive_shapes_and_attrs():
    op_type = f"TestCost_{uuid.uuid4().hex}"
    seen = []

    @registry.RegisterCost(op_type)
    def _cost(input_shapes, output_shapes, attrs):
        seen.append((input_shapes, output_shapes, attrs))
        return 7, 3

    assert cm.op_cost(op_type, [[2, 3]], [()], 2, {"k": 1}) == cm.OpCost(7, 6)
    assert seen == [([(2, 3)], [()], {"k": 1})]
    with pytest.raises(KeyError, match="Registering two cost functions"):
        registry.RegisterCost(op_type)(_cost)


def test_op_cost_needs_known_shapes():
    with pytest.raises(ValueError, match="fully known shapes"):
        cm.op_cost("Add", [(None, 3), (3,)], [(2, 3)])


# -- times ------------------------------------------------------------------------
def test_op_time_is_the_roofline():
    # 1024^3 matmul: 2.1 GFLOP vs 12.6 MB: compute-bound on a K20m.
    big = cm.op_cost("MatMul", [(1024, 1024)] * 2, [(1024, 1024)])
    assert cm.op_time_s(big, cm.TESLA_K20M) == pytest.approx(5e-6 + 2 * 1024**3 / (0.8 * 3.52e12))  # achieved
    # Adding two 1M-element vectors: 1 MFLOP vs 12 MB: memory-bound.
    add = cm.op_cost("Add", [(10**6,), (10**6,)], [(10**6,)])
    assert cm.op_time_s(add, cm.TESLA_K20M) == pytest.approx(5e-6 + 12e6 / (0.8 * 208e9))
    assert cm.op_time_s(cm.OpCost(0, 0), cm.CPU) == 0.0  # graph plumbing launches nothing
    assert cm.op_time_s(cm.OpCost(1, 0), cm.CPU) == pytest.approx(cm.CPU.launch_overhead_s + 1 / 100e9)
    assert cm.op_time_s(big, cm.H100) < cm.op_time_s(big, cm.TESLA_V100) < cm.op_time_s(big, cm.TESLA_K20M)


def test_transfer_time_is_latency_plus_bytes_over_bandwidth():
    assert cm.transfer_time_s(11.8125e6, cm.PCIE_3_X16) == pytest.approx(10e-6 + 1e-3)
    assert cm.transfer_time_s(MODEL_BYTES, cm.ETHERNET_10G) == pytest.approx(1.2 + 50e-6)
    assert cm.transfer_time_s(MODEL_BYTES, cm.LOOPBACK) == 0.0


# -- collectives (seeds: 300 M float32 params, 1 GB/s) ------------------------------
def test_ring_allreduce_formula():
    link = cm.LinkProfile("test", 1e9, 1e-3)
    assert cm.ring_allreduce_time_s(4e9, 4, link) == pytest.approx(6 * 1e-3 + 6 / 4 * 4.0)
    assert cm.ring_allreduce_time_s(MODEL_BYTES, 1, link) == 0.0


def test_seeds_parameter_server_numbers():
    # 10 workers push 1.2 GB each through one 1 GB/s PS link: 12 s (+10 latencies),
    # in the seeds' "10-20 s per batch"; push and pull overlap on the full-duplex link.
    t10 = cm.ps_sync_time_s(MODEL_BYTES, 10, cm.ETHERNET_10G)  # max(n, s) = 10 messages on the PS's port
    assert 10.0 <= t10 <= 12.001 and t10 == pytest.approx(12.0 + 10 * 50e-6)
    # The seeds' / Baidu's 10.8 s: 10 GPUs, one of them the reducer, 9 senders.
    assert cm.ps_sync_time_s(MODEL_BYTES, 9, cm.ETHERNET_10G) == pytest.approx(10.8, rel=1e-4)
    # Baidu's 2-GPU figure: 1.2 s.
    assert cm.ps_sync_time_s(MODEL_BYTES, 1, cm.ETHERNET_10G) == pytest.approx(1.2, rel=1e-4)
    # Half-duplex: push then pull; two PS shards halve each message.
    assert cm.ps_sync_time_s(MODEL_BYTES, 10, cm.ETHERNET_10G, full_duplex=False) == pytest.approx(2 * t10)
    assert cm.ps_sync_time_s(MODEL_BYTES, 10, cm.ETHERNET_10G, n_ps=2) == pytest.approx(6.0 + 10 * 50e-6)


def test_ps_step_is_bound_by_each_workers_own_interface():
    # 1 worker, 10 shards: the worker's NIC still sends all 1.2 GB (was 0.12 s: n·(α + K/(s·B)))
    assert cm.ps_sync_time_s(MODEL_BYTES, 1, cm.ETHERNET_10G, n_ps=10) == pytest.approx(1.2 + 10 * 50e-6)
    # 2 workers, 4 shards: each worker's 4 messages of 0.3 GB queue on its NIC (was 0.60 s)
    assert cm.ps_sync_time_s(MODEL_BYTES, 2, cm.ETHERNET_10G, n_ps=4) == pytest.approx(1.2 + 4 * 50e-6)


def test_seeds_ring_allreduce_number():
    assert cm.ring_allreduce_time_s(MODEL_BYTES, 10, cm.ETHERNET_10G) == pytest.approx(2 * 9 / 10 * 1.2 + 18 * 50e-6)
    assert cm.ring_allreduce_time_s(MODEL_BYTES, 10, cm.ETHERNET_10G) == pytest.approx(2.16, abs=0.001)


def test_ps_grows_linearly_with_workers_while_ring_stays_flat():
    ns = range(2, 33)
    ps = [cm.ps_sync_time_s(MODEL_BYTES, n, cm.ETHERNET_10G) for n in ns]
    ring = [cm.ring_allreduce_time_s(MODEL_BYTES, n, cm.ETHERNET_10G) for n in ns]
    step = 1.2 + 50e-6
    assert all(later - earlier == pytest.approx(step) for earlier, later in zip(ps, ps[1:]))
    assert all(1.2 <= r < 2.4 + 64 * 50e-6 for r in ring)
    assert all(r2 >= r1 for r1, r2 in zip(ring, ring[1:]))
    assert ring[-1] - ring[0] < 1.2  # 2(N-1)/N goes from 1 to 1.94: bounded by 2K/B
    assert ps[-1] / ring[-1] > 15  # 32 workers: PS ≈ 38 s, ring ≈ 2.3 s


def test_collective_counts_must_be_positive_integers():
    with pytest.raises(ValueError, match="n must be a positive integer"):
        cm.ring_allreduce_time_s(1.0, 0, cm.ETHERNET_10G)
    with pytest.raises(ValueError, match="n_ps must be a positive integer"):
        cm.ps_sync_time_s(1.0, 2, cm.ETHERNET_10G, n_ps=1.5)
