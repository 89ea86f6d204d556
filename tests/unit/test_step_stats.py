"""StepStats: TF's field names, a deterministic thread-safe collector, JSON round trips, timeline labels."""

import dataclasses
import json
import random
import threading

import pytest
from hypothesis import given, strategies as st

from dfcore import errors
from dfcore.runtime.step_stats import (
    AllocatorMemoryUsed,
    DeviceStepStats,
    NodeExecStats,
    StepStats,
    StepStatsCollector,
    TimelineLabel,
    parse_timeline_label,
    timeline_label,
)

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


def node(name, start, dur=5, op="Add", thread_id=0, output_bytes=(8,), **sim):
    return NodeExecStats(name, op, start, 1, dur - 1, dur, thread_id, output_bytes, f"{name} = {op}()", **sim)


def test_node_exec_stats_uses_tf_field_names():
    fields = [f.name for f in dataclasses.fields(NodeExecStats)]
    assert fields == [
        "node_name", "op_type", "all_start_micros", "op_start_rel_micros", "op_end_rel_micros",
        "all_end_rel_micros", "thread_id", "output_bytes", "timeline_label", "sim_start_micros", "sim_end_micros",
        "detail",  # dfcore's: the parts of timeline_label
    ]
    ns = node("MatMul", 100, dur=30, output_bytes=[16, 4])
    assert ns.output_bytes == (16, 4) and ns.all_end_micros == 130
    assert ns.sim_start_micros is None and ns.sim_end_micros is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        ns.node_name = "other"
    assert [f.name for f in dataclasses.fields(AllocatorMemoryUsed)] == [
        "allocator_name", "total_bytes", "peak_bytes", "allocation_count", "live_bytes", "allocator_bytes_in_use",
        "new_buffers", "reuse_hits", "small_allocs"]
    assert [f.name for f in dataclasses.fields(DeviceStepStats)] == ["device", "node_stats", "memory"]
    assert [f.name for f in dataclasses.fields(StepStats)] == ["dev_stats"]


def test_finalize_orders_devices_and_nodes_deterministically():
    collector = StepStatsCollector()
    collector.record(GPU0, node("b", 10))
    collector.record(GPU0, node("a", 10))
    collector.record(GPU0, node("c", 3))
    collector.record(CPU0, node("x", 50))
    collector.record_memory("/job:localhost/replica:0/task:0/device:GPU:1", AllocatorMemoryUsed("GPU_1_bfc", 1, 2, 3))
    collector.record_memory(CPU0, AllocatorMemoryUsed("cpu", 10, 20, 1))
    collector.record_memory(CPU0, AllocatorMemoryUsed("cpu", 30, 40, 2))  # last record wins
    collector.record_memory(CPU0, AllocatorMemoryUsed("a_host", 1, 1, 1))
    stats = collector.finalize()
    assert [d.device for d in stats.dev_stats] == [CPU0, GPU0, "/job:localhost/replica:0/task:0/device:GPU:1"]
    assert [n.node_name for n in stats.dev_stats[1].node_stats] == ["c", "a", "b"]
    assert stats.dev_stats[0].memory == [AllocatorMemoryUsed("a_host", 1, 1, 1), AllocatorMemoryUsed("cpu", 30, 40, 2)]
    assert stats.dev_stats[2].node_stats == []


