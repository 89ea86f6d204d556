"""Timeline: Chrome Trace Format following TF timeline.py, plus Send/Recv transfer events.

``validate_trace`` checks what chrome://tracing and Perfetto need to load and draw a
trace (Trace Event Format): JSON without NaN, required keys per phase, integer
pid/tid, numeric non-negative ts/dur, a ``process_name`` for every pid, properly
nested slices per thread, paired flow ids whose ends sit inside a slice, and object
lifetimes created before they are deleted.
"""

import collections
import json
import threading
import time

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors
from dfcore.framework.rendezvous_key import create_key
from dfcore.runtime.rendezvous import Rendezvous
from dfcore.runtime.step_stats import DeviceStepStats, NodeExecStats, StepStats, StepStatsCollector, timeline_label
from dfcore.timeline import Timeline

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"

_REQUIRED = {
    "M": {"name", "ph", "pid", "args"},
    "X": {"name", "cat", "ph", "pid", "tid", "ts", "dur"},
    "s": {"name", "cat", "ph", "pid", "tid", "ts", "id"},
    "t": {"name", "cat", "ph", "pid", "tid", "ts", "id"},
    "f": {"name", "cat", "ph", "pid", "tid", "ts", "id"},
    "N": {"name", "ph", "pid", "ts", "id"},
    "O": {"name", "ph", "pid", "ts", "id", "args"},
    "D": {"name", "ph", "pid", "ts", "id"},
    "C": {"name", "ph", "pid", "ts", "args"},
}
_METADATA = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


def _reject_constant(name):
    raise AssertionError(f"JSON constant {name} is not valid JSON")


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def validate_trace(text):
    """Assert ``text`` is a loadable Trace Event Format trace; return the parsed events."""
    trace = json.loads(text, parse_constant=_reject_constant)
    assert isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list)
    events = trace["traceEvents"]
    named, used = set(), set()
    slices, flows, objects = collections.defaultdict(list), collections.defaultdict(list), collections.defaultdict(list)
    for e in events:
        ph = e.get("ph")
        assert ph in _REQUIRED, f"unknown phase in {e}"
        assert not _REQUIRED[ph] - e.keys(), f"{e} lacks {_REQUIRED[ph] - e.keys()}"
        assert type(e["pid"]) is int and type(e.get("tid", 0)) is int, f"pid/tid must be ints: {e}"
        assert isinstance(e["name"], str), e
        if "ts" in e:
            assert _is_number(e["ts"]) and e["ts"] >= 0, f"ts must be a number >= 0: {e}"
        if "args" in e:
            assert isinstance(e["args"], dict), e
        if ph == "M":
            assert e["name"] in _METADATA, e
            if e["name"] == "process_name":
                assert isinstance(e["args"].get("name"), str)
                named.add(e["pid"])
            continue
        used.add(e["pid"])
        if ph == "X":
            assert _is_number(e["dur"]) and e["dur"] >= 0, f"dur must be a number >= 0: {e}"
            slices[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
        elif ph in "stf":
            assert type(e["id"]) in (int, str), e
            flows[e["id"]].append(e)
        elif ph in "NOD":
            objects[(e["name"], e["id"])].append(e)
        elif ph == "C":
            assert e["args"] and all(_is_number(v) for v in e["args"].values()), e
    assert used <= named, f"pids without process_name: {used - named}"
    for lane, spans in slices.items():
        stack = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], f"slices overlap without nesting on {lane}"
            stack.append(end)
    for flow_id, ends in flows.items():
        phases = [e["ph"] for e in ends]
        assert phases.count("s") == 1 and len(phases) >= 2 and phases[0] == "s", f"flow {flow_id}: {phases}"
        assert all(e["ts"] >= ends[0]["ts"] for e in ends), f"flow {flow_id} goes back in time"
        for e in ends:
            assert any(a <= e["ts"] <= b for a, b in slices[(e["pid"], e["tid"])]), f"flow end outside a slice: {e}"
    for key, lifetime in objects.items():
        phases = [e["ph"] for e in lifetime]
        assert phases[0] == "N" and phases.count("N") == 1, f"object not created first: {key}"
        assert phases.count("D") <= 1, f"object deleted twice: {key}"
        assert [e["ts"] for e in lifetime] == sorted(e["ts"] for e in lifetime), f"object events out of order: {key}"
    return events


