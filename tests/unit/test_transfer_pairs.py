"""One Send/Recv pairing for the Chrome trace and the widgets: by the parts of TF's rendezvous key
(``Rendezvous::CreateKey``: tensor, send device, recv device, ``frame_id:iter_id``), so that each iteration of
a ``tf.while_loop`` whose body crosses devices pairs its own send with its own recv; and one lane packing."""

import json

import numpy as np
import pytest

import dfcore as tf
from dfcore.runtime.step_stats import DeviceStepStats, NodeExecStats, StepStats, TimelineLabel
from dfcore.runtime.transfer_pairs import TransferKey, pack_lanes, pair_transfers
from dfcore.timeline import Timeline
from widgets import _timeline

A, B = "/job:localhost/replica:0/task:0/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:1"
ITERATIONS = 3


def _end(name, op, device_peer, start, end, it, nbytes=()):
    detail = TimelineLabel(name, op, tensor_name="edge_y", peer_device=device_peer, frame_iter=(7, it))
    return NodeExecStats(name, op, start, 0, end - start, end - start, 1, nbytes, detail.text(), start, end, detail)


def _crossed_loop_stats():
    """Two iterations of one loop transfer; iteration 1's send starts before iteration 0's (parallel
    iterations), so start order alone would pair iteration 1's send with iteration 0's recv."""
    sends = [_end("y/_send", "_Send", B, 30, 31, 0), _end("y/_send", "_Send", B, 10, 11, 1)]
    recvs = [_end("y/_recv", "_Recv", A, 20, 40, 0, (4,)), _end("y/_recv", "_Recv", A, 25, 50, 1, (8,))]
    return StepStats([DeviceStepStats(A, sends), DeviceStepStats(B, recvs)])


def test_pairs_match_iteration_by_iteration_not_by_start_order():
    stats = _crossed_loop_stats()
    nodes = [(dev.device, ns, ns) for dev in stats.dev_stats for ns in dev.node_stats]
    pairs = pair_transfers(nodes, lambda ns: ns.all_start_micros)
    assert [(p.key, p.send.all_start_micros, p.recv.all_start_micros) for p in pairs] == [
        (TransferKey("edge_y", A, B, (7, 0)), 30, 20), (TransferKey("edge_y", A, B, (7, 1)), 10, 25)]


def test_the_chrome_trace_and_the_widget_pair_the_crossed_loop_alike():
    stats = _crossed_loop_stats()
    events = json.loads(Timeline(stats).generate_chrome_trace_format(time="simulated"))["traceEvents"]
    transfers = sorted((e["args"]["iteration"], e["ts"], e["dur"], e["args"]["bytes"])
                       for e in events if e.get("cat") == "Transfer")
    # a transfer spans from when both ends started to the recv's end; its bytes are the recv's
    assert transfers == [(0, 30, 10, 4), (1, 25, 25, 8)]
    spans = _timeline.step_spans(stats, "simulated")
    assert sorted((t.recv.frame_iter[1], t.send.start_us, t.recv.start_us, t.nbytes) for t in spans.transfers) == [
        (0, 20, 10, 4), (1, 0, 15, 8)]  # µs from the step's first start (10)


@pytest.mark.parametrize("spans, most, lanes, count", [
    ([], None, [], 0),
    ([(0, 5), (5, 9), (2, 6), (6, 7)], None, [0, 0, 1, 1], 2),  # an end at a start leaves the lane free
    ([(0, 9), (1, 9), (2, 9)], None, [0, 1, 2], 3),
    ([(0, 9), (1, 9), (2, 9)], 2, [0, 1, 1], 2),  # beyond max_lanes the last lane takes the rest
    ([(3, 4), (0, 4), (0, 2)], None, [0, 1, 0], 2),  # placed by (start, end), lanes given in input order
])
def test_pack_lanes_is_first_fit_by_start(spans, most, lanes, count):
    assert pack_lanes(spans, most) == (lanes, count)


