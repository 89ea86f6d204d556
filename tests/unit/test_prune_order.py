"""The run's op order: producers first, ties broken by creation order (TF's ``subgraph.cc`` prunes; dfcore's
order is Kahn's algorithm with creation-id ties). Reference: the order worked out by hand for each graph;
nothing is timed."""

import dfcore as tf
from dfcore.runtime import prune


def test_creation_order_when_every_op_reads_only_older_ops():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        a = tf.exp(x, name="a")
        gate = tf.no_op(name="gate")
        with tf.control_dependencies([gate]):
            b = tf.add(a, tf.constant(1.0, name="one"), name="b")
        tf.negative(b, name="unused")
    needed = prune.prune([b], [], [x])
    order = [op.name for op in prune.topological_order(needed, [x])]
    assert order == ["a", "gate", "one", "b"]  # x is fed: its consumer needs nothing of it


def test_a_control_input_added_after_both_ops_were_made_orders_the_newer_op_first():
    graph = tf.Graph()
    with graph.as_default():
        a = tf.constant(1.0, name="a")
        b = tf.identity(a, name="b")
        d = tf.constant(2.0, name="d")
        e = tf.identity(d, name="e")
        b.op._add_control_input(e.op)  # b (made before e) now waits for e
        out = tf.add(b, d, name="out")
    order = [op.name for op in prune.topological_order(prune.prune([out], [], []))]
    assert order == ["a", "d", "e", "b", "out"]