def ns(name, op, start, end, label, output_bytes=(8,), sim=None, thread_id=0):
    sim_start, sim_end = sim if sim else (None, None)
    dur = end - start
    return NodeExecStats(name, op, start, 0, dur, dur, thread_id, output_bytes, label, sim_start, sim_end)


def two_gpu_step():
    """``mul = a * b`` on GPU0, sent to GPU1 for ``add = mul + c``; ``out`` on CPU0 reads ``add`` directly."""
    gpu0 = [
        ns("a", "Const", 0, 10, timeline_label("a", "Const"), sim=(0, 2)),
        ns("b", "Const", 0, 12, timeline_label("b", "Const"), sim=(2, 4)),
        ns("mul", "Mul", 12, 30, timeline_label("mul", "Mul", ["a", "b"]), output_bytes=(64,), sim=(4, 10)),
        ns("mul/_0", "_Send", 30, 31, timeline_label("mul/_0", "_Send", tensor_name="edge_3_mul", peer_device=GPU1),
           output_bytes=(), sim=(10, 10)),
    ]
    gpu1 = [
        ns("c", "Const", 0, 4, timeline_label("c", "Const"), sim=(0, 1)),
        ns("mul/_1", "_Recv", 5, 40, timeline_label("mul/_1", "_Recv", tensor_name="edge_3_mul", peer_device=GPU0),
           output_bytes=(64,), sim=(1, 15)),
        ns("add", "Add", 40, 50, timeline_label("add", "Add", ["mul/_1", "c", "^a_init"]), output_bytes=(64,),
           sim=(15, 17)),
    ]
    cpu0 = [ns("out", "Identity", 55, 56, timeline_label("out", "Identity", ["add"]), output_bytes=(64,), sim=(18, 19))]
    return StepStats([DeviceStepStats(CPU0, cpu0), DeviceStepStats(GPU0, gpu0), DeviceStepStats(GPU1, gpu1)])


def process_names(events):
    return {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}


def ops(events):
    return {e["args"]["name"]: e for e in events if e["ph"] == "X" and e["cat"] == "Op"}


def flow_pairs(events):
    """{(tensor name, start pid, end pid, start ts, end ts)} for each flow id."""
    by_id = collections.defaultdict(list)
    for e in events:
        if e["ph"] in "st":
            by_id[e["id"]].append(e)
    return {(s["name"], s["pid"], t["pid"], s["ts"], t["ts"]) for s, t in by_id.values()}


def test_processes_follow_tf_naming_plus_transfers():
    events = validate_trace(Timeline(two_gpu_step()).generate_chrome_trace_format())
    assert list(process_names(events).values()) == [
        f"{CPU0} Compute", f"{GPU0} Compute", f"{GPU1} Compute", f"{GPU0} -> {GPU1} Transfers"]
    assert all(e["ph"] not in "NODC" for e in events)


def test_op_events_carry_tf_args():
    events = validate_trace(Timeline(two_gpu_step()).generate_chrome_trace_format())
    by_name = ops(events)
    assert set(by_name) == {"a", "b", "mul", "mul/_0", "c", "mul/_1", "add", "out"}
    mul = by_name["mul"]
    assert (mul["name"], mul["cat"], mul["ts"], mul["dur"]) == ("Mul", "Op", 12, 18)
    assert mul["args"] == {"name": "mul", "op": "Mul", "input0": "a", "input1": "b"}
    assert by_name["add"]["args"] == {
        "name": "add", "op": "Add", "input0": "mul/_1", "input1": "c", "input2": "^a_init"}
    assert by_name["mul/_0"]["args"] == {"name": "mul/_0", "op": "_Send", "input0": f"edge_3_mul @{GPU1}"}
    names = process_names(events)
    assert names[by_name["mul"]["pid"]] == f"{GPU0} Compute" and names[by_name["out"]["pid"]] == f"{CPU0} Compute"


