"""Simulated clock: hand-computed schedules, tie-breaking, determinism against a brute-force
reference scheduler, errors, scale, and replay of executed-node records on a machine profile."""

import random
import time

import pytest

from dfcore.runtime import cost_model as cm
from dfcore.runtime.sim_clock import (
    NodeRecord,
    SimTask,
    TransferRecord,
    build_tasks,
    simulate,
    simulate_step,
    transfer_task_name,
)

PREFIX = "/job:localhost/replica:0/task:0/device:"
CPU0, GPU0, GPU1 = PREFIX + "CPU:0", PREFIX + "GPU:0", PREFIX + "GPU:1"


def schedule(result):
    return {name: (result.start_s[name], result.end_s[name]) for name in result.order}


# -- hand-computed schedules ------------------------------------------------------
def test_independent_ops_on_two_devices_overlap():
    result = simulate([SimTask("a", "d0", 1.0), SimTask("b", "d1", 2.0)])
    assert schedule(result) == {"a": (0.0, 1.0), "b": (0.0, 2.0)}
    assert result.makespan_s == 2.0
    assert dict(result.busy_s) == {"d0": 1.0, "d1": 2.0}
    assert dict(result.utilization) == {"d0": 0.5, "d1": 1.0}


def test_ops_on_one_device_serialize():
    result = simulate([SimTask("b", "d0", 2.0), SimTask("a", "d0", 1.0)])
    assert schedule(result) == {"a": (0.0, 1.0), "b": (1.0, 3.0)}
    assert result.order == ("a", "b") and result.makespan_s == 3.0 and result.utilization["d0"] == 1.0


def test_transfer_waits_for_its_producer_and_for_the_link():
    tasks = [
        SimTask("early", "d0", 1.0),
        SimTask("late", "d0", 2.0, deps=("early",)),
        SimTask("send_early", "link", 3.0, deps=("early",)),
        SimTask("send_late", "link", 1.0, deps=("late",)),
        SimTask("use_early", "d1", 1.0, deps=("send_early",)),
        SimTask("use_late", "d1", 1.0, deps=("send_late",)),
    ]
    # send_late is ready at 3 but the link carries send_early until 4.
    assert schedule(simulate(tasks)) == {
        "early": (0.0, 1.0), "late": (1.0, 3.0), "send_early": (1.0, 4.0),
        "send_late": (4.0, 5.0), "use_early": (4.0, 5.0), "use_late": (5.0, 6.0),
    }


def test_ready_ties_break_by_priority_then_name():
    tasks = [SimTask("a", "d0", 1.0, priority=1), SimTask("c", "d0", 1.0), SimTask("b", "d0", 1.0),
             SimTask("a2", "d0", 1.0, priority=-1)]
    result = simulate(tasks)
    assert result.order == ("a2", "b", "c", "a")
    assert [result.start_s[n] for n in result.order] == [0.0, 1.0, 2.0, 3.0]


def test_a_running_task_is_never_preempted():
    tasks = [SimTask("gate", "d1", 0.5), SimTask("slow", "d0", 2.0, priority=9),
             SimTask("urgent", "d0", 1.0, deps=("gate",), priority=0)]
    assert schedule(simulate(tasks)) == {"gate": (0.0, 0.5), "slow": (0.0, 2.0), "urgent": (2.0, 3.0)}


def test_completions_at_an_instant_come_before_starts_at_that_instant():
    # At t=1 d0 frees up; "q" (priority 5) waited since 0, "y" (priority 0) became ready at 1.
    tasks = [SimTask("p", "d0", 1.0), SimTask("q", "d0", 1.0, priority=5, deps=()),
             SimTask("x", "d1", 1.0), SimTask("y", "d0", 1.0, deps=("x",))]
    assert schedule(simulate(tasks))["y"] == (1.0, 2.0)
    assert schedule(simulate(tasks))["q"] == (2.0, 3.0)


def test_zero_duration_tasks_chain_within_one_instant():
    tasks = [SimTask("a", "d0", 1.0), SimTask("b", "d1", 0.0, deps=("a",)),
             SimTask("c", "d0", 0.0, deps=("b",)), SimTask("d", "d0", 2.0, deps=("c",))]
    result = simulate(tasks)
    assert schedule(result) == {"a": (0.0, 1.0), "b": (1.0, 1.0), "c": (1.0, 1.0), "d": (1.0, 3.0)}
    assert result.utilization["d1"] == 0.0


def test_empty_task_list():
    result = simulate([])
    assert result.makespan_s == 0.0 and result.order == () and dict(result.busy_s) == {}


