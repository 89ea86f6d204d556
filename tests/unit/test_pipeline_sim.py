"""Input pipelines on the simulated clock: periods, waits, starved shares and buffer levels against hand-built
schedules (map cost m per batch, step cost s, prefetch K, P map threads, a copy over a link)."""

import json

import numpy as np
import pytest

import dfcore as tf
from dfcore.data import pipeline_sim as ps
from dfcore.data.pipeline_run import lane_device, split_lane_device
from dfcore.runtime import cost_model
from dfcore.timeline import Timeline

HOST, GPU = ps.HOST, ps.ACCELERATOR
MS = 1e-3


def run(m_per_batch_s, s, prefetch, calls=4, parallel=1, steps=8, **kwargs):
    """A pipeline whose batch costs ``m_per_batch_s`` of map calls; no copy unless an accelerator is given."""
    kwargs.setdefault("accelerator", HOST)
    return ps.simulate_pipeline(ps.PipelineSpec(m_per_batch_s / calls, calls, parallel, prefetch, s, **kwargs), steps)


@pytest.mark.parametrize("m, s", [(4, 2), (2, 4), (3, 3)])
def test_without_prefetch_map_and_step_take_turns(m, s):
    r = run(m * MS, s * MS, prefetch=0)
    n = 8
    assert r.waits_us == (m * 1000,) * n  # every step waits for its whole batch
    assert r.step_ends_us == tuple((j + 1) * (m + s) * 1000 for j in range(n))
    assert r.period_us == (m + s) * 1000
    assert r.starved_fraction == pytest.approx(m / (m + s))
    assert r.idle_fraction == pytest.approx(m / (m + s))
    assert r.occupancy == {}


def test_prefetch_one_with_a_slow_map_runs_at_the_map_rate():
    m, s, n = 4, 2, 8
    r = run(m * MS, s * MS, prefetch=1)
    assert r.period_us == m * 1000  # max(m, s)
    assert r.waits_us == (m * 1000,) + ((m - s) * 1000,) * (n - 1)  # first batch whole, then m - s per step
    assert r.starved_fraction == pytest.approx((m + (n - 1) * (m - s)) / (n * m + s))
    assert r.step_ends_us[-1] == (n * m + s) * 1000


def test_prefetch_one_with_a_fast_map_keeps_the_accelerator_busy():
    m, s, n = 2, 4, 8
    r = run(m * MS, s * MS, prefetch=1)
    assert r.period_us == s * 1000  # max(m, s)
    assert r.waits_us == (m * 1000,) + (0,) * (n - 1)  # only the first batch is waited for
    assert r.starved_fraction == pytest.approx(m / (m + n * s))
    levels = [level for _, level in r.occupancy["Prefetch"]]
    assert max(levels) == 1 and min(levels) == 0  # a buffer of one batch, full while the step runs


def test_a_bigger_prefetch_buffer_fills_up_when_the_map_is_faster():
    r = run(1 * MS, 4 * MS, prefetch=3, steps=12)
    assert max(level for _, level in r.occupancy["Prefetch"]) == 3
    assert r.period_us == 4000


