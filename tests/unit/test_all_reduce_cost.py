"""Time of the collectives: simulated clock vs α-β formulas, the seeds' PS-vs-ring numbers, the nccl-tests table."""

import re

import numpy as np
import pytest

from dfcore.bench import all_reduce as bench
from dfcore.distribute import all_reduce, build_schedule, predicted_time_s, ps_vs_ring_curve, simulate_schedule
from dfcore.distribute.collective_cost import cluster_machine
from dfcore.runtime import cost_model


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("algorithm", ["ring", "reduce_to_one", "tree", "recursive_halving_doubling"])
def test_simulated_time_matches_the_alpha_beta_prediction_on_a_cluster(algorithm, n):
    machine, workers, _ = cluster_machine(n)
    k = 1 << 20
    schedule = build_schedule(algorithm, n, k)
    simulated = simulate_schedule(schedule, workers, machine, 4).makespan_s
    predicted = predicted_time_s(algorithm, k, 4, workers, machine)
    if algorithm in ("ring", "reduce_to_one") or n in (2, 4, 8) and algorithm == "recursive_halving_doubling":
        assert simulated == pytest.approx(predicted, rel=1e-9)
    else:  # the tree formula is round-synchronous: an upper bound
        assert simulated <= predicted * (1 + 1e-9)


def test_ring_prediction_is_the_cost_model_formula_plus_the_reduction_term():
    machine, workers, _ = cluster_machine(4)
    k = 4 << 20
    gpu = cost_model.TESLA_K20M
    piece_bytes = k * 4 // 4  # K/N bytes
    reduce_s = cost_model.op_time_s(cost_model.OpCost(piece_bytes // 4, 3 * piece_bytes), gpu)
    want = cost_model.ring_allreduce_time_s(k * 4, 4, cost_model.ETHERNET_10G) + 3 * reduce_s
    assert predicted_time_s("ring", k, 4, workers, machine) == pytest.approx(want, rel=1e-12)


def test_runtime_result_reports_simulated_predicted_and_wall_time():
    result = all_reduce([np.ones(1000, np.float32)] * 4)
    assert result.simulated_time_s == pytest.approx(result.predicted_time_s, rel=1e-9)
    assert result.simulated_time_s > 6 * cost_model.PCIE_3_X16.latency_s
    assert result.wall_time_s > 0
    mean = all_reduce([np.ones(1000, np.float32)] * 4, reduction="mean")
    assert mean.simulated_time_s > result.simulated_time_s  # the division is an op too


def test_ps_vs_ring_reproduces_the_seeds_numbers():
    points = {p.num_workers: p for p in ps_vs_ring_curve(workers=[2, 10, 20, 32])}
    ten = points[10]
    # the PS's inbound port carries 10 × 1.2 GB (12 s, the formula's pipelined bound); the last of the
    # 10 parts then goes back out through its outbound port to 10 workers: + 10 × 0.12 GB = 1.2 s
    assert ten.ps_simulated_s >= ten.ps_formula_s
    assert ten.ps_simulated_s == pytest.approx(ten.ps_formula_s + 1.2, rel=0.01)
    assert ten.ring_simulated_s == pytest.approx(2.16, abs=0.05)
    assert ten.ring_simulated_s == pytest.approx(ten.ring_formula_s, rel=0.02)
    # PS grows linearly with the workers, the ring stays flat
    assert points[32].ps_simulated_s / points[10].ps_simulated_s == pytest.approx(3.2, rel=0.03)
    assert points[32].ring_simulated_s / points[2].ring_simulated_s < 2.0
    assert points[32].ring_simulated_s < 2.4


def test_parse_size_and_busbw():
    assert bench.parse_size("1K") == 1024 and bench.parse_size("16M") == 16 << 20 and bench.parse_size("8") == 8
    assert bench.bus_bandwidth(3.0, 4) == pytest.approx(4.5)
    assert bench.count_wrong([np.array([3.0, 1.0])], [np.array([1.0, 0.0]), np.array([2.0, 0.0])], "sum") == 1


def test_bench_prints_the_nccl_tests_table(capsys):
    bench.main(["-b", "1K", "-e", "4K", "-f", "2", "-n", "4", "--algo", "ring", "--time", "simulated",
                "--iters", "1", "-w", "0"])
    lines = capsys.readouterr().out.splitlines()
    assert bench.HEADER.splitlines()[1] in lines
    rows = [line for line in lines if not line.startswith("#")]
    assert len(rows) == 3
    fields = rows[0].split()
    assert fields[:5] == ["1024", "256", "float", "sum", "-1"]
    time_us, algbw, busbw, wrong = float(fields[5]), float(fields[6]), float(fields[7]), int(fields[8])
    assert wrong == 0 and int(fields[12]) == 0
    assert busbw == pytest.approx(algbw * 1.5, abs=0.011)
    assert time_us == pytest.approx(all_reduce([np.zeros(256, np.float32)] * 4).simulated_time_s * 1e6, abs=0.01)
    average = float(re.search(r"# Avg bus bandwidth\s+: (\S+)", "\n".join(lines)).group(1))
    busbws = [float(r.split()[i]) for r in rows for i in (7, 11)]
    assert average == pytest.approx(sum(busbws) / len(busbws), abs=0.01)
