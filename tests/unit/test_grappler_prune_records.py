"""The optimizer's pruner keeps exactly what a preserved or stateful node depends on, and each pass record
lists its graphs producers first.

Reference: TF's model pruner (``tensorflow/core/grappler/optimizers/model_pruner.cc``) keeps the fanin of the
nodes to preserve; dfcore also keeps stateful nodes. A GraphDef's topological order (producers first) is what
the records promise. Nothing here is timed.
"""

import numpy as np

import dfcore as tf
from dfcore.runtime.grappler.graph_item import GraphItem


def _item():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        v = tf.Variable(np.zeros(2, np.float32), name="v")
        kept = tf.multiply(x, 2.0, name="kept")
        with tf.control_dependencies([tf.add(x, 1.0, name="ctrl")]):
            fetched = tf.identity(kept, name="fetched")
        tf.multiply(x, 3.0, name="dead")
        tf.negative(tf.multiply(x, 4.0, name="dead_in"), name="dead_out")
    ops = graph.get_operations()
    return GraphItem(ops, {op: "/job:localhost/replica:0/task:0/device:CPU:0" for op in ops}, [x], [fetched], []), v


def test_prune_drops_the_dead_branches_and_keeps_control_and_stateful_fanin():
    item, v = _item()
    item.prune()
    names = set(item.nodes)
    assert {"x", "kept", "ctrl", "fetched", v.op.name} <= names
    assert not names & {"dead", "dead_in", "dead_out"}
    before = dict(item.nodes)
    item.prune()  # nothing left to drop: the same nodes
    assert item.nodes == before



def test_pass_records_list_each_graph_producers_first():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.int32, [2], name="x")
        y = x * 2 * 3 * 4  # the arithmetic optimizer rewires it (its new node sorts before its users)
    with tf.Session(graph=graph) as sess:
        records = sess.optimizer_records(y, {x: np.ones(2, np.int32)})
    assert any(record.changed for record in records)
    for record in records:
        for snapshot in (record.graph_before, record.graph):
            seen = {"x"}  # the fed placeholder is the user's tensor, not a node
            for name, _, inputs, _ in snapshot:
                assert all(i.lstrip("^").split(":")[0] in seen for i in inputs), (record.optimizer, name)
                seen.add(name)
