"""The control-flow primitives run by the executor: dead tensors, Merge, frames, iterations,
parallel_iterations, frame validation and deadlines (TF's executor.cc semantics)."""

import threading

import numpy as np
import pytest

import dfcore as tf
from dfcore.ops import control_flow_prims as cf
from dfcore.runtime import step_stats


def _manual_loop(limit):
    """``i = 0; while i < limit: i += 1`` built from the primitives by hand, as TF's while_loop does."""
    i0 = tf.constant(0, name="i0")
    enter = cf.enter(i0, "loop", name="enter_i")
    limit_in = cf.enter(tf.constant(limit), "loop", is_constant=True, name="enter_limit")
    one = cf.enter(tf.constant(1), "loop", is_constant=True, name="enter_one")
    merge, _ = cf.merge([enter, enter], name="merge_i")
    pred = cf.loop_cond(tf.less(merge, limit_in), name="cond")
    out_false, out_true = cf.switch(merge, pred, name="switch_i")
    body = tf.identity(out_true, name="body_in")
    merge.op._update_input(1, cf.next_iteration(body + one, name="next_i"))
    return cf.exit(out_false, name="exit_i")


def test_switch_sends_data_to_one_output_and_merge_forwards_the_live_one():
    x = tf.placeholder(tf.float32, [], name="x")
    p = tf.placeholder(tf.bool, [], name="p")
    out_false, out_true = cf.switch(x, p)
    merged, index = cf.merge([out_false + 100.0, out_true * 2.0])
    with tf.Session() as sess:
        assert sess.run([merged, index], {x: 3.0, p: True}) == [6.0, 1]
        assert sess.run([merged, index], {x: 3.0, p: False}) == [103.0, 0]


def test_a_dead_branch_does_not_run_its_ops():
    x = tf.placeholder(tf.float32, [None], name="x")
    p = tf.placeholder(tf.bool, [], name="p")
    out_false, out_true = cf.switch(x, p)
    bad = tf.reshape(out_false, [7])  # would fail if it ran
    merged, _ = cf.merge([tf.reduce_sum(bad), tf.reduce_sum(out_true)])
    with tf.Session() as sess:
        assert sess.run(merged, {x: [1.0, 2.0, 3.0], p: True}) == 6.0
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(merged, {x: [1.0, 2.0, 3.0], p: False})


def test_deadness_travels_along_control_edges():
    p = tf.placeholder(tf.bool, [], name="p")
    out_false, out_true = cf.switch(p, p)
    with tf.control_dependencies([out_false]):
        gated = tf.constant(5.0)
    merged, index = cf.merge([gated, tf.identity(tf.cast(out_true, tf.float32))])
    with tf.Session() as sess:
        assert sess.run([merged, index], {p: True}) == [1.0, 1]
        assert sess.run([merged, index], {p: False}) == [5.0, 0]


def test_a_merge_of_two_live_inputs_forwards_one_of_them():
    """TF's executor runs a Merge on the first live input to arrive and ignores a later one (no error)."""
    a, b = tf.constant(1.0), tf.constant(2.0)
    merged, index = cf.merge([a, b])
    with tf.Session() as sess:
        value, which = sess.run([merged, index])
    assert value == [1.0, 2.0][which]


def test_a_loop_of_primitives_counts_to_its_limit():
    out = _manual_loop(10)
    with tf.Session() as sess:
        assert sess.run(out) == 10


def test_an_op_fed_from_two_frames_is_rejected_with_tfs_message():
    i0 = tf.constant(0)
    enter = cf.enter(i0, "loop")
    merge, _ = cf.merge([enter, enter])
    bad = tf.less(merge, tf.constant(3, name="outside"))  # 'outside' is in the root frame
    out_false, out_true = cf.switch(merge, cf.loop_cond(bad))
    merge.op._update_input(1, cf.next_iteration(out_true))
    out = cf.exit(out_false)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="has inputs from different frames"):
        sess.run(out)


