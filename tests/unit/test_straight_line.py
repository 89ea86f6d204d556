"""A partition of synchronous nodes runs as one generated function from its STRAIGHT_LINE_STEP-th step on
(:mod:`dfcore.runtime.straight_line`): the same values, and the same errors naming the same node, as the
dataflow loop of its first step. Reference: numpy, and the loop itself (TF's executor semantics)."""

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors
from dfcore.runtime.compiled_partition import STRAIGHT_LINE_STEP
from dfcore.runtime.grappler import no_rewrite_session_config

CPU_ONLY = no_rewrite_session_config(tf.ConfigProto(device_count={"GPU": 0}))


def _graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        halves = tf.split(tf.reshape(x, [2, -1]), 2, axis=0)  # a node with two outputs
        y = x
        for i in range(20):
            y = tf.add(y, np.float32(i), name=f"add{i}")
        with tf.control_dependencies([y]):
            z = tf.identity(halves[1] * 2.0, name="z")
        bad = tf.reshape(y, [3], name="bad")  # fails unless x has 3 elements
    return graph, x, y, z, bad


def _partition(sess):
    (plan,) = sess._plans.values()
    (partition,) = plan.partitions
    return partition


def test_later_steps_run_the_generated_function_with_the_loops_values():
    graph, x, y, z, _ = _graph()
    feed = np.arange(4, dtype=np.float32)
    with tf.Session(graph=graph, config=CPU_ONLY) as sess:
        runs = [sess.run([y, z], {x: feed + step}) for step in range(STRAIGHT_LINE_STEP + 1)]
        assert _partition(sess).straight_line() is not None
    for step, (got_y, got_z) in enumerate(runs):
        np.testing.assert_array_equal(got_y, feed + step + np.float32(sum(range(20))))
        np.testing.assert_array_equal(got_z, (feed + step).reshape(2, 2)[1:] * 2.0)


def test_a_failing_kernel_names_its_node_as_in_the_loop():
    graph, x, _, _, bad = _graph()
    with tf.Session(graph=graph, config=CPU_ONLY) as sess:
        messages = []
        for _ in range(STRAIGHT_LINE_STEP + 1):  # the loop first, the generated function from STRAIGHT_LINE_STEP
            with pytest.raises(errors.InvalidArgumentError) as raised:
                sess.run(bad, {x: np.zeros(4, np.float32)})
            messages.append(str(raised.value))
        np.testing.assert_array_equal(sess.run(bad, {x: np.ones(3, np.float32)}), np.full(3, 191.0, np.float32))
        assert _partition(sess).straight_line() is not None
    assert "bad" in messages[0] and messages[-2:] == [messages[0]] * 2


def test_traced_steps_and_deadlines_keep_the_loop():
    graph, x, y, _, _ = _graph()
    feed = {x: np.zeros(4, np.float32)}
    with tf.Session(graph=graph, config=CPU_ONLY) as sess:
        for _ in range(STRAIGHT_LINE_STEP + 1):
            sess.run(y, feed)
        metadata = tf.RunMetadata()
        sess.run(y, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
        names = {n.node_name for d in tf.step_records(metadata).step_stats.dev_stats for n in d.node_stats}
        np.testing.assert_array_equal(sess.run(y, feed, options=tf.RunOptions(timeout_in_ms=60_000)),
                                      np.full(4, 190.0, np.float32))
    assert {f"add{i}" for i in range(20)} <= names  # every node has its record: the loop ran the traced step
