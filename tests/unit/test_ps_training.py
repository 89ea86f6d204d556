"""Parameter-server training: determinism, the disciplines' semantics (sync, async, SSP as Ho et al., bounded
delay) and the equivalences between them, stragglers, EMA, checkpoints, replication."""

import dataclasses
import threading

import numpy as np
import pytest
from ps_invariants import assert_ssp_invariants

from dfcore.distribute import parameter_server as ps
from dfcore.distribute.ps_model import ModelConfig, build_worker, start_cluster, step_costs
from dfcore.distribute.replication import build_in_graph, compare_replication
from dfcore.distribute.staleness import PHASES, format_histogram
from dfcore.runtime import cost_model
from dfcore.runtime.session import Session


@pytest.fixture(autouse=True)
def no_thread_left():
    before = set(threading.enumerate())
    yield
    assert set(threading.enumerate()) <= before


def _same_params(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("mode,kwargs", [("sync", {"replicas_to_aggregate": 3}), ("async", {}),
                                         ("ssp", {"staleness": 1}), ("bounded_delay", {"staleness": 1})])
def test_every_mode_gives_the_same_update_sequence_run_after_run(mode, kwargs):
    kwargs = dict(mode=mode, steps=16, straggler={3: 4.0}, occasional_straggler=(0.2, 3.0), eval_every=8, **kwargs)
    first, second = ps.train(**kwargs), ps.train(**kwargs)
    assert first.updates == second.updates and first.evals == second.evals and first.phases == second.phases
    assert _same_params(first.params, second.params) and first.sim_time_s == second.sim_time_s
    assert first.status == "completed" and first.final_version == 16


def test_ssp_with_zero_staleness_is_bulk_synchronous():
    """s = 0 is BSP: at clock c every worker reads the parameters after exactly the N·c updates of the clocks
    before (sync's reads: after c updates), on the same batch, at the same simulated instants; applying a clock's
    N gradients one by one at rate η equals sync's one averaged update at rate N·η, up to float32 rounding
    (the same losses at every read, the same final parameters). Not bit for bit: N in-place additions round
    differently from one mean."""
    n, clocks = 4, 8
    common = dict(straggler={1: 3.0}, eval_every=0)
    sync = ps.train(mode="sync", steps=clocks, learning_rate=0.4, **common)
    ssp = ps.train(mode="ssp", staleness=0, steps=n * clocks, learning_rate=0.1, **common)
    assert all(u.version_computed_on == u.step for u in sync.updates)
    assert all(u.version_computed_on == n * u.step and u.slowest_clock == u.step for u in ssp.updates)
    sync_loss = {(u.worker, u.step): u.loss for u in sync.updates}
    ssp_loss = {(u.worker, u.step): u.loss for u in ssp.updates}
    assert sync_loss.keys() == ssp_loss.keys() == {(w, c) for w in range(n) for c in range(clocks)}
    np.testing.assert_allclose([ssp_loss[k] for k in sorted(sync_loss)], [sync_loss[k] for k in sorted(sync_loss)],
                               rtol=1e-5)
    for name in sync.params:
        np.testing.assert_allclose(ssp.params[name], sync.params[name], rtol=1e-4, atol=1e-6)
    assert ssp.sim_time_s == sync.sim_time_s and ssp.wait_s_by_worker() == sync.wait_s_by_worker()
    assert ssp.learning_rate_per_example == sync.learning_rate_per_example == 0.1 / 32


def test_ssp_with_a_bound_beyond_the_run_is_async_bit_for_bit():
    kwargs = dict(steps=30, straggler={3: 4.0}, ema_decay=0.9, eval_every=10)
    asynchronous, ssp = ps.train(mode="async", **kwargs), ps.train(mode="ssp", staleness=30, **kwargs)
    assert ssp.updates == tuple(dataclasses.replace(u, slowest_clock=v.slowest_clock)
                                for u, v in zip(asynchronous.updates, ssp.updates))
    assert asynchronous.evals == ssp.evals and asynchronous.phases == ssp.phases
    assert _same_params(asynchronous.params, ssp.params) and asynchronous.sim_time_s == ssp.sim_time_s


def test_ssp_read_gate_staleness_and_read_my_writes_in_the_simulation():
    s, n = 1, 4
    record = ps.train(mode="ssp", staleness=s, steps=60, straggler={3: 4.0}, occasional_straggler=(0.1, 4.0),
                      eval_every=0)
    assert_ssp_invariants(record, s)
    assert sorted(u.version_applied_at for u in record.updates) == list(range(60))  # one update per gradient
    by_key = {(u.worker, u.step): u for u in record.updates}
    for u in record.updates:
        # the read holds every update of clocks <= c - s - 1, and the worker's own previous update
        assert all(v.version_applied_at < u.version_computed_on for v in record.updates if v.step <= u.step - s - 1)
        if u.step:
            assert by_key[u.worker, u.step - 1].version_applied_at < u.version_computed_on
        assert 0 <= u.staleness <= (n - 1) * (2 * s + 1)  # the others apply at most 2s + 1 clocks meanwhile
    assert max(record.wait_s_by_worker().values()) > 0  # the fast workers do wait for the straggler
    assert any(u.slowest_clock == u.step - s for u in record.updates)  # and the gate binds


def test_bounded_delay_with_zero_staleness_reproduces_sync_exactly():
    kwargs = dict(steps=12, straggler={1: 3.0}, num_ps=2, ema_decay=0.9, eval_every=4)
    sync, delayed = ps.train(mode="sync", **kwargs), ps.train(mode="bounded_delay", staleness=0, **kwargs)
    assert sync.updates == delayed.updates and sync.evals == delayed.evals
    assert _same_params(sync.params, delayed.params)
    assert sync.sim_time_s == delayed.sim_time_s
    assert delayed.staleness_histogram() == {0: 48}


def test_records_are_consistent():
    record = ps.train(mode="bounded_delay", staleness=2, steps=15, straggler={3: 4.0}, eval_every=5)
    assert record.status == "completed" and record.final_version == 15
    for u in record.updates:
        assert u.staleness == u.version_applied_at - u.version_computed_on
        assert 0 <= u.staleness <= 2  # the SSP bound: computed on a version >= clock - s
    assert record.updates_applied == 15 * 4 and record.updates_dropped == 0
    assert max(record.wait_s_by_worker().values()) > 0 and record.wait_s_by_worker()[3] == 0.0
    assert {p.kind for p in record.phases} <= set(PHASES)
    assert [e.version for e in record.evals] == [5, 10, 15]
    assert record.staleness == 2 and record.clock == "simulated"
    assert "| " in format_histogram(record.staleness_histogram())


def test_async_updates_are_applied_one_by_one_with_staleness():
    record = ps.train(mode="async", steps=40, num_workers=4, eval_every=0)
    assert sorted(u.version_applied_at for u in record.updates) == list(range(40))
    histogram = record.staleness_histogram()
    assert sum(histogram.values()) == 40 and max(histogram) >= 3  # 4 workers: ~3 updates land in between
    assert all(u.wait_s == 0.0 for u in record.updates)


def test_one_worker_step_time_is_pull_plus_compute_plus_push():
    config = ModelConfig("async", 1, 1, 1, 0, 0.1, 64, 32, 0, "round_robin", None)
    spec, ps_servers, workers = start_cluster(config)
    try:
        model = build_worker(0, config, spec, workers[0])
        costs = step_costs(model, config)
        model.session.close()
    finally:
        for s in ps_servers + workers:
            s.stop()
    transfer = cost_model.transfer_time_s(costs.bytes_per_ps[0], cost_model.ETHERNET_10G)
    assert costs.bytes_per_ps == ((64 * 64 + 64 + 64 * 10 + 10) * 4,)
    record = ps.train(mode="async", num_workers=1, steps=5, eval_every=0)
    assert record.sim_time_s == pytest.approx(5 * (2 * transfer + costs.compute_s), rel=1e-9)


def test_stragglers_slow_sync_and_backup_workers_drop_their_gradients():
    base = ps.train(mode="sync", steps=10, eval_every=0)
    slow = ps.train(mode="sync", steps=10, straggler={3: 4.0}, eval_every=0)
    backup = ps.train(mode="sync", steps=10, straggler={3: 4.0}, replicas_to_aggregate=3, eval_every=0)
    assert slow.sim_time_s > 1.5 * base.sim_time_s
    assert backup.sim_time_s < 0.7 * slow.sim_time_s
    assert backup.updates_applied == 30 and backup.updates_dropped > 0
    assert all(not u.applied for u in backup.updates if u.worker == 3)
    assert slow.wait_s_by_worker()[0] > base.wait_s_by_worker()[0]


def test_default_sync_run_reaches_the_accuracy_target():
    record = ps.train(mode="sync", eval_every=100)
    assert record.test_accuracy >= 0.95 and record.final_version == ps.DEFAULT_STEPS["sync"]


def test_moving_averages_live_on_the_ps_tasks():
    config = ModelConfig("sync", 2, 2, 2, 0, 0.1, 16, 8, 0, "round_robin", 0.9)
    spec, ps_servers, workers = start_cluster(config)
    try:
        model = build_worker(0, config, spec, workers[0])
        shadows = [model.ema.average(v) for v in model.params]
        assert [s.op.name for s in shadows] == [f"{v.op.name}/ExponentialMovingAverage" for v in model.params]
        assert [s.device for s in shadows] == [v.device for v in model.params]
        assert {v.device for v in model.params} == {"/job:ps/task:0", "/job:ps/task:1"}
        model.session.close()
    finally:
        for s in ps_servers + workers:
            s.stop()
    record = ps.train(mode="sync", steps=10, ema_decay=0.5, eval_every=5)
    assert all(e.accuracy_ema is not None for e in record.evals)


def test_a_restored_run_ends_with_the_parameters_of_an_uninterrupted_one(tmp_path):
    kwargs = dict(mode="sync", num_ps=2, ema_decay=0.9, eval_every=0)
    whole = ps.train(steps=16, **kwargs)
    first = ps.train(steps=8, checkpoint_dir=str(tmp_path), checkpoint_every=8, **kwargs)
    assert first.final_version == 8
    resumed = ps.train(steps=16, checkpoint_dir=str(tmp_path), restore=True, **kwargs)
    assert resumed.final_version == 16
    assert _same_params(whole.params, resumed.params)
    def key(u):  # the wait before the first resumed step happened in the first run
        return (u.worker, u.step, u.version_computed_on, u.version_applied_at, u.applied, u.loss, u.sim_time_s)

    assert [key(u) for u in resumed.updates] == [key(u) for u in whole.updates if u.version_applied_at >= 8]


def test_in_graph_and_between_graph_replication_apply_the_same_update():
    comparison = compare_replication(num_workers=3, batch_size=8, hidden=16)
    assert comparison.max_abs_difference < 1e-6
    assert len(comparison.between_graph) == 3
    assert set(comparison.in_graph.ops_per_task) >= {f"/job:worker/replica:0/task:{w}" for w in range(3)}
    assert set(comparison.between_graph[2].ops_per_task) <= {"/job:ps/replica:0/task:0",
                                                             "/job:worker/replica:0/task:2", "(any)"}


def test_the_in_graph_step_increments_a_global_step_on_the_ps_as_between_graph_steps_do():
    config = ModelConfig("sync", 1, 2, 2, 0, 0.5, 16, 8, 0, "round_robin", None)
    spec, ps_servers, worker_servers = start_cluster(config)
    graph, h = build_in_graph(spec, config)
    sess = Session(worker_servers[0].target, graph=graph)
    try:
        assert h["global_step"].op.type == "VariableV2" and h["global_step"].op.device == "/job:ps/task:0"
        sess.run(h["init"])
        feed = {x: np.zeros(x.shape.as_list(), np.float32) for x in h["xs"]}
        feed.update({y: np.zeros(y.shape.as_list(), np.int64) for y in h["ys"]})
        sess.run(h["train_op"], feed)
        assert sess.run(h["global_step"]) == 1
    finally:
        sess.close()
        for server in ps_servers + worker_servers:
            server.stop("test done")


def test_argument_errors():
    with pytest.raises(ValueError, match="mode must be one of"):
        ps.train(mode="bsp")
    with pytest.raises(ValueError, match=r"replicas_to_aggregate must be an integer in \[1, 4\]"):
        ps.train(mode="sync", replicas_to_aggregate=5)
    with pytest.raises(ValueError, match="staleness must be an integer >= 0"):
        ps.train(mode="ssp", staleness=-1)
    with pytest.raises(ValueError, match="need a checkpoint_dir"):
        ps.train(restore=True)


# -- parameters over several ps tasks -------------------------------------------------------------------------

def test_pulls_and_pushes_queue_on_the_workers_own_interface():
    """Every message holds both ends of its link: a pull's replies from the ps tasks come in one after another
    through the worker's inbound interface, its pushes go out one after another through its outbound one
    (cost_model.nic_ports), so each direction costs one latency per ps task plus all the bytes / bandwidth."""
    config = ModelConfig("async", 2, 1, 1, 0, 0.1, 64, 32, 0, "round_robin", None)
    spec, ps_servers, workers = start_cluster(config)
    try:
        model = build_worker(0, config, spec, workers[0])
        costs = step_costs(model, config)
        model.session.close()
    finally:
        for s in ps_servers + workers:
            s.stop()
    link = cost_model.ETHERNET_10G
    assert len(costs.bytes_per_ps) == 2 and sum(costs.bytes_per_ps) == (64 * 64 + 64 + 64 * 10 + 10) * 4
    assert costs.pull_s == pytest.approx(2 * link.latency_s + sum(costs.bytes_per_ps) / link.bandwidth_Bps)
    push = sum(cost_model.transfer_time_s(b, link) for b in costs.bytes_per_ps)
    record = ps.train(mode="async", num_workers=1, num_ps=2, steps=5, eval_every=0)
    assert record.sim_time_s == pytest.approx(5 * (costs.pull_s + costs.compute_s + push), rel=1e-9)


@pytest.mark.parametrize("num_ps", [2, 4])
def test_a_sharded_first_layer_spreads_over_the_ps_tasks_and_trains_the_same_model(num_ps):
    common = dict(mode="sync", num_ps=num_ps, steps=10, eval_every=5, ema_decay=0.9)
    whole, sharded = ps.train(**common), ps.train(w1_shards=num_ps, **common)
    shard_task = {name: load.task for load in sharded.ps_load for name in load.variables
                  if name.startswith("w1/part_") and "ExponentialMovingAverage" not in name}
    assert sorted(shard_task) == [f"w1/part_{i}" for i in range(num_ps)]
    assert len(set(shard_task.values())) == num_ps  # replica_device_setter: round robin, one shard per ps task
    rows = np.concatenate([sharded.params[f"w1/part_{i}"] for i in range(num_ps)])
    np.testing.assert_array_equal(rows, whole.params["w1"])  # the same arithmetic, shard by shard

    def losses(record):
        return [u.loss for u in sorted(record.updates, key=lambda u: (u.step, u.worker))]

    assert losses(sharded) == losses(whole)
    assert [(e.loss, e.accuracy, e.accuracy_ema) for e in sharded.evals] == \
        [(e.loss, e.accuracy, e.accuracy_ema) for e in whole.evals]
    hot = {name: max(busy for _, busy in r.ps_traffic().values())
           for name, r in (("whole", whole), ("sharded", sharded))}
    assert hot["sharded"] < hot["whole"]  # the hot ps (w1's) cools down once w1 is spread


def test_an_occasional_straggler_slows_random_steps_the_same_way_in_every_run():
    config = ps.TrainConfig(mode="async", straggler={1: 2.0}, occasional_straggler=(0.25, 4.0), seed=3, steps=24,
                            eval_every=0)
    factors = {(w, c): config.speed(w, c) for w in range(4) for c in range(400)}
    assert factors == {(w, c): dataclasses.replace(config).speed(w, c) for w, c in factors}
    assert {f for (w, _), f in factors.items() if w != 1} == {1.0, 4.0}
    assert {f for (w, _), f in factors.items() if w == 1} == {2.0, 8.0}
    assert 0.2 < sum(f in (4.0, 8.0) for f in factors.values()) / len(factors) < 0.3
    record = ps.train(config)
    per_unit = {round((p.end_s - p.start_s) / factors[int(p.task[-1]), p.step], 15)
                for p in record.phases if p.kind == "compute"}
    assert len(per_unit) == 1  # every step's compute time is the worker's normal time × that step's factor