def _open_iterations(parallel_iterations):
    """The most iterations of a loop that were in flight at once, and how many ran, from the step stats."""
    def body(i, j):
        for _ in range(4):  # a chain: the next iteration can start before it ends
            j = tf.identity(j)
        return i + 1, j

    out = tf.while_loop(lambda i, j: i < 6, body, (tf.constant(0), tf.constant(0)),
                        parallel_iterations=parallel_iterations)
    with tf.Session() as sess:
        meta = tf.RunMetadata()
        sess.run(out, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    labels = [ns.timeline_label for ds in meta.step_stats.dev_stats for ns in ds.node_stats]
    iterations = [step_stats.parse_timeline_label(label).frame_iter for label in labels]
    iterations = [it for it in iterations if it is not None]
    first, last = {}, {}
    for position, (_, it) in enumerate(iterations):
        first.setdefault(it, position)
        last[it] = position
    return max(sum(1 for it in first if first[it] <= t <= last[it]) for t in range(len(iterations))), len(first)


def test_parallel_iterations_bounds_the_iterations_in_flight():
    most, count = _open_iterations(1)
    assert most == 1 and count == 7  # iterations 0..6 (the last one only tests the predicate)
    most, count = _open_iterations(3)
    assert 1 < most <= 3 and count == 7


def test_an_infinite_loop_stops_at_the_run_deadline_without_committing_an_update():
    v = tf.Variable(0.0)
    forever = tf.while_loop(lambda i: tf.constant(True), lambda i: i + 1, [tf.constant(0)])
    with tf.control_dependencies([forever]):
        update = tf.assign_add(v, 1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        before = set(threading.enumerate())
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(update, options=tf.RunOptions(timeout_in_ms=200))
        assert sess.run(v) == 0.0
        assert set(threading.enumerate()) <= before


def test_loop_results_agree_with_numpy_on_the_thread_pool():
    x = tf.placeholder(tf.float64, [4], name="x")
    _, acc = tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * x + 1.0),
                           (tf.constant(0), tf.ones([4], tf.float64)))
    value = np.array([0.5, 1.0, 2.0, -1.0])
    expected = np.ones(4)
    for _ in range(5):
        expected = expected * value + 1.0
    config = tf.ConfigProto(inter_op_parallelism_threads=4)
    with tf.Session(config=config) as sess:
        np.testing.assert_allclose(sess.run(acc, {x: value}), expected)


def test_fetching_a_dead_tensor_fails_as_in_tf():
    p = tf.placeholder(tf.bool, [], name="p")
    _, out_true = cf.switch(tf.constant(1.0), p)
    with tf.Session() as sess:
        assert sess.run(out_true, {p: True}) == 1.0
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Retval\[0\] does not have value"):
            sess.run(out_true, {p: False})


def test_the_simulated_clock_replays_every_iteration():
    x = tf.placeholder(tf.float32, [64, 64], name="x")
    _, y = tf.while_loop(lambda i, y: i < 5, lambda i, y: (i + 1, tf.matmul(y, x)), (tf.constant(0), x))
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(y, {x: np.eye(64, dtype=np.float32)}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=meta)
    stats = tf.step_records(meta).step_stats
    matmuls = sorted((step_stats.parse_timeline_label(ns.timeline_label).frame_iter[1], ns)
                     for ds in stats.dev_stats for ns in ds.node_stats if ns.node_name == "while/MatMul")
    # once per iteration; in the last one (the predicate is false) it runs dead: recorded, no simulated time
    assert [it for it, _ in matmuls] == [0, 1, 2, 3, 4, 5]
    assert matmuls[-1][1].sim_end_micros == matmuls[-1][1].sim_start_micros
    matmuls = matmuls[:-1]
    starts = [ns.sim_start_micros for _, ns in matmuls]
    assert all(ns.sim_end_micros > ns.sim_start_micros for _, ns in matmuls)
    assert starts == sorted(starts) and len(set(starts)) == 5
    for (_, earlier), (_, later) in zip(matmuls, matmuls[1:]):
        assert later.sim_start_micros >= earlier.sim_end_micros  # iteration k+1 needs iteration k's product


def test_ref_switch_assigns_only_in_the_taken_branch():
    v = tf.Variable(1.0)
    p = tf.placeholder(tf.bool, [], name="p")
    _, ref_true = cf.ref_switch(v._ref(), p)
    assert ref_true.dtype.is_ref
    update = tf.assign(ref_true, 5.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(update.op, {p: False})
        assert sess.run(v) == 1.0  # the Assign ran dead: nothing written
        sess.run(update.op, {p: True})
        assert sess.run(v) == 5.0
    with pytest.raises(TypeError, match="ref_switch needs a reference"):
        cf.ref_switch(tf.constant(1.0), p)


def test_the_compiled_partition_knows_each_nodes_frame():
    from dfcore.runtime import partition as partition_lib, prune
    from dfcore.runtime.partition_compiler import compile_partition

    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.while_loop(lambda j: j < 2, lambda j: j + 1, [y])),
                         (tf.constant(0), tf.constant(0)), name="outer")
    ops = prune.topological_order(prune.prune([y], [], []))
    device = "/job:localhost/replica:0/task:0/device:CPU:0"
    graphs = partition_lib.partition(ops, {op: device for op in ops}, fetches=[y])
    compiled = compile_partition(graphs[device])
    info = compiled.control_flow
    frame_of = {node.name: frame for node, frame in zip(compiled.nodes, info.frames)}
    assert frame_of["outer/Enter"] == "" and frame_of["outer/Merge"] == "outer/while_context"
    assert frame_of["outer/while/Merge"] == "outer/while/while_context"
    assert frame_of["outer/while/Exit"] == "outer/while/while_context"
    assert info.frame_parent == {"outer/while_context": "", "outer/while/while_context": "outer/while_context"}