def test_overlapping_ops_get_separate_lanes():
    by_name = ops(validate_trace(Timeline(two_gpu_step()).generate_chrome_trace_format()))
    assert by_name["a"]["tid"] != by_name["b"]["tid"]  # [0,10] and [0,12] overlap
    assert by_name["a"]["tid"] == by_name["mul"]["tid"] == by_name["mul/_0"]["tid"]  # back to back: one lane


def test_transfer_is_an_event_of_its_own():
    events = validate_trace(Timeline(two_gpu_step()).generate_chrome_trace_format())
    (transfer,) = [e for e in events if e["ph"] == "X" and e["cat"] == "Transfer"]
    assert process_names(events)[transfer["pid"]] == f"{GPU0} -> {GPU1} Transfers"
    assert transfer["name"] == "edge_3_mul (64 B)"
    assert (transfer["ts"], transfer["dur"]) == (30, 10)  # from the send's start to the recv's end
    assert transfer["args"] == {"tensor_name": "edge_3_mul", "bytes": 64, "src_device": GPU0, "dst_device": GPU1,
                                "send_node": "mul/_0", "recv_node": "mul/_1"}


def test_dataflow_arrows():
    events = validate_trace(Timeline(two_gpu_step()).generate_chrome_trace_format())
    pid = {name: pid for pid, name in process_names(events).items()}
    compute0, compute1 = pid[f"{GPU0} Compute"], pid[f"{GPU1} Compute"]
    link, cpu = pid[f"{GPU0} -> {GPU1} Transfers"], pid[f"{CPU0} Compute"]
    assert flow_pairs(events) == {
        ("b:0", compute0, compute0, 12, 12),  # other lane: arrow; a -> mul shares a lane: none (TF)
        ("edge_3_mul", compute0, link, 31, 31),  # send end -> transfer
        ("edge_3_mul", link, compute1, 40, 40),  # transfer -> recv
        ("add:0", compute1, cpu, 50, 55),  # across devices without a recorded transfer
    }
    assert all(e["cat"] == "DataFlow" for e in events if e["ph"] in "st")
    quiet = validate_trace(Timeline(two_gpu_step()).generate_chrome_trace_format(show_dataflow=False))
    assert not [e for e in quiet if e["ph"] in "st"]
    assert len([e for e in quiet if e["ph"] == "X"]) == 9


def test_simulated_time_uses_sim_fields():
    events = validate_trace(Timeline(two_gpu_step()).generate_chrome_trace_format(time="simulated"))
    by_name = ops(events)
    assert (by_name["mul"]["ts"], by_name["mul"]["dur"]) == (4, 6)
    assert (by_name["mul/_1"]["ts"], by_name["mul/_1"]["dur"]) == (1, 14)
    assert by_name["a"]["tid"] == by_name["b"]["tid"]  # one op at a time on the simulated device
    (transfer,) = [e for e in events if e["ph"] == "X" and e["cat"] == "Transfer"]
    assert (transfer["ts"], transfer["dur"]) == (10, 5)


def test_simulated_time_needs_sim_fields_and_time_is_checked():
    stats = StepStats([DeviceStepStats(GPU0, [ns("a", "Const", 0, 1, "a = Const()")])])
    with pytest.raises(errors.FailedPreconditionError, match="Node a has no simulated times"):
        Timeline(stats).generate_chrome_trace_format(time="simulated")
    with pytest.raises(ValueError, match='time must be "wall" or "simulated"'):
        Timeline(stats).generate_chrome_trace_format(time="cpu")