def _traced_loop():
    """y <- tanh(y * 0.5 (on GPU:1) + 1) on GPU:0, ITERATIONS times, traced with FULL_TRACE."""
    with tf.Graph().as_default():
        def body(i, y):
            with tf.device("/device:GPU:1"):
                y = y * 0.5
            with tf.device("/device:GPU:0"):
                return i + 1, tf.tanh(y + 1.0)

        with tf.device("/device:GPU:0"):
            out = tf.while_loop(lambda i, y: i < ITERATIONS, body, (tf.constant(0), tf.ones([3])))
        with tf.Session(config=tf.ConfigProto(device_count={"GPU": 2})) as sess:
            meta = tf.RunMetadata()
            _, y = sess.run(out, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    expected = np.ones(3)
    for _ in range(ITERATIONS):
        expected = np.tanh(expected * 0.5 + 1.0)
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    return tf.step_records(meta).step_stats


def _loop_slices(events, name):
    """``{(pid, tid): [(ts, end, iteration), ...]}`` of the op events of node ``name``."""
    found = {}
    for e in events:
        if e["ph"] == "X" and e["cat"] == "Op" and e["args"]["name"] == name:
            found.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], e["args"]["iteration"]))
    return found


def _inside(point, region):
    """True when the flow event ``point`` lies on the lane of the ``X`` event ``region``, within its time."""
    return ((point["pid"], point["tid"]) == (region["pid"], region["tid"])
            and region["ts"] <= point["ts"] <= region["ts"] + region["dur"])


@pytest.mark.parametrize("clock", ["wall", "simulated"])
def test_a_while_loop_across_devices_pairs_each_iteration_in_the_chrome_trace_and_the_widget(clock):
    stats = _traced_loop()
    events = json.loads(Timeline(stats).generate_chrome_trace_format(time=clock))["traceEvents"]
    flows = {}
    for e in events:
        if e["ph"] in "st" and e["cat"] == "DataFlow":
            flows.setdefault(e["id"], {})[e["ph"]] = e
    per_iteration = {}
    for transfer in (e for e in events if e.get("cat") == "Transfer" and "iteration" in e["args"]):
        args = transfer["args"]
        per_iteration.setdefault(args["iteration"], set()).add(args["tensor_name"])
        for node, end, here in ((args["send_node"], "s", "t"), (args["recv_node"], "t", "s")):
            # the arrow between the transfer and this end: its end on the node lies in that node's run of the
            # transfer's iteration, and in no other iteration's run
            (arrow,) = [f[end] for f in flows.values() if f[end]["name"] == args["tensor_name"]
                        and _inside(f[here], transfer)]
            runs = _loop_slices(events, node)[(arrow["pid"], arrow["tid"])]
            assert {it for start, stop, it in runs if start <= arrow["ts"] <= stop} == {args["iteration"]}
    # the loop crosses devices with the same tensors in each iteration: y * 0.5 comes back, y goes over
    assert sorted(per_iteration) == list(range(ITERATIONS + 1))
    assert len({frozenset(names) for names in per_iteration.values()}) == 1
    spans = _timeline.step_spans(stats, clock)
    looped = [t for t in spans.transfers if t.recv.frame_iter is not None]
    assert {t.recv.frame_iter[1] for t in looped} == set(range(ITERATIONS + 1))
    assert all(t.send.frame_iter == t.recv.frame_iter for t in looped)
    assert len(looped) == sum(len(names) for names in per_iteration.values())


def test_the_engine_records_each_nodes_parts_with_its_loop_iteration():
    stats = _traced_loop()
    nodes = [ns for dev in stats.dev_stats for ns in dev.node_stats]
    assert all(ns.detail.text() == ns.timeline_label and ns.detail.node_name == ns.node_name for ns in nodes)
    tanh = sorted(ns.detail.frame_iter[1] for ns in nodes if ns.node_name == "while/Tanh")
    assert tanh == list(range(ITERATIONS + 1))  # the last test's run is dead, but it ran
    recvs = [ns.detail for ns in nodes if ns.op_type == "_Recv"]
    assert recvs and all(d.is_transfer and d.peer_device in (A, B) and not d.inputs for d in recvs)
