"""The cost-model placer (whitepaper §3.2.1): decisions against hand-computed simulated times, the rule
placer's hard constraints, measured costs, and the session option."""

import contextlib
import io

import numpy as np
import pytest

import dfcore as tf
from dfcore.runtime import cost_placer, placer
from dfcore.runtime.device_set import DeviceSet
from dfcore.runtime.placement_costs import CostTable, MeasuredNode, measured_nodes
from dfcore.runtime.step_trace import machine_for

_P = "/job:localhost/replica:0/task:0/device:"
# The K20m's datasheet numbers and its bus, PCIe 2.0 x16, as cost_model states them.
K20M_FLOPS, K20M_BW, LAUNCH_S = 0.8 * 3.52e12, 0.8 * 208e9, 5e-6  # datasheet peaks × the named efficiencies
PCIE_BW, PCIE_LATENCY_S = 6e9, 10e-6
CPU_FLOPS = 100e9


def _devices(cpu=1, gpu=2):
    return DeviceSet.from_config(tf.ConfigProto(device_count={"CPU": cpu, "GPU": gpu}))


def _place(devices=None, **kwargs):
    return cost_placer.place(tf.get_default_graph().get_operations(), devices or _devices(), **kwargs)


def _matmul_s(n, flops=K20M_FLOPS):
    return LAUNCH_S + max(2 * n**3 / flops, 3 * n * n * 4 / K20M_BW)


def test_two_independent_matmuls_go_to_two_gpus_at_the_hand_computed_times():
    n = 4096  # big enough that moving a and b over the K20m's PCIe 2.0 costs less than waiting for GPU:0
    a = tf.constant(np.ones((n, n), np.float32), name="a")
    b = tf.constant(np.ones((n, n), np.float32), name="b")
    tf.matmul(a, b, name="mm1")
    tf.matmul(a, b, name="mm2")
    placement = _place()
    decisions = {d.node_name: d for d in placement.decisions()}
    # Constants compute nothing: every device finishes them at 0, so TF's priority order picks GPU:0.
    assert [decisions[c].device for c in "ab"] == [_P + "GPU:0"] * 2
    t_gpu = _matmul_s(n)
    moved = PCIE_LATENCY_S + n * n * 4 / PCIE_BW  # one of a, b
    # a and b both leave through GPU:0's bus and enter through GPU:1's: one after the other (at n = 2048 that
    # made GPU:1 finish later than waiting for GPU:0)
    mm1 = {c.device: c for c in decisions["mm1"].candidates}
    assert decisions["mm1"].device == _P + "GPU:0"
    assert mm1[_P + "GPU:0"].finish_s == pytest.approx(t_gpu)
    assert mm1[_P + "GPU:1"].transfer_s == pytest.approx(moved)
    assert mm1[_P + "GPU:1"].ready_s == pytest.approx(2 * moved)
    assert mm1[_P + "GPU:1"].finish_s == pytest.approx(2 * moved + t_gpu)
    mm2 = {c.device: c for c in decisions["mm2"].candidates}
    assert mm2[_P + "GPU:0"].start_s == pytest.approx(t_gpu)  # GPU:0 is busy with mm1
    assert mm2[_P + "GPU:0"].finish_s == pytest.approx(2 * t_gpu)
    assert mm2[_P + "GPU:1"].finish_s == pytest.approx(2 * moved + t_gpu)
    assert decisions["mm2"].device == _P + "GPU:1"
    assert decisions["mm2"].reason == cost_placer.REASON_COST
    assert placement.estimated_step_s == pytest.approx(2 * moved + t_gpu)
    # The winner is the earliest finish among the candidates that fit, for every node.
    for d in placement.decisions():
        assert d.winner.finish_s == min(c.finish_s for c in d.candidates if c.fits)


def test_a_small_matmul_stays_with_its_inputs_when_the_transfer_costs_more_than_waiting():
    n = 256
    a = tf.constant(np.ones((n, n), np.float32), name="a")
    tf.matmul(a, a, name="mm1")
    tf.matmul(a, a, name="mm2")
    decisions = {d.node_name: d for d in _place().decisions()}
    t_gpu = _matmul_s(n)
    assert PCIE_LATENCY_S + n * n * 4 / PCIE_BW > t_gpu  # the premise: waiting is cheaper
    assert decisions["mm2"].device == _P + "GPU:0"
    assert decisions["mm2"].winner.finish_s == pytest.approx(2 * t_gpu)


