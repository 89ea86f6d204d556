"""The optimizer's kept tables equal what a fresh walk of the graph gives, after every pass.

Reference: a rebuild from scratch (``GraphItem.rebuilt_users``, a ``GraphState`` captured from every node,
the pass record computed from two full states), which is what the optimizer computed before it kept the
users table, the prune candidates and the pass states up to date as passes rewrite. The graphs exercise every
pass (each one's records must show a change, so the test fails if a pass stops rewriting them). Nothing here
is timed.
"""

import numpy as np

import dfcore as tf
from dfcore.framework.protos import ConfigProto
from dfcore.runtime.grappler import meta_optimizer
from dfcore.runtime.grappler.meta_optimizer import GraphState


def _every_pass_graph():
    """Fetches and feed of a graph that each grappler pass and the classic folding and CSE rewrite."""
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [4, 3], name="x")
        w = tf.Variable(np.ones((3, 2), np.float32), name="w")
        folded = tf.sqrt(tf.constant([4.0, 9.0]) * 2.0 - 1.0, name="folded")  # constant folding, in place
        parts = tf.unstack(tf.constant([[1.0, 2.0], [3.0, 4.0]]), name="u")  # multi-output folding
        hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), folded + parts[0] - parts[1]))  # remapper
        y = hidden * 1.0  # arithmetic: a neutral element
        for _ in range(3):
            y = y + 2.0  # arithmetic: constants pushed down the chain
        same = tf.exp(y, name="e1") + tf.exp(y, name="e2")  # CSE
        gate = tf.no_op(name="gate")
        with tf.control_dependencies([gate]):
            out = tf.identity(tf.identity(same, name="hop") * 3.0, name="out")  # dependency optimizer
    return [out], {x: np.ones((4, 3), np.float32)}


def _classic_graph():
    a = tf.constant(2.0, name="a")
    b = tf.multiply(a, 5.0, name="b")
    x = tf.placeholder(tf.float32, [2], name="x")
    out = tf.identity(tf.square(x + b, name="s1") * tf.square(x + b, name="s2"), name="out")
    config = ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return [out], {x: np.ones(2, np.float32)}, config


def _checked_records(monkeypatch, fetches, feed, config=None):
    """The records of one run signature, checking after each pass that the kept tables equal a rebuild."""
    original = meta_optimizer._run
    checked = []

    def run_and_check(graph_pass, item, iteration, before, idle):
        record, after = original(graph_pass, item, iteration, before, idle)
        assert item.users == item.rebuilt_users(), graph_pass.name
        fresh = GraphState(item)
        assert after.snapshot() == fresh.snapshot(), graph_pass.name
        full_before, full_after = set(before.names()), set(fresh.names())
        assert record.removed == tuple(sorted(full_before - full_after))
        assert record.added == tuple(sorted(full_after - full_before))
        assert record.rewritten == tuple(sorted(before.rewritten(fresh, full_before & full_after)))
        checked.append(graph_pass.name)
        return record, after

    monkeypatch.setattr(meta_optimizer, "_run", run_and_check)
    with tf.Session(config=config) as sess:
        records = sess.optimizer_records(fetches, feed)
    assert checked == [r.optimizer for r in records]
    return records


def test_kept_users_states_and_records_equal_a_rebuild_after_every_pass(monkeypatch):
    graph = tf.Graph()
    with graph.as_default():
        fetches, feed = _every_pass_graph()
        grappler = _checked_records(monkeypatch, fetches, feed)
    graph = tf.Graph()
    with graph.as_default():
        classic = _checked_records(monkeypatch, *_classic_graph())
    changed = {r.optimizer for r in grappler + classic if r.changed}
    assert changed == {"common_subgraph_elimination", "constant_folding", "remapper", "arithmetic_optimizer",
                       "dependency_optimizer", "ConstantFold", "OptimizeCSE"}


def test_a_pass_that_changed_nothing_is_not_run_again_on_the_same_graph(monkeypatch):
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [2], name="x")
        y = tf.exp(x) * tf.constant(3.0) + tf.constant(0.5)  # nothing to rewrite
    calls = []

    def counted(run):
        def counted_run(item):
            calls.append(f"{run.__module__.rsplit('.', 1)[-1]}.{run.__name__}")
            run(item)
        return counted_run

    wrappers = {p.run: counted(p.run) for p in meta_optimizer.PASSES}  # one per function, as the passes share them
    passes = tuple(meta_optimizer.GraphPass(p.name, p.enabled, wrappers[p.run], p.classic)
                   for p in meta_optimizer.PASSES)
    monkeypatch.setattr(meta_optimizer, "PASSES", passes)
    with tf.Session() as sess:
        records = sess.optimizer_records(y, {x: np.ones(2, np.float32)})
        np.testing.assert_array_equal(sess.run(y, {x: np.zeros(2, np.float32)}), [3.5, 3.5])
    assert len(records) == 12 and not any(r.changed for r in records)
    assert all(r.graph == records[0].graph_before for r in records)
    # each pass once: the second round and the classic CSE (the same function as grappler's) are skipped
    assert calls == ["common_subgraph_elimination.run", "constant_folding.run", "remapper.run",
                     "arithmetic_optimizer.run", "dependency_optimizer.run", "constant_folding.run_classic"]
