"""The simulated clock's laws as properties: for random rank counts, sizes, links and placements (GPUs of one
task on their buses, or one task each on a network) no collective is faster than its α-β lower bound, and
the simulation equals the closed form where the schedule is ideal.

Bounds (K bytes per rank, B bandwidth, α latency; Patarasuk & Yuan 2009, Thakur, Rabenseifner & Gropp 2005):
ring all-reduce ≥ 2(N−1)/N·K/B + 2(N−1)α; a reducer's inbound port carries (N−1)·K, a broadcaster's outbound
port (N−1)·K; each parameter-server worker's port carries K each way: ≥ max(n·K/(s·B), K/B)."""

import pytest
from hypothesis import given, settings, strategies as st

from dfcore.distribute import collective_cost, schedules
from dfcore.runtime import cost_model as cm
from dfcore.runtime.sim_clock import SimTask, simulate

LAWS = settings(max_examples=25, deadline=None)
ranks = st.integers(2, 8)
elements = st.integers(64, 200_000)
bandwidths = st.sampled_from([1e9, 6e9, 12e9, 135e9])
latencies = st.sampled_from([0.0, 2e-6, 10e-6, 50e-6])
placements = st.sampled_from(["bus", "network"])


def _machine(n, link, placement):
    """``n`` GPUs, either in one task on their own ``link`` buses, or one task each on a ``link`` network."""
    board = cm.DeviceProfile("GPU", "GPU", 1e13, 1e12, 10**10, 0.0, link if placement == "bus" else None)
    if placement == "bus":
        devices = [f"/job:w/replica:0/task:0/device:GPU:{i}" for i in range(n)]
        return cm.MachineProfile(dict.fromkeys(devices, board)), tuple(devices)
    devices = [f"/job:w/replica:0/task:{i}/device:GPU:0" for i in range(n)]
    return cm.MachineProfile(dict.fromkeys(devices, board), inter_task_link=link), tuple(devices)


def _replay(algorithm, n, num_elements, link, placement):
    machine, devices = _machine(n, link, placement)
    schedule = schedules.build_schedule(algorithm, n, num_elements)
    simulated = collective_cost.simulate_schedule(schedule, devices, machine, 4).makespan_s
    return simulated, collective_cost.predicted_time_s(algorithm, num_elements, 4, devices, machine)


@LAWS
@given(ranks, elements, bandwidths, latencies, placements)
def test_ring_all_reduce_never_beats_the_ring_bound_and_equals_its_formula(n, k, bw, alpha, placement):
    link = cm.LinkProfile("l", bw, alpha)
    simulated, predicted = _replay("ring", n, k, link, placement)
    assert simulated >= cm.ring_allreduce_time_s(4 * k, n, link) * (1 - 1e-9)
    if k % n == 0:  # equal chunks: the schedule is ideal
        assert simulated == pytest.approx(predicted, rel=1e-9)


@LAWS
@given(ranks, elements, bandwidths, latencies, placements)
def test_reduce_to_one_carries_n_minus_1_messages_through_the_roots_ports(n, k, bw, alpha, placement):
    link = cm.LinkProfile("l", bw, alpha)
    simulated, predicted = _replay("reduce_to_one", n, k, link, placement)
    one = cm.transfer_time_s(4 * k, link)
    assert simulated >= 2 * (n - 1) * one * (1 - 1e-9)  # in through its inbound port, then out through its outbound
    assert simulated == pytest.approx(predicted, rel=1e-9)


@LAWS
@given(ranks, elements, bandwidths, latencies, placements)
def test_tree_never_beats_its_roots_ports(n, k, bw, alpha, placement):
    link = cm.LinkProfile("l", bw, alpha)
    simulated, predicted = _replay("tree", n, k, link, placement)
    children = min(n - 1, 2)  # the root of the binary tree gathers from and broadcasts to its children
    assert simulated >= 2 * children * cm.transfer_time_s(4 * k, link) * (1 - 1e-9)
    assert simulated <= predicted * (1 + 1e-9)  # the replay pipelines the round-synchronous formula


def _fan(n, nbytes, link, placement, inward):
    machine, devices = _machine(n, link, placement)
    root, others = devices[0], devices[1:]
    tasks = [SimTask(f"m{i}", machine.transfer_resources(*((d, root) if inward else (root, d))),
                     cm.transfer_time_s(nbytes, machine.link(root, d))) for i, d in enumerate(others)]
    return simulate(tasks, machine.capacities()).makespan_s


@LAWS
@given(ranks, elements, bandwidths, latencies, placements, st.booleans())
def test_a_broadcast_or_a_reduce_is_n_minus_1_transfers_at_the_roots_port(n, k, bw, alpha, placement, inward):
    link = cm.LinkProfile("l", bw, alpha)
    makespan = _fan(n, 4 * k, link, placement, inward)
    assert makespan >= (n - 1) * 4 * k / bw * (1 - 1e-9)
    assert makespan == pytest.approx((n - 1) * cm.transfer_time_s(4 * k, link), rel=1e-9)  # ideal: back to back


@LAWS
@given(st.integers(1, 8), st.integers(1, 6), elements, bandwidths, latencies)
def test_a_ps_step_never_beats_each_workers_port(workers, shards, k, bw, alpha):
    link = cm.LinkProfile("l", bw, alpha)
    nbytes = 4 * k
    formula = cm.ps_sync_time_s(nbytes, workers, link, n_ps=shards)
    assert formula >= max(workers * nbytes / (shards * bw), nbytes / bw) * (1 - 1e-9)
    # the pushes, simulated: worker w sends K/s to every shard, each message holding both NICs
    tasks = [SimTask(f"w{w}->ps{j}", cm.nic_ports(f"/job:worker/replica:0/task:{w}", f"/job:ps/replica:0/task:{j}"),
                     cm.transfer_time_s(nbytes / shards, link), priority=(j - w) % shards)
             for w in range(workers) for j in range(shards)]
    pushes = simulate(tasks).makespan_s
    assert pushes >= max(workers * nbytes / (shards * bw), nbytes / bw) * (1 - 1e-9)
    assert pushes == pytest.approx(formula, rel=1e-9)  # staggered shard order: the one-direction formula