def test_ring_allreduce_replay_matches_the_alpha_beta_formula():
    n, nbytes, link = 5, 1e9, cm.ETHERNET_10G
    chunk_s = cm.transfer_time_s(nbytes / n, link)
    tasks = []
    for step in range(2 * (n - 1)):
        for rank in range(n):
            prev = f"s{step - 1}r{(rank - 1) % n}"  # what this rank received last step
            tasks.append(SimTask(f"s{step}r{rank}", f"link{rank}->{(rank + 1) % n}", chunk_s,
                                 deps=(prev,) if step else ()))
    assert simulate(tasks).makespan_s == pytest.approx(cm.ring_allreduce_time_s(nbytes, n, link))


# -- determinism against a brute-force reference ----------------------------------
def random_dag(rng, n_tasks, n_resources, max_deps):
    tasks = []
    for i in range(n_tasks):
        deps = tuple(f"t{j}" for j in rng.sample(range(i), min(i, rng.randint(0, max_deps))))
        tasks.append(SimTask(f"t{i}", f"r{rng.randrange(n_resources)}", float(rng.randint(1, 4)),
                             deps, rng.randint(0, 2)))
    return tasks


def reference_schedule(tasks):
    """Time-stepped list scheduling: at each instant, every free resource takes its
    smallest (priority, name) ready task; O(n^2), obviously following the rules."""
    by_name = {t.name: t for t in tasks}
    start, end = {}, {}
    now = 0.0
    while len(start) < len(tasks):
        busy = {by_name[n].resource for n in start if end[n] > now}
        ready = [t for t in tasks if t.name not in start and all(d in end and end[d] <= now for d in t.deps)]
        for resource in sorted({t.resource for t in ready} - busy):
            best = min((t for t in ready if t.resource == resource), key=lambda t: (t.priority, t.name))
            start[best.name], end[best.name] = now, now + best.duration_s
        now = min(e for e in end.values() if e > now)
    return start, end


@pytest.mark.parametrize("seed", range(5))
def test_schedule_matches_the_reference_and_ignores_input_order(seed):
    rng = random.Random(seed)
    tasks = random_dag(rng, 60, 4, 3)
    result = simulate(tasks)
    start, end = reference_schedule(tasks)
    assert dict(result.start_s) == start and dict(result.end_s) == end
    shuffled = tasks[:]
    rng.shuffle(shuffled)
    assert simulate(shuffled) == result


def test_large_schedules_are_valid_and_fast():
    rng = random.Random(7)
    tasks = random_dag(rng, 10_000, 16, 3)
    begin = time.perf_counter()
    result = simulate(tasks)
    elapsed = time.perf_counter() - begin
    assert elapsed < 5.0  # n log n: ~0.1 s here
    assert len(result.order) == 10_000
    by_resource = {}
    for t in tasks:
        assert all(result.start_s[t.name] >= result.end_s[d] for d in t.deps)
        by_resource.setdefault(t.resource, []).append((result.start_s[t.name], result.end_s[t.name]))
    for intervals in by_resource.values():
        intervals.sort()
        assert all(a[1] <= b[0] for a, b in zip(intervals, intervals[1:]))
    assert sum(result.busy_s.values()) == pytest.approx(sum(t.duration_s for t in tasks))
    assert all(0.0 < u <= 1.0 for u in result.utilization.values())


# -- errors -----------------------------------------------------------------------
def test_unknown_dependency_is_named():
    with pytest.raises(ValueError, match="SimTask 'b' depends on unknown task 'ghost'"):
        simulate([SimTask("a", "d0", 1.0), SimTask("b", "d0", 1.0, deps=("a", "ghost"))])


def test_cycles_are_named():
    tasks = [SimTask("a", "d0", 1.0, deps=("c",)), SimTask("b", "d0", 1.0, deps=("a",)),
             SimTask("c", "d1", 1.0, deps=("b",)), SimTask("d", "d1", 1.0, deps=("c",)), SimTask("e", "d0", 1.0)]
    with pytest.raises(ValueError, match="cycle: 'a' depends on 'c' depends on 'b' depends on 'a'"):
        simulate(tasks)
    with pytest.raises(ValueError, match="cycle: 'x' depends on 'x'"):
        simulate([SimTask("x", "d0", 1.0, deps=("x",))])


def test_bad_tasks_are_rejected():
    with pytest.raises(ValueError, match="Two SimTasks are named 'a'"):
        simulate([SimTask("a", "d0", 1.0), SimTask("a", "d1", 1.0)])
    with pytest.raises(ValueError, match="duration_s=-1.0"):
        simulate([SimTask("a", "d0", -1.0)])
    with pytest.raises(ValueError, match="duration_s=nan"):
        simulate([SimTask("a", "d0", float("nan"))])