def test_hard_constraints_are_the_rule_placers():
    with tf.device("/gpu:1"):
        w = tf.Variable(np.ones((8, 8), np.float32), name="w")
    with tf.device("/cpu:0"):
        c = tf.constant(np.ones((8, 8), np.float32), name="c")
    y = tf.matmul(c, w, name="y")
    with tf.colocate_with(y):
        z = tf.identity(y, name="z")
    tf.summary.scalar("s", tf.reduce_sum(z))  # ScalarSummary has only a CPU kernel
    tf.assign_add(w, y, name="update")  # a reference input: goes with the variable
    ops = tf.get_default_graph().get_operations()
    devices = _devices(gpu=4)
    costly = {r.node_name: r for r in cost_placer.place(ops, devices).records()}
    ruled = {r.node_name: r for r in placer.place(ops, devices).records()}
    for name in ("w", "w/Assign", "w/read", "c", "update"):
        assert costly[name].assigned_device == ruled[name].assigned_device, name
    assert costly["z"].assigned_device == costly["y"].assigned_device
    assert costly["z"].colocation_group == ruled["z"].colocation_group == "loc:@y"
    assert costly["s"].assigned_device == _P + "CPU:0"
    assert costly["update"].reason == placer.REASON_COLOCATION


def test_an_impossible_request_is_the_rule_placers_error():
    with tf.device("/gpu:7"):
        tf.constant(1.0, name="c")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Cannot assign a device for operation 'c': Operation was explicitly assigned to "
                             r"/device:GPU:7"):
        _place()


def test_measured_costs_replace_the_static_ones_and_scale_to_other_profiles():
    n = 64
    a = tf.constant(np.ones((n, n), np.float32), name="a")
    mm = tf.matmul(a, a, name="mm")
    devices = _devices()
    machine = machine_for(devices)
    measured = {"mm": MeasuredNode(_P + "GPU:0", 1e-3, (n * n * 4,))}
    costs = CostTable(machine, measured)
    assert costs.source(mm.op) == "measured" and costs.source(a.op) == "static"
    assert costs.compute_s(mm.op, _P + "GPU:1") == 1e-3  # same profile: the measured time
    static_gpu, static_cpu = _matmul_s(n), 1e-6 + max(2 * n**3 / CPU_FLOPS, 3 * n * n * 4 / 20e9)
    assert CostTable(machine).compute_s(mm.op, _P + "CPU:0") == pytest.approx(static_cpu)
    assert costs.compute_s(mm.op, _P + "CPU:0") == pytest.approx(1e-3 * static_cpu / static_gpu)
    decision = next(d for d in _place(devices, costs=costs).decisions() if d.node_name == "mm")
    assert decision.cost_source == "measured"
    assert decision.winner.compute_s == pytest.approx(1e-3)


def test_the_second_placement_uses_the_first_runs_timings_and_real_sizes():
    x = tf.placeholder(tf.float32, [None, 32], name="x")  # static batch unknown: counted as 1
    w = tf.Variable(np.ones((32, 32), np.float32), name="w")
    y = tf.matmul(x, w, name="y")
    feed = {x: np.ones((512, 32), np.float32)}
    with tf.Session(placement="cost_model") as first:
        first.run(w.initializer)
        metadata = tf.RunMetadata()
        first.run(y, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
        stats = tf.step_records(metadata).step_stats
        static = {d.node_name: d for d in first.placement().decisions()}
    seen = measured_nodes(stats)
    assert seen["y"].output_bytes == (512 * 32 * 4,)
    assert static["y"].output_bytes == 32 * 4
    assert measured_nodes(metadata) == seen  # the RunMetadata itself will do
    with tf.Session(placement=tf.PlacementOptions("cost_model", measured=metadata)) as second:
        second.run(w.initializer)
        np.testing.assert_allclose(second.run(y, feed), np.full((512, 32), 32.0))
        again = {d.node_name: d for d in second.placement().decisions()}
    assert again["y"].cost_source == "measured" and again["y"].output_bytes == 512 * 32 * 4
    assert again["y"].winner.compute_s == pytest.approx(seen["y"].duration_s)


def test_measured_nodes_sums_a_nodes_executions_in_one_step_and_later_steps_win():
    from dfcore.runtime.step_stats import DeviceStepStats, NodeExecStats, StepStats

    def ns(start, end):
        return NodeExecStats("n", "Add", 0, 0, 0, 0, 0, (4,), "n = Add()", start, end)

    one = StepStats([DeviceStepStats(_P + "GPU:0", [ns(0, 10), ns(20, 25)])])
    two = StepStats([DeviceStepStats(_P + "GPU:1", [ns(0, 7)])])
    summed = measured_nodes(one)["n"]
    assert (summed.device, summed.output_bytes) == (_P + "GPU:0", (4,))
    assert summed.duration_s == pytest.approx(15e-6)
    assert measured_nodes([one, two])["n"] == MeasuredNode(_P + "GPU:1", 7e-6, (4,))
    with pytest.raises(ValueError, match="clock must be one of"):
        measured_nodes(one, clock="cpu")


def test_session_option_log_format_is_unchanged():
    tf.matmul(tf.constant(np.ones((4, 4), np.float32)), tf.constant(np.ones((4, 4), np.float32)), name="mm")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), tf.Session(
            config=tf.ConfigProto(log_device_placement=True, device_count={"CPU": 1, "GPU": 2}),
            placement="cost_model") as sess:
        sess.run("mm:0")
        records = sess.placement_records()
    lines = out.getvalue().splitlines()
    assert lines == placer.placement_log_lines(sess.device_set, records)
    assert [placer.parse_placement_log_line(line)[0] for line in lines[3:]] == ["Const", "Const_1", "mm"]
    assert sess.placement_options.strategy == "cost_model"