def test_show_memory_adds_tensor_processes():
    events = validate_trace(Timeline(two_gpu_step()).generate_chrome_trace_format(show_memory=True))
    names = process_names(events)
    tensor_processes = [n for n in names.values() if n.endswith(" Tensors")]
    assert tensor_processes == [f"{CPU0} Tensors", f"{GPU0} Tensors", f"{GPU1} Tensors"]
    lifetimes = collections.defaultdict(dict)
    for e in events:
        if e["ph"] in "NOD":
            lifetimes[e["name"]][e["ph"]] = e
    assert set(lifetimes) == {"a:0", "b:0", "mul:0", "c:0", "mul/_1:0", "add:0", "out:0"}
    mul = lifetimes["mul:0"]
    assert names[mul["N"]["pid"]] == f"{GPU0} Tensors"
    # Created at mul's start; last read by its _Send (producer found by stripping "/_0"), not by the
    # _Recv on GPU1 that shares the prefix.
    assert (mul["N"]["ts"], mul["D"]["ts"]) == (12, 31)
    assert mul["O"]["args"]["snapshot"] == {"bytes": 64, "producer": "mul"}
    gpu0_tensors = next(p for p, n in names.items() if n == f"{GPU0} Tensors")
    live = [(e["ts"], e["args"]["bytes"]) for e in events if e["ph"] == "C" and e["pid"] == gpu0_tensors]
    # a, b (8 B each) live from 0 until mul ends at 30; mul:0 (64 B) from 12 to 31.
    assert live == [(0, 16), (12, 80), (30, 64), (31, 0)]


def test_graph_supplies_data_edges():
    a = tf.constant(np.ones(2), name="a")
    b = tf.constant(np.ones(2), name="b")
    tf.multiply(a, b, name="mul")
    stats = StepStats([
        DeviceStepStats(GPU0, [ns("a", "Const", 0, 10, ""), ns("mul", "Mul", 12, 20, "")]),
        DeviceStepStats(GPU1, [ns("b", "Const", 0, 5, "")]),
    ])
    for graph in (tf.get_default_graph(), [tf.get_default_graph()]):
        events = validate_trace(Timeline(stats, graph=graph).generate_chrome_trace_format())
        assert ops(events)["mul"]["args"] == {"name": "mul", "op": "Mul", "input0": "a:0", "input1": "b:0"}
        assert {name for name, *_ in flow_pairs(events)} == {"b:0"}
    without_graph = validate_trace(Timeline(stats).generate_chrome_trace_format())
    assert not flow_pairs(without_graph)


def test_overlapping_transfers_on_one_link_get_lanes():
    sends, recvs = [], []
    for i in range(3):
        tensor = f"edge_{i}_x"
        sends.append(ns(f"x{i}/_0", "_Send", i, i + 1, timeline_label(f"x{i}/_0", "_Send", tensor_name=tensor,
                                                                        peer_device=GPU1), output_bytes=()))
        recvs.append(ns(f"x{i}/_1", "_Recv", 0, 20 + i, timeline_label(f"x{i}/_1", "_Recv", tensor_name=tensor,
                                                                        peer_device=GPU0), output_bytes=(4 * i,)))
    stats = StepStats([DeviceStepStats(GPU0, sends), DeviceStepStats(GPU1, recvs)])
    events = validate_trace(Timeline(stats).generate_chrome_trace_format())
    transfers = sorted((e["ts"], e["tid"], e["name"]) for e in events if e["ph"] == "X" and e["cat"] == "Transfer")
    assert transfers == [(0, 1, "edge_0_x (0 B)"), (1, 2, "edge_1_x (4 B)"), (2, 3, "edge_2_x (8 B)")]


def test_output_is_deterministic_and_empty_stats_are_valid():
    first = Timeline(two_gpu_step()).generate_chrome_trace_format(show_memory=True)
    assert first == Timeline(two_gpu_step()).generate_chrome_trace_format(show_memory=True)
    assert validate_trace(Timeline(StepStats([])).generate_chrome_trace_format(show_memory=True)) == []