# -- replay of executed-node records ----------------------------------------------
MATMUL = cm.op_cost("MatMul", [(1000, 1000)] * 2, [(1000, 1000)])
MATMUL_S = cm.op_time_s(MATMUL, cm.TESLA_K20M)


def test_two_matmuls_on_two_gpus_overlap_and_on_one_gpu_serialize():
    machine = cm.default_machine()
    apart = simulate_step([NodeRecord("m0", GPU0, MATMUL), NodeRecord("m1", GPU1, MATMUL)], [], machine)
    together = simulate_step([NodeRecord("m0", GPU0, MATMUL), NodeRecord("m1", GPU0, MATMUL)], [], machine)
    assert apart.makespan_s == pytest.approx(MATMUL_S)
    assert together.makespan_s == pytest.approx(2 * MATMUL_S)


def test_transfers_become_link_tasks_between_producer_and_consumer():
    machine = cm.default_machine()
    nbytes = 1000 * 1000 * 4
    nodes = [NodeRecord("m0", GPU0, MATMUL, priority=0), NodeRecord("id", GPU0, cm.OpCost(0, 0), deps=("m0",)),
             NodeRecord("add", GPU1, cm.OpCost(10**6, 12 * 10**6), priority=3)]
    transfers = [TransferRecord("m0", "add", nbytes), TransferRecord("m0", "id", nbytes)]
    tasks = {t.name: t for t in build_tasks(nodes, transfers, machine)}
    link = tasks[transfer_task_name("m0", "add")]
    assert link.name == "m0 -> add" and link.resources == (f"{GPU0} bus out", f"{GPU1} bus in")
    assert link.duration_s == pytest.approx(10e-6 + nbytes / 6e9)  # the K20m's PCIe 2.0 x16
    assert link.deps == ("m0",) and link.priority == 3
    assert tasks["add"].deps == ("m0 -> add",) and tasks["add"].resource == GPU1
    assert tasks["id"].deps == ("m0",)  # same device: no copy
    assert len(tasks) == 4
    result = simulate(list(tasks.values()))
    add_s = cm.op_time_s(cm.OpCost(10**6, 12 * 10**6), cm.TESLA_K20M)
    assert result.end_s["add"] == pytest.approx(MATMUL_S + link.duration_s + add_s)


def test_link_override_and_record_errors():
    machine = cm.default_machine()
    nodes = [NodeRecord("a", GPU0, cm.OpCost(0, 0)), NodeRecord("b", GPU1, cm.OpCost(0, 0))]
    (task,) = [t for t in build_tasks(nodes, [TransferRecord("a", "b", 135e9, cm.NVLINK_V100)], machine)
               if t.name == "a -> b"]
    assert task.duration_s == pytest.approx(1.0 + 5e-6)
    with pytest.raises(ValueError, match="names unknown node 'c'"):
        build_tasks(nodes, [TransferRecord("a", "c", 1)], machine)
    with pytest.raises(ValueError, match="Two TransferRecords from 'a' to 'b'"):
        build_tasks(nodes, [TransferRecord("a", "b", 1), TransferRecord("a", "b", 2)], machine)
    with pytest.raises(ValueError, match="Two NodeRecords are named 'a'"):
        build_tasks(nodes + nodes[:1], [], machine)
    with pytest.raises(KeyError, match="Unknown device"):
        build_tasks([NodeRecord("z", PREFIX + "GPU:7", cm.OpCost(0, 0))], [], machine)


def test_parameter_server_pushes_queue_on_the_ps_interface():
    ps = "/job:ps/replica:0/task:0/device:CPU:0"
    workers = [f"/job:worker/replica:0/task:{i}/device:GPU:0" for i in range(4)]
    machine = cm.MachineProfile({ps: cm.CPU, **{w: cm.TESLA_K20M for w in workers}})
    free = cm.OpCost(0, 0)
    nodes = [NodeRecord(f"grad{i}", w, free) for i, w in enumerate(workers)] + [NodeRecord("apply", ps, free)]
    transfers = [TransferRecord(f"grad{i}", "apply", 1.2e9) for i in range(4)]
    result = simulate_step(nodes, transfers, machine)
    push_s = cm.ps_sync_time_s(1.2e9, 4, cm.ETHERNET_10G)
    assert result.start_s["apply"] == pytest.approx(push_s)  # the free grad ops take no time
    assert result.busy_s["/job:ps/replica:0/task:0 NIC in"] == pytest.approx(push_s)
    assert [n for n in result.order if "->" in n] == [f"grad{i} -> apply" for i in range(4)]


