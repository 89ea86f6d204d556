"""Control flow in the widgets: the primitives' shapes, a cond's dead branch greyed for each predicate, the
loop-control copies of a loop split across two devices, and its transfers per iteration in PartitionView and
TimelineView. Expectations are built by hand from TF's ``control_flow_ops.cond`` graph (``cond/switch_t``,
``cond/switch_f`` and the ops of each branch) and from the loop's cross-device edges (TF's graph_partition.cc
``AddControlLoop``; Yu et al., EuroSys 2018, §4.2)."""

import re

import numpy as np
import pytest

import dfcore as tf
from dfcore.runtime.control_flow_executor import frame_id_of
from widgets import GraphView, PartitionView, TimelineView, _control_flow, _dot, _palette, _timeline

TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
GPU = "/job:localhost/replica:0/task:0/device:GPU:{}"
FRAME = "while/while_context"
ITERATIONS = 3
TRUE_BRANCH = {"cond/switch_t", "cond/mul/y", "cond/mul"}
FALSE_BRANCH = {"cond/switch_f", "cond/sub/y", "cond/sub"}


def _cond_run(pred):
    p = tf.placeholder(tf.bool, [], name="p")
    x = tf.constant(3.0, name="x")
    y = tf.cond(p, lambda: x * 2.0, lambda: x - 1.0)
    sess = tf.Session()
    meta = tf.RunMetadata()
    value = sess.run(y, {p: pred}, options=TRACE, run_metadata=meta)
    return sess, y, {p: pred}, meta, value


def _loop_on_two_devices():
    """y <- tanh(y * 0.5 (on GPU:1) + x) on GPU:0, ITERATIONS times; traced."""
    x = tf.placeholder(tf.float32, [3], name="x")

    def body(i, y):
        with tf.device("/device:GPU:1"):
            y = y * 0.5
        with tf.device("/device:GPU:0"):
            return i + 1, tf.tanh(y + x)

    with tf.device("/device:GPU:0"):
        out = tf.while_loop(lambda i, y: i < ITERATIONS, body, (tf.constant(0), tf.ones([3])))
    sess = tf.Session(config=tf.ConfigProto(device_count={"GPU": 2}))
    meta = tf.RunMetadata()
    feed = {x: np.ones(3, np.float32)}
    sess.run(out, feed, options=TRACE, run_metadata=meta)
    return sess, out, feed, meta


def _grey_nodes(dot):
    """Names of the nodes a DOT text fills with the dead colour."""
    return set(re.findall(rf'^\s*"([^"]+)" \[[^\n]*fillcolor="{_palette.DEAD_FILL}"', dot, re.M))