def test_an_unknown_strategy_is_an_invalid_argument_listing_the_known_ones():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Unknown placement strategy 'greedy'. Known strategies: cost_model, rules"):
        tf.Session(placement="greedy")
    with pytest.raises(TypeError, match="placement must be a strategy name or a PlacementOptions"):
        tf.Session(placement=3)
    with pytest.raises(ValueError, match="measured_clock must be 'sim' or 'wall'"):
        tf.PlacementOptions("cost_model", measured_clock="cpu")


def test_a_cost_model_missing_an_op_type_falls_back_and_warns_once(caplog, monkeypatch):
    from dfcore.framework import registry
    from dfcore.runtime import placement_costs
    monkeypatch.setattr(placement_costs, "_warned_op_types", set())
    for op_type in ("Cast", "ZerosLike"):  # every registered op type has a cost: pretend these two had none
        monkeypatch.delitem(registry._COSTS, op_type)
    x = tf.constant(np.ones((10, 10), np.int32))
    tf.cast(x, tf.float32, name="c1")
    tf.cast(x, tf.float32, name="c2")
    tf.zeros_like(x, name="z")
    with caplog.at_level("WARNING", logger="dfcore"):
        decisions = {d.node_name: d for d in _place().decisions()}
        _place()  # placed again: nothing new to say
    said = [r.getMessage() for r in caplog.records if "no estimate" in r.getMessage()]
    assert said == ["The cost model has no estimate for op types 'Cast' (node 'c1'), 'ZerosLike' (node 'z'); the "
                    "placer used the default for them: one flop per output element, each input and output "
                    "accessed once."]
    assert decisions["c1"].cost_source == "default"
    # The default: one flop per output element, inputs and outputs accessed once (roofline on the K20m).
    expected = LAUNCH_S + max(100 / K20M_FLOPS, 200 * 4 / K20M_BW)
    assert decisions["c1"].winner.compute_s == pytest.approx(expected)


def test_a_loop_split_by_the_cost_placer_runs_with_its_control_ops_moved_to_their_merge():
    # The cost placer places control-flow ops like any other; as TF's, the partitioner moves each loop variable's
    # Enter, NextIteration, Switch and Exit to its Merge's device (graph_partition.cc OptimizeControlFlowColocation)
    i, acc = tf.constant(0, name="i"), tf.constant(1.0, name="acc")
    result = tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * 2.0), [i, acc])
    meta = tf.RunMetadata()
    options = tf.RunOptions(timeout_in_ms=20_000, output_partition_graphs=True)
    with tf.Session(placement="cost_model") as sess:
        assert sess.run(result, options=options, run_metadata=meta) == [5, 32.0]
        chosen = {d.node_name: d.device for d in sess.placement().decisions()}
    ran = {n.name: n.device for g in meta.partition_graphs for n in g.node}
    moved = 0
    for suffix in ("", "_1"):
        kinds = ("Enter", "NextIteration", "Switch", "Exit")
        assert {ran[f"while/{k}{suffix}"] for k in kinds} == {ran[f"while/Merge{suffix}"]}
        moved += sum(chosen[f"while/{k}{suffix}"] != ran[f"while/{k}{suffix}"] for k in kinds)
    assert moved  # with these scalar costs the placer splits a loop variable's control ops
    assert len(set(chosen.values())) > 1