def test_trace_of_a_threaded_two_device_step(no_thread_leak):
    """Two device threads exchange a tensor through a Rendezvous; their wall-clock stats make a valid trace."""
    rv, collector, recv_started = Rendezvous(), StepStatsCollector(), threading.Event()
    key = create_key(GPU0, 1, GPU1, "edge_1_x")

    def run(device, name, op, fn, label):
        start = time.perf_counter()
        value = fn()
        end = time.perf_counter()
        nbytes = () if value is None else (value.nbytes,)
        start_us, end_us = int(start * 1e6), int(end * 1e6)
        collector.record(device, NodeExecStats(name, op, start_us, 0, end_us - start_us, end_us - start_us,
                                               threading.get_ident(), nbytes, label))
        return value

    def gpu0():
        x = run(GPU0, "x", "Const", lambda: np.ones(256, np.float32), timeline_label("x", "Const"))
        recv_started.wait(5.0)
        time.sleep(0.02)
        run(GPU0, "x/_0", "_Send", lambda: rv.send(key, x),
            timeline_label("x/_0", "_Send", tensor_name="edge_1_x", peer_device=GPU1))

    def gpu1():
        recv_started.set()
        y = run(GPU1, "x/_1", "_Recv", lambda: rv.recv(key, timeout_s=5.0),
                timeline_label("x/_1", "_Recv", tensor_name="edge_1_x", peer_device=GPU0))
        run(GPU1, "y", "Neg", lambda: -y, timeline_label("y", "Neg", ["x/_1"]))

    threads = [threading.Thread(target=gpu1), threading.Thread(target=gpu0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5.0)
    events = validate_trace(Timeline(collector.finalize()).generate_chrome_trace_format(show_memory=True))
    (transfer,) = [e for e in events if e["ph"] == "X" and e["cat"] == "Transfer"]
    assert transfer["args"]["bytes"] == 1024 and transfer["name"] == "edge_1_x (1024 B)"
    assert [r.tensor_name for r in rv.transfers()] == ["edge_1_x"]
    assert rv.transfers()[0].recv_wait_s > 0  # the recv was asked for before the send


@pytest.mark.parametrize(
    "events, problem",
    [
        ([{"ph": "X", "cat": "Op", "name": "a", "pid": 1, "tid": 1, "ts": 0}], "lacks"),
        ([{"ph": "X", "cat": "Op", "name": "a", "pid": 1, "tid": 1, "ts": -1, "dur": 1}], "ts"),
        ([{"ph": "X", "cat": "Op", "name": "a", "pid": "1", "tid": 1, "ts": 0, "dur": 1}], "pid"),
        ([{"ph": "X", "cat": "Op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}], "process_name"),
        ([{"ph": "X", "cat": "Op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
          {"ph": "X", "cat": "Op", "name": "b", "pid": 1, "tid": 1, "ts": 3, "dur": 5}], "overlap"),
        ([{"ph": "X", "cat": "Op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
          {"ph": "s", "cat": "DataFlow", "name": "f", "pid": 1, "tid": 1, "ts": 1, "id": 0}], "flow 0"),
        ([{"ph": "X", "cat": "Op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
          {"ph": "s", "cat": "DataFlow", "name": "f", "pid": 1, "tid": 1, "ts": 1, "id": 0},
          {"ph": "t", "cat": "DataFlow", "name": "f", "pid": 1, "tid": 1, "ts": 9, "id": 0}], "outside"),
        ([{"ph": "D", "name": "t", "pid": 1, "tid": 1, "ts": 0, "id": 0}], "not created first"),
        ([{"ph": "Q", "name": "t", "pid": 1}], "unknown phase"),
    ],
)
def test_validator_catches_broken_traces(events, problem):
    meta = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p"}}] if problem != "process_name" else []
    with pytest.raises(AssertionError, match=problem):
        validate_trace(json.dumps({"traceEvents": meta + events}))


def test_validator_rejects_nan():
    with pytest.raises(AssertionError, match="NaN"):
        validate_trace('{"traceEvents": [{"ph": "C", "name": "m", "pid": 1, "ts": NaN, "args": {}}]}')