# -- tasks holding several resources (a transfer holds both ends of its link) -------
def test_a_transfer_waits_for_both_of_its_ports():
    # "a" holds the sender's port; "b" wants it and the receiver's: it starts when "a" ends, while "c",
    # holding only the receiver's port, may not overtake "b" once "b" is ready first (priority order)
    tasks = [SimTask("a", "x out", 2.0), SimTask("b", ("x out", "y in"), 1.0, priority=0),
             SimTask("c", "y in", 1.0, priority=1)]
    result = simulate(tasks)
    assert result.start_s["b"] == 2.0 and result.end_s["b"] == 3.0
    assert result.start_s["c"] == 0.0  # "y in" is free while "b" waits for "x out": "c" uses it meanwhile
    assert result.busy_s["x out"] == 3.0 and result.busy_s["y in"] == 2.0


def test_messages_into_one_port_queue_and_a_fan_out_queues_on_the_senders_port():
    into = [SimTask(f"m{i}", (f"w{i} out", "ps in"), 1.0) for i in range(4)]
    assert simulate(into).makespan_s == 4.0  # (N-1)·K/B at the receiver's port
    out = [SimTask(f"m{i}", ("ps out", f"w{i} in"), 1.0) for i in range(4)]
    assert simulate(out).makespan_s == 4.0  # c·K/B at a broadcaster's port
    disjoint = [SimTask(f"m{i}", (f"w{i} out", f"w{(i + 1) % 4} in"), 1.0) for i in range(4)]
    assert simulate(disjoint).makespan_s == 1.0  # a ring step: every port carries one message


def test_capacity_lets_several_tasks_hold_a_resource():
    tasks = [SimTask(f"copy{i}", (f"gpu{i} bus out", "host memory"), 1.0) for i in range(4)]
    assert simulate(tasks).makespan_s == 4.0
    result = simulate(tasks, {"host memory": 3})
    assert result.makespan_s == 2.0 and sorted(result.end_s.values()) == [1.0, 1.0, 1.0, 2.0]
    assert result.utilization["host memory"] == pytest.approx(4.0 / (2.0 * 3))
    with pytest.raises(ValueError, match="capacities must be >= 1"):
        simulate(tasks, {"host memory": 0})
    with pytest.raises(ValueError, match="SimTask 'x' holds no resource"):
        simulate([SimTask("x", (), 1.0)])


def test_port_book_reserves_every_port_of_a_transfer():
    from dfcore.runtime.sim_clock import PortBook
    book = PortBook({"mem": 2})
    assert book.reserve(("a out", "b in"), 0.0, 1.0) == (0.0, 1.0)
    assert book.reserve(("c out", "b in"), 0.5, 1.0) == (1.0, 2.0)  # b's inbound port is busy until 1.0
    assert book.reserve(("a out", "d in"), 0.0, 1.0) == (1.0, 2.0)  # a's outbound port likewise
    trial = book.copy()
    assert trial.reserve(("mem",), 0.0, 3.0) == (0.0, 3.0) and trial.reserve(("mem",), 0.0, 3.0) == (0.0, 3.0)
    assert trial.earliest(("mem",), 0.0) == 3.0 and book.earliest(("mem",), 0.0) == 0.0  # the copy is separate


def test_copies_into_one_host_or_one_gpu_share_its_memory_or_its_bus():
    machine = cm.default_machine(4)
    nbytes = 60 * 10**6
    gpus = [PREFIX + f"GPU:{i}" for i in range(4)]
    # 4 × 60 MB GPU → CPU: the 20 GB/s host memory takes three 6 GB/s copies at once, so 2 rounds of 10 ms
    nodes = [NodeRecord(f"out{i}", g, cm.OpCost(0, 0)) for i, g in enumerate(gpus)]
    nodes += [NodeRecord(f"in{i}", CPU0, cm.OpCost(0, 0)) for i in range(4)]
    copies = [TransferRecord(f"out{i}", f"in{i}", nbytes) for i in range(4)]
    one = cm.transfer_time_s(nbytes, cm.PCIE_2_X16)
    result = simulate_step(nodes, copies, machine)
    assert result.makespan_s == pytest.approx(2 * one)
    assert result.makespan_s >= 4 * nbytes / cm.CPU.mem_bandwidth_Bps  # never faster than the host's memory
    # GPU1 → GPU0 and CPU → GPU0: both enter through GPU0's one PCIe x16 link, one after the other
    nodes = [NodeRecord("g1", gpus[1], cm.OpCost(0, 0)), NodeRecord("c", CPU0, cm.OpCost(0, 0)),
             NodeRecord("r1", gpus[0], cm.OpCost(0, 0)), NodeRecord("r2", gpus[0], cm.OpCost(0, 0))]
    result = simulate_step(nodes, [TransferRecord("g1", "r1", nbytes), TransferRecord("c", "r2", nbytes)], machine)
    assert result.makespan_s == pytest.approx(2 * one)
