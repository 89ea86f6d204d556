"""A partition whose only asynchronous nodes are ``_Recv`` nodes without inputs runs as generated functions,
one per set of received values its nodes need (:mod:`dfcore.runtime.straight_line`): the same values as the
dataflow loop (reference: numpy), the same error naming the same node, on the calling thread and on a pool;
a ``_Send`` (or any work) that a received value does not reach is in a segment that does not wait for it, so
two partitions that feed each other both ways still finish and two devices' work overlaps."""

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors
from dfcore.runtime.compiled_partition import STRAIGHT_LINE_STEP
from dfcore.runtime.grappler import no_rewrite_session_config

GPU = "/device:GPU:0"


def _partition_on(sess, device):
    """The partition on ``device`` of the session's last plan (the step's, after its initializer's)."""
    plan = list(sess._plans.values())[-1]
    return next(p for p in plan.partitions if p.device.endswith(device))


def _feed_graph():
    """Two feeds received on GPU:0 (the CPU:0 partition sends them), a chain of adds, a matmul, a variable
    update and a fetch sent back to CPU:0."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        w = tf.placeholder(tf.float32, [3, 2], name="w")
        with tf.device(GPU):
            acc = tf.Variable(np.zeros((2, 2), np.float32), name="acc")
            y = x
            for i in range(5):
                y = tf.add(y, np.float32(i), name=f"add{i}")
            z = tf.matmul(y, w, name="z")
            update = tf.assign_add(acc, z, name="update")
        init = tf.global_variables_initializer()
    return graph, x, w, z, update, init


@pytest.mark.parametrize("runner", ["inline", "pool"])
def test_a_partition_receiving_its_feeds_runs_the_generated_function_with_the_loops_values(runner):
    graph, x, w, z, update, init = _feed_graph()
    rng = np.random.default_rng(0)
    feeds = [(rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32))
             for _ in range(STRAIGHT_LINE_STEP + 3)]
    with tf.Session(graph=graph, executor_runner=runner,
                    config=tf.ConfigProto(inter_op_parallelism_threads=2)) as sess:
        sess.run(init)
        got = [sess.run([z, update], {x: a, w: b}) for a, b in feeds]
        straight = _partition_on(sess, GPU).straight_line()
    assert straight is not None and len(straight.receives) == 2
    total = np.zeros((2, 2), np.float32)
    for (a, b), (got_z, got_update) in zip(feeds, got):
        want = (a + np.float32(sum(range(5)))) @ b
        total += want
        np.testing.assert_allclose(got_z, want, rtol=1e-6)
        np.testing.assert_allclose(got_update, total, rtol=1e-5)


def test_an_error_before_the_send_ends_the_step_naming_the_failing_node():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        bad = tf.reshape(x, [3], name="bad")  # on CPU:0: fails unless x has 3 elements
        with tf.device(GPU):
            y = tf.multiply(bad, 2.0, name="y")
    with tf.Session(graph=graph) as sess:
        for _ in range(STRAIGHT_LINE_STEP + 1):
            np.testing.assert_array_equal(sess.run(y, {x: np.ones(3, np.float32)}), np.full(3, 2.0, np.float32))
            with pytest.raises(errors.InvalidArgumentError, match="bad"):
                sess.run(y, {x: np.zeros(4, np.float32)})
        assert _partition_on(sess, GPU).straight_line() is not None


def _waits_for(partition, name):
    """The names of the receives whose values the segment holding node ``name`` waits for."""
    straight = partition.straight_line()
    assert straight is not None
    index = next(i for i, node in enumerate(partition.nodes) if node.name == name)
    return {partition.nodes[i].name for i in straight.waits_for(index)}


def _send_of(partition, name):
    """The name of the ``_Send`` of node ``name``'s output in ``partition``."""
    slot = next(node.out_slot for node in partition.nodes if node.name == name)
    return next(node.name for node in partition.nodes if node.op_type == "_Send" and node.in_slots == [slot])


def test_a_send_that_a_received_value_does_not_reach_goes_out_before_that_value_arrives():
    """GPU:0 sends ``c`` (no received value needed) to CPU:0, which sends ``d = c + 1`` back: waiting for
    ``d`` before sending ``c`` would never end, so ``c``'s send is in the segment that waits for nothing."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.device(GPU):
            c = tf.multiply(tf.constant([1.0, 2.0]), 3.0, name="c")
        with tf.device("/device:CPU:0"):
            d = tf.add(c, 1.0, name="d")
        with tf.device(GPU):
            e = tf.multiply(d, x, name="e")
    with tf.Session(graph=graph, config=no_rewrite_session_config()) as sess:  # c is not folded into CPU:0
        for step in range(STRAIGHT_LINE_STEP + 2):
            feed = np.array([step, 1.0], np.float32)
            np.testing.assert_array_equal(sess.run(e, {x: feed}), np.array([4.0, 7.0], np.float32) * feed)
        partition = _partition_on(sess, GPU)
        assert _waits_for(partition, _send_of(partition, "c")) == set()
        assert len(_waits_for(partition, "e")) == 2


def test_a_send_that_only_one_of_two_received_values_reaches_waits_for_that_one_only():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        w = tf.placeholder(tf.float32, [2], name="w")
        with tf.device(GPU):
            doubled = tf.multiply(x, 2.0, name="doubled")  # its _Send to CPU:0 needs x only
            both = tf.multiply(doubled, w, name="both")
    with tf.Session(graph=graph, config=no_rewrite_session_config()) as sess:
        for step in range(STRAIGHT_LINE_STEP + 2):
            a, b = np.array([step, 1.0], np.float32), np.array([3.0, -1.0], np.float32)
            got_doubled, got_both = sess.run([doubled, both], {x: a, w: b})
            np.testing.assert_array_equal(got_doubled, a * 2)
            np.testing.assert_array_equal(got_both, a * 2 * b)
        partition = _partition_on(sess, GPU)
        assert _waits_for(partition, _send_of(partition, "doubled")) == _waits_for(partition, "doubled")
        assert len(_waits_for(partition, "doubled")) == 1 and len(_waits_for(partition, "both")) == 2


def test_work_that_needs_no_received_value_runs_before_the_receives_so_two_devices_overlap():
    """``tf.group`` of a matmul on GPU:0 and one on GPU:1 ends in GPU:0's partition, which receives GPU:1's
    control edge; its own matmul needs nothing received. Waiting for the receive before running the matmul
    would run the two devices' matmuls one after the other (bench_devices' speed-up fell to 1.0), so the
    matmul is in the segment that waits for no receive, run while the edge is on its way."""
    graph = tf.Graph()
    rng = np.random.default_rng(0)
    with graph.as_default():
        products = []
        for i in range(2):
            with tf.device(f"/device:GPU:{i}"):
                a = tf.constant(rng.standard_normal((4, 4)).astype(np.float32))
                products.append(tf.matmul(a, a, name=f"product{i}"))
        step = tf.group(*[p.op for p in products])
    with tf.Session(graph=graph, config=no_rewrite_session_config()) as sess:  # the products are not folded
        for _ in range(STRAIGHT_LINE_STEP + 2):
            sess.run(step)
        plan = list(sess._plans.values())[-1]
        receiving = [p for p in plan.partitions if any(n.op_type == "_Recv" for n in p.nodes)]
        assert receiving, "tf.group across two devices receives a control edge"
        matmuls = 0
        for partition in receiving:
            for node in partition.nodes:
                if node.op_type == "MatMul":
                    assert _waits_for(partition, node.name) == set()
                    matmuls += 1
        assert matmuls == 1