def test_each_control_flow_primitive_has_its_own_shape():
    types = ("Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "Add", "_Send", "_Recv", "Placeholder")
    assert len({_palette.dot_shape(t) for t in types}) == len(types)
    assert _palette.op_kind("ControlTrigger") == "control"


@pytest.mark.parametrize("pred, dead", [(True, FALSE_BRANCH), (False, TRUE_BRANCH)])
def test_graph_view_greys_the_untaken_branch(pred, dead):
    sess, _, _, meta, value = _cond_run(pred)
    assert value == (6.0 if pred else 2.0)
    view = GraphView(sess.graph, sess, run_metadata=meta)
    assert view.dead == dead
    assert _grey_nodes(view.dot) == dead
    assert repr(view).endswith(f", {len(dead)} dead>")
    # the edges out of dead nodes, and out of the Switch port that sent the dead tensor, are grey
    grey_edges = set(re.findall(rf'^\s*"([^"]+)" -> "([^"]+)" \[[^\n]*color="{_palette.DEAD_INK}"', view.dot, re.M))
    branch, pivot = ("sub", "cond/switch_f") if pred else ("mul", "cond/switch_t")
    assert grey_edges == {("cond/Switch", pivot), (pivot, f"cond/{branch}/y"),
                          (f"cond/{branch}/Switch", f"cond/{branch}"), (f"cond/{branch}/y", f"cond/{branch}"),
                          (f"cond/{branch}", "cond/Merge")}
    assert re.search(r'"cond/Switch" \[[^\n]*shape="diamond"', view.dot)
    assert re.search(r'"cond/Merge" \[[^\n]*shape="invtriangle"', view.dot)


@pytest.mark.parametrize("pred, dead", [(True, FALSE_BRANCH), (False, TRUE_BRANCH)])
def test_partition_view_greys_the_untaken_branch_in_the_user_graph_and_the_partition(pred, dead):
    sess, y, feed, meta, _ = _cond_run(pred)
    view = PartitionView(sess, y, feed, run_metadata=meta)
    assert _grey_nodes(view.before_dot) == dead
    assert set().union(*(_grey_nodes(d) for d in view.dots.values())) == dead
    assert view.iteration_rows == [] and view.control_loops == []


def test_without_a_run_nothing_is_grey():
    sess, y, feed, _, _ = _cond_run(True)
    view = PartitionView(sess, y, feed)
    assert view.dead == {} and not _grey_nodes(view.before_dot)


def test_a_loop_on_two_devices_has_a_control_loop_copy_on_each_receiving_device():
    sess, out, feed, meta = _loop_on_two_devices()
    view = PartitionView(sess, out, feed, run_metadata=meta)
    # GPU:1 receives y and the LoopCond; GPU:0 receives y * 0.5 back: both run the loop's control.
    assert [(d, f) for d, f, _ in view.control_loops] == [(GPU.format(0), FRAME), (GPU.format(1), FRAME)]
    for _, _, names in view.control_loops:
        types = sorted(n.op for g in view.partitions.values() for n in g.nodes if n.name in names)
        assert types == ["Const", "Enter", "Identity", "Merge", "NextIteration", "Switch"]
    assert f'label="control loop of {FRAME}"' in view.dots[GPU.format(1)]
    assert "2 control loops" in repr(view)


def test_partition_view_counts_the_transfers_of_each_iteration():
    sess, out, feed, meta = _loop_on_two_devices()
    view = PartitionView(sess, out, feed, run_metadata=meta)
    frame = frame_id_of(0, 0, FRAME)
    # Per iteration: the LoopCond to GPU:1, y and the control edge of its pivot (for the constant 0.5) to
    # GPU:1, y * 0.5 back to GPU:0. In the last test (iteration 3) only the LoopCond is live.
    expected = [(frame, i, 4, 0) for i in range(ITERATIONS)] + [(frame, ITERATIONS, 4, 3)]
    assert view.iteration_rows == expected
    carried = {row[0]: row[-1] for row in view.pair_rows}
    assert sorted(carried.values()) == [1, 1, 1] + [ITERATIONS + 1] * 4  # x in, i and y out; the loop's 4 pairs


def test_timeline_view_shows_each_iteration_and_the_transfers_per_iteration():
    _, _, _, meta = _loop_on_two_devices()
    view = TimelineView(meta)
    assert view.loops == [(frame_id_of(0, 0, FRAME), ITERATIONS + 1, (4,) * (ITERATIONS + 1))]
    spans = view.spans["simulated"]
    tanh = [s for s in spans.ops if s.name == "while/Tanh"]
    assert sorted((s.frame_iter[1], s.dead) for s in tanh) == [(i, i == ITERATIONS) for i in range(ITERATIONS + 1)]
    assert {s.title for s in tanh} == {f"while/Tanh ·{i}" for i in range(ITERATIONS + 1)}
    # each Send pairs with the Recv of its own iteration
    assert all(t.send.frame_iter == t.recv.frame_iter for t in spans.transfers)
    assert sum(t.dead for t in spans.transfers) == 3
    # y * 0.5 (3 float32) comes back in every live iteration; the last test's is dead and carries nothing
    back = sorted((t.recv.frame_iter[1], t.nbytes) for t in spans.transfers if t.tensor_name.endswith("while/mul"))
    assert back == [(i, 12) for i in range(ITERATIONS)] + [(ITERATIONS, 0)]
    assert "transfers per iteration 4, 4, 4, 4" in view.stack.children[0].children[0].value


@pytest.mark.parametrize("pred, dead", [(True, FALSE_BRANCH), (False, TRUE_BRANCH)])
def test_timeline_view_draws_the_dead_branch_grey(pred, dead):
    _, _, _, meta, _ = _cond_run(pred)
    spans = TimelineView(meta).spans["simulated"]
    assert {s.name for s in spans.ops if s.dead} == dead
    svg = _timeline.draw(spans, _timeline.layout(spans))
    assert svg.count(f'fill="{_palette.DEAD_FILL}"') == len(dead)


def test_dead_throughout_keeps_only_nodes_dead_in_every_execution():
    _, _, _, meta = _loop_on_two_devices()
    records = tf.step_records(meta)
    # while/Tanh runs live in iterations 0..2 and dead in the last test: not dead throughout
    assert any(name == "while/Tanh" for _, name, _ in records.dead_nodes)
    assert _control_flow.dead_throughout(records) == {}


def test_partition_dot_names_no_control_pair_inside_a_control_loop():
    sess, out, feed, _ = _loop_on_two_devices()
    graph = sess.partitions(out, feed)[GPU.format(1)]
    pairs = _dot.control_pair_nodes(graph)
    assert pairs and not any("/_cloop_" in name for name in pairs)


def test_the_timeline_marks_where_each_iteration_starts():
    _, _, _, meta = _loop_on_two_devices()
    spans = TimelineView(meta).spans["simulated"]
    starts = _timeline.iteration_starts(spans)
    assert [(frame, it) for frame, it, _ in starts] == [(frame_id_of(0, 0, FRAME), i) for i in range(ITERATIONS + 1)]
    for frame, it, start in starts:  # the first node run of the iteration, on any device
        assert start == min(s.start_us for s in spans.ops if s.frame_iter == (frame, it))
    svg = _timeline.draw(spans, _timeline.layout(spans))
    assert svg.count('stroke-dasharray="1,2"') == ITERATIONS + 1 and "iter 0" in svg