def test_collector_is_thread_safe_and_order_independent(no_thread_leak):
    devices = [f"/job:localhost/replica:0/task:0/device:GPU:{i}" for i in range(4)]
    records = [(d, node(f"n{i}", (i * 7) % 23, thread_id=i % 3)) for i, d in enumerate(devices * 100)]
    reference = StepStatsCollector()
    for device, ns in records:
        reference.record(device, ns)
    shuffled = records[:]
    random.Random(3).shuffle(shuffled)
    collector = StepStatsCollector()
    barrier = threading.Barrier(8)

    def work(part):
        barrier.wait()
        for device, ns in part:
            collector.record(device, ns)

    threads = [threading.Thread(target=work, args=(shuffled[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5.0)
    assert collector.finalize() == reference.finalize()
    assert sum(len(d.node_stats) for d in collector.finalize().dev_stats) == 400


_ints = st.integers(0, 2**53)
_text = st.text(max_size=12)
_nodes = st.builds(
    NodeExecStats, _text, _text, _ints, _ints, _ints, _ints, st.integers(0, 64),
    st.lists(_ints, max_size=3).map(tuple), _text, st.none() | _ints, st.none() | _ints,
)
_memory = st.builds(AllocatorMemoryUsed, _text, _ints, _ints, _ints, _ints, _ints, _ints, _ints)
_step_stats = st.builds(
    StepStats, st.lists(st.builds(DeviceStepStats, _text, st.lists(_nodes, max_size=3), st.lists(_memory, max_size=2)),
                        max_size=3),
)


@given(_step_stats)
def test_json_round_trip(stats):
    text = json.dumps(stats.to_dict())
    assert StepStats.from_dict(json.loads(text)) == stats


def test_to_dict_shape():
    stats = StepStats([DeviceStepStats(GPU0, [node("a", 1, output_bytes=(4, 8))], [AllocatorMemoryUsed("m", 1, 2, 3)])])
    d = stats.to_dict()
    assert d["dev_stats"][0]["device"] == GPU0
    assert d["dev_stats"][0]["node_stats"][0]["output_bytes"] == [4, 8]
    assert d["dev_stats"][0]["memory"] == [
        {"allocator_name": "m", "total_bytes": 1, "peak_bytes": 2, "allocation_count": 3, "live_bytes": 0,
         "allocator_bytes_in_use": 0, "new_buffers": 0, "reuse_hits": 0,
         "small_allocs": 0}]


@pytest.mark.parametrize(
    "bad", [{}, {"dev_stats": [{"node_stats": []}]}, {"dev_stats": [{"device": "d", "node_stats": [{"x": 1}]}]}]
)
def test_from_dict_rejects_malformed(bad):
    with pytest.raises(errors.InvalidArgumentError, match="Malformed StepStats"):
        StepStats.from_dict(bad)


# -- timeline labels (TF executor.cc SetTimelineLabel) ------------------------


def test_timeline_label_forms_match_tf():
    assert timeline_label("MatMul", "MatMul", ["a", "b:1", "^init"]) == "MatMul = MatMul(a, b:1, ^init)"
    assert timeline_label("Const", "Const") == "Const = Const()"
    assert timeline_label("Const/_0", "_Send", tensor_name="edge_5_Const", peer_device=GPU0) == (
        f"Const/_0 = _Send(edge_5_Const @{GPU0})"
    )
    parsed = parse_timeline_label(f"Const/_1 = _Recv(edge_5_Const @{CPU0})")
    assert parsed == TimelineLabel("Const/_1", "_Recv", (), "edge_5_Const", CPU0) and parsed.is_transfer
    assert not parse_timeline_label("a = Add(x, y)").is_transfer


def test_timeline_label_rejects_bad_input():
    with pytest.raises(errors.InvalidArgumentError):
        timeline_label("s", "_Send", ["x"], tensor_name="t", peer_device=GPU0)
    with pytest.raises(errors.InvalidArgumentError):
        timeline_label("s", "_Send", tensor_name="t")
    for bad in ["", "no equals", "a = Add(x", "a=Add(x)"]:
        with pytest.raises(errors.InvalidArgumentError, match="Invalid timeline label"):
            parse_timeline_label(bad)


_op_names = st.from_regex(r"[A-Za-z0-9_.][A-Za-z0-9_.\-/]{0,15}", fullmatch=True)
_inputs = st.lists(st.tuples(st.sampled_from(["", "^"]), _op_names, st.sampled_from(["", ":1", ":12"])).map(
    lambda t: t[0] + t[1] + ("" if t[0] else t[2])), max_size=4)
_op_types = st.from_regex(r"_?[A-Z][A-Za-z0-9]{0,12}", fullmatch=True)


@given(_op_names, _op_types, _inputs)
def test_label_round_trip_for_ops(name, op, inputs):
    assert parse_timeline_label(timeline_label(name, op, inputs)) == TimelineLabel(name, op, tuple(inputs))


@given(_op_names, st.sampled_from(["_Send", "_Recv"]), _op_names,
       st.builds("/job:{}/replica:0/task:{}/device:GPU:{}".format, st.sampled_from(["ps", "worker"]),
                 st.integers(0, 9), st.integers(0, 9)))
def test_label_round_trip_for_transfers(name, op, tensor_name, device):
    label = timeline_label(name, op, tensor_name=tensor_name, peer_device=device)
    assert parse_timeline_label(label) == TimelineLabel(name, op, (), tensor_name, device)


@given(_op_names, _op_types, _inputs, st.none() | st.tuples(st.integers(1, 9), st.integers(0, 99)))
def test_a_labels_parts_make_the_label_that_parses_back_to_them(name, op, inputs, frame_iter):
    parts = TimelineLabel(name, op, tuple(inputs), frame_iter=frame_iter)
    assert parse_timeline_label(parts.text()) == parts


# -- each node's record carries its label's parts (NodeExecStats.detail) ------


def test_a_records_parts_survive_json_and_a_record_made_from_a_label_takes_its_parts():
    parts = TimelineLabel("y/_1", "_Recv", (), "edge_3_y", GPU0, (4, 2))
    given_parts = NodeExecStats("y/_1", "_Recv", 5, 0, 1, 1, 0, (12,), parts.text(), 1, 2, parts)
    stats = StepStats([DeviceStepStats(CPU0, [given_parts])])
    back = StepStats.from_dict(json.loads(json.dumps(stats.to_dict())))
    assert back == stats and back.dev_stats[0].node_stats[0].detail.frame_iter == (4, 2)
    from_label = NodeExecStats("y/_1", "_Recv", 5, 0, 1, 1, 0, (12,), f"y/_1 = _Recv(edge_3_y @{GPU0}) @frame 4 iter 2")
    assert from_label.detail == parts
    assert NodeExecStats("n", "Foo", 0, 0, 0, 0, 0, (), "not a label").detail == TimelineLabel("n", "Foo")
    from_tf = StepStats.from_proto(stats.to_proto()).dev_stats[0].node_stats[0]  # TF's message: the label alone
    assert (from_tf.op_type, from_tf.detail) == ("_Recv", parts)