@pytest.mark.parametrize("parallel", [1, 2, 4])
def test_parallel_map_divides_the_batch_time_by_the_threads(parallel):
    m, s = 8, 1  # map-bound: the period is m / P (P divides the 8 calls per batch)
    r = run(m * MS, s * MS, prefetch=1, calls=8, parallel=parallel, steps=10)
    assert r.period_us == pytest.approx(max(m / parallel, s) * 1000)
    lanes = {split_lane_device(d.device)[1:]: len(d.node_stats) for d in r.step_stats.dev_stats
             if split_lane_device(d.device) and split_lane_device(d.device)[1] != "Prefetch"}
    stage = "ParallelMap" if parallel > 1 else "Map"
    assert lanes == {(stage, i): 10 * 8 // parallel for i in range(parallel)}  # round-robin over the threads


def test_parallel_map_without_prefetch_overlaps_its_threads_but_not_the_step():
    # 8 calls of 1 ms per batch on 2 threads: the batch takes 4 ms, then the step 8 ms; nothing prefetched.
    serial = run(8 * MS, 8 * MS, prefetch=0, calls=8, parallel=1)
    parallel = run(8 * MS, 8 * MS, prefetch=0, calls=8, parallel=2)
    assert serial.period_us == 16000 and parallel.period_us == 12000
    assert parallel.waits_us[1:] == (4000,) * 7


def test_the_copy_to_the_accelerator_costs_latency_plus_bytes_over_bandwidth():
    link = cost_model.LinkProfile("test link", 1e9, 100e-6)
    r = run(1 * MS, 3 * MS, prefetch=1, accelerator=GPU, batch_bytes=1_000_000, link=link)
    copy_us = 100 + 1000  # latency + 1 MB at 1 GB/s
    assert r.period_us == pytest.approx(3000 + copy_us)  # the loop asks for a batch after the step: copy serial
    recv = [ns for d in r.step_stats.dev_stats if d.device == GPU for ns in d.node_stats if ns.op_type == "_Recv"]
    assert len(recv) == 8 and all(ns.sim_end_micros - ns.sim_start_micros == copy_us for ns in recv)
    assert recv[0].output_bytes == (1_000_000,)


def test_lanes_are_device_step_stats_named_after_the_host():
    r = run(2 * MS, 1 * MS, prefetch=2, calls=4, parallel=2, accelerator=GPU)
    devices = [d.device for d in r.step_stats.dev_stats]
    assert devices == sorted([HOST, GPU, lane_device(HOST, "ParallelMap", 0), lane_device(HOST, "ParallelMap", 1),
                              lane_device(HOST, "Prefetch", 0)])
    assert lane_device(HOST, "Prefetch", 0) == "/job:localhost/replica:0/task:0/device:CPU:0/input:Prefetch/thread:0"
    assert split_lane_device(GPU) is None
    for host, stage, thread in ((HOST, "ParallelMap", 3), ("/job:worker/replica:0/task:2/device:CPU:0", "client", 0)):
        assert split_lane_device(lane_device(host, stage, thread)) == (host, stage, thread)  # one format, both ways
    host = next(d for d in r.step_stats.dev_stats if d.device == HOST)
    get_next = [ns for ns in host.node_stats if ns.op_type == "IteratorGetNext"]
    assert [ns.all_end_rel_micros for ns in get_next] == list(r.waits_us)
    assert all(ns.sim_start_micros == ns.all_start_micros for d in r.step_stats.dev_stats for ns in d.node_stats)


def test_feed_dict_is_the_client_preparing_each_batch():
    r = ps.simulate_pipeline(ps.PipelineSpec(0.5 * MS, 4, 1, 0, 3 * MS, stage="client", accelerator=HOST), 4)
    host = next(d for d in r.step_stats.dev_stats if d.device == HOST)
    assert {ns.op_type for ns in host.node_stats} == {"FeedDict", "TrainStep"}
    assert r.period_us == 5000 and r.name == "client x1, prefetch 0"


def test_the_runs_load_in_the_chrome_trace_on_the_simulated_clock():
    r = run(2 * MS, 1 * MS, prefetch=1, parallel=2, accelerator=GPU, batch_bytes=4096)
    trace = json.loads(Timeline(r.step_stats).generate_chrome_trace_format(time="simulated"))
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert f"{lane_device(HOST, 'ParallelMap', 1)} Compute" in names and f"{HOST} -> {GPU} Transfers" in names
    transfers = [e for e in trace["traceEvents"] if e.get("cat") == "Transfer"]
    assert len(transfers) == 8 and transfers[0]["args"]["bytes"] == 4096


def test_spec_of_a_tf_data_pipeline():
    x = np.zeros((64, 16), np.float32)
    ds = tf.data.Dataset.from_tensor_slices(x).map(lambda v: v * 2.0, 3, simulated_cost_s=0.002).batch(8)
    spec = ps.spec_of(ds.prefetch(tf.data.experimental.AUTOTUNE), step_s=0.01)
    assert (spec.map_cost_s, spec.calls_per_batch, spec.num_parallel_calls, spec.prefetch) == (0.002, 8, 3, 2)
    assert spec.stage == "ParallelMap" and spec.step_s == 0.01
    after = tf.data.Dataset.from_tensor_slices(x).batch(8).map(lambda v: v + 1.0)  # a map of whole batches
    spec = ps.spec_of(after, step_s=0.01)
    assert (spec.calls_per_batch, spec.num_parallel_calls, spec.prefetch, spec.stage) == (1, 1, 0, "Map")
    with pytest.raises(ValueError, match="a map and a batch"):
        ps.spec_of(tf.data.Dataset.from_tensor_slices(x).batch(8), step_s=0.01)


@pytest.mark.parametrize("cores", [2, 64])
def test_autotune_resolves_to_the_simulated_hosts_threads_whatever_the_machine(monkeypatch, cores):
    monkeypatch.setattr("os.cpu_count", lambda: cores)
    x = np.zeros((64, 16), np.float32)
    ds = tf.data.Dataset.from_tensor_slices(x).map(lambda v: v * 2.0, tf.data.experimental.AUTOTUNE,
                                                   simulated_cost_s=0.001).batch(8).prefetch(1)
    spec = ps.spec_of(ds, step_s=0.0005)
    assert spec.num_parallel_calls == ps.AUTOTUNE_MAP_THREADS == 8
    # 8 calls of 1 ms per batch on 8 threads: 1 ms a batch, slower than the 0.5 ms step: the map sets the period
    assert ps.simulate_pipeline(spec, 6).period_us == 1000


def test_prefetch_period_is_the_slower_of_the_map_and_the_copy_plus_the_step():
    link = cost_model.LinkProfile("test link", 1e9, 0.0)
    fast_map = run(1 * MS, 3 * MS, prefetch=1, accelerator=GPU, batch_bytes=2_000_000, link=link)
    assert fast_map.period_us == pytest.approx(3000 + 2000)  # max(m, c + s) = c + s: the copy counts
    slow_map = run(6 * MS, 3 * MS, prefetch=1, accelerator=GPU, batch_bytes=2_000_000, link=link)
    assert slow_map.period_us == pytest.approx(6000)  # max(m, c + s) = m


def test_a_map_without_a_given_cost_gets_the_cost_models_estimate():
    x = np.zeros((10, 32, 32), np.float32)
    ds = tf.data.Dataset.from_tensor_slices(x).map(lambda v: tf.matmul(v, v))
    expected = cost_model.op_time_s(cost_model.op_cost("MatMul", [(32, 32), (32, 32)], [(32, 32)]), cost_model.CPU)
    assert ds.simulated_cost_s == pytest.approx(expected)  # MatMul only; the placeholder is bookkeeping
    unknown = tf.data.Dataset.from_tensor_slices(x).map(lambda v: tf.py_func(np.sqrt, [v], tf.float32))
    assert unknown.simulated_cost_s == 0.0  # unknown shapes: no estimate
    with pytest.raises(ValueError, match="simulated_cost_s"):
        tf.data.Dataset.from_tensor_slices(x).map(lambda v: v, simulated_cost_s=-1.0)


def test_bad_specs_and_step_counts():
    with pytest.raises(ValueError, match=">= 0"):
        ps.PipelineSpec(-1.0, 4, 1, 0, 0.001)
    with pytest.raises(ValueError, match="calls_per_batch >= 1"):
        ps.PipelineSpec(0.001, 0, 1, 0, 0.001)
    with pytest.raises(ValueError, match="steps >= 1"):
        ps.simulate_pipeline(ps.PipelineSpec(0.001, 4, 1, 0, 0.001), 0)
