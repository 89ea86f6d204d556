"""The graph optimizer's switches and records: TF's RewriterConfig / OptimizerOptions semantics.

Reference: ``tensorflow/core/grappler/optimizers/meta_optimizer.cc`` (order, Toggle OFF/DEFAULT, min_graph_nodes,
two iterations), ``common_runtime/graph_optimizer.cc`` (L1 turns on the classic folding and CSE, L0 leaves
them to ``do_*``), ``python/framework/test_util.py`` (the no-rewrite config of TF's tests).
"""

import numpy as np
import pytest

import dfcore as tf
from dfcore.framework.protos import ConfigProto, OptimizerOptions
from dfcore.runtime.grappler import PASSES, no_rewrite_session_config

GRAPPLER_ORDER = ["common_subgraph_elimination", "constant_folding", "remapper", "arithmetic_optimizer",
                  "dependency_optimizer"]


def _graph():
    """x fed; five ops, two of them duplicates, one foldable constant expression."""
    x = tf.placeholder(tf.float32, [2], name="x")
    c = tf.add(tf.constant(2.0, name="two"), tf.constant(3.0, name="three"), name="five")
    y = tf.multiply(tf.square(x, name="sq_a") + tf.square(x, name="sq_b"), c, name="y")
    return x, y


def _records(config, fetch_and_feed=None):
    x, y = fetch_and_feed or _graph()
    with tf.Session(config=config) as sess:
        value = sess.run(y, {x: np.array([1.0, 2.0], np.float32)})
        np.testing.assert_array_equal(value, np.array([10.0, 40.0], np.float32))
        return sess.optimizer_records(y, {x: np.array([1.0, 2.0], np.float32)})


def test_default_runs_tf_passes_in_tf_order_twice_then_the_classic_ones():
    records = _records(None)
    assert [r.optimizer for r in records] == GRAPPLER_ORDER * 2 + ["ConstantFold", "OptimizeCSE"]
    assert [r.iteration for r in records] == [0] * 5 + [1] * 5 + [-1, -1]
    assert [p.name for p in PASSES] == GRAPPLER_ORDER + ["ConstantFold", "OptimizeCSE"]


def test_records_name_what_each_pass_did():
    records = {r.optimizer: r for r in _records(None) if r.iteration == 0}
    cse = records["common_subgraph_elimination"]
    assert cse.removed == ("sq_b",) and cse.nodes_after == cse.nodes_before - 1
    folding = records["constant_folding"]
    assert set(folding.removed) == {"two", "three"} and "five" in folding.rewritten
    assert ("five", "Const", (), folding.graph[0][3]) in folding.graph


def test_no_rewrite_config_runs_nothing_and_keeps_the_graph_as_built():
    assert _records(no_rewrite_session_config()) == ()
    config = no_rewrite_session_config(ConfigProto(log_device_placement=False, device_count={"GPU": 1}))
    assert config.device_count["GPU"] == 1 and config.graph_options.rewrite_options.disable_meta_optimizer


def test_disable_meta_optimizer_leaves_the_classic_l1_passes():
    config = ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    assert [r.optimizer for r in _records(config)] == ["ConstantFold", "OptimizeCSE"]


@pytest.mark.parametrize("field, gone", [
    ("constant_folding", {"constant_folding"}), ("remapping", {"remapper"}),
    ("dependency_optimization", {"dependency_optimizer"}),
    ("common_subgraph_elimination", {"common_subgraph_elimination"}),
    # TF runs CSE only while arithmetic optimization is on too
    ("arithmetic_optimization", {"arithmetic_optimizer", "common_subgraph_elimination"}),
])
def test_a_toggle_set_off_drops_its_pass(field, gone):
    config = ConfigProto()
    setattr(config.graph_options.rewrite_options, field, config.graph_options.rewrite_options.OFF)
    names = {r.optimizer for r in _records(config) if r.iteration >= 0}
    assert names == set(GRAPPLER_ORDER) - gone


def test_l0_turns_the_classic_passes_off_unless_asked_for():
    config = ConfigProto()
    config.graph_options.optimizer_options.opt_level = OptimizerOptions.L0
    assert [r.optimizer for r in _records(config) if r.iteration < 0] == []
    config.graph_options.optimizer_options.do_constant_folding = True
    assert [r.optimizer for r in _records(config) if r.iteration < 0] == ["ConstantFold"]


def test_graphs_under_min_graph_nodes_are_not_rewritten_by_grappler():
    a = tf.constant(1.0, name="a")
    b = tf.add(a, a, name="b")
    tf.identity(b, name="c")
    with tf.Session() as sess:
        assert sess.run("c:0") == 2.0
        assert [r.optimizer for r in sess.optimizer_records("c:0")] == ["ConstantFold", "OptimizeCSE"]
    config = ConfigProto()
    config.graph_options.rewrite_options.min_graph_nodes = -1
    with tf.Session(config=config) as sess:
        assert sess.run("c:0") == 2.0
        assert "constant_folding" in [r.optimizer for r in sess.optimizer_records("c:0")]


def test_one_iteration_when_asked():
    config = ConfigProto()
    config.graph_options.rewrite_options.meta_optimizer_iterations = 1  # RewriterConfig.ONE
    assert [r.iteration for r in _records(config)] == [0] * 5 + [-1, -1]


def test_graphs_with_control_flow_are_left_alone():
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.cond(x > 0, lambda: tf.square(x) + tf.square(x), lambda: x * 1.0)
    with tf.Session() as sess:
        assert sess.run(y, {x: 3.0}) == 18.0
        assert sess.optimizer_records(y, {x: 3.0}) == ()


def test_partition_graphs_in_run_metadata_are_the_optimized_ones():
    x, y = _graph()
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(y, {x: np.ones(2, np.float32)}, options=tf.RunOptions(output_partition_graphs=True),
                 run_metadata=metadata)
    names = {node.name: node.op for graph in metadata.partition_graphs for node in graph.node}
    assert names["five"] == "Const" and "sq_b" not in names and "two" not in names


def test_session_accessor_refuses_a_closed_session():
    x, y = _graph()
    sess = tf.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.optimizer_records(y, {x: np.ones(2, np.float32)})


def test_the_optimizer_runs_once_per_run_signature():
    x, y = _graph()
    feed = {x: np.ones(2, np.float32)}
    with tf.Session() as sess:
        sess.run(y, feed)
        first = sess.optimizer_records(y, feed)
        sess.run(y, {x: np.zeros(2, np.float32)})
        assert sess.optimizer_records(y, feed) is first  # the cached plan's records, not a second optimization
        assert sess.optimizer_records([y, x], feed) is not first  # another signature, optimized on its own


def test_partial_runs_keep_the_graph_as_built():
    x, y = _graph()
    with tf.Session() as sess:
        handle = sess.partial_run_setup([y], [x])
        np.testing.assert_array_equal(sess.partial_run(handle, y, {x: np.array([1.0, 2.0], np.float32)}),
                                      np.array([10.0, 40.0], np.float32))
        nodes = {n.name for p in sess.partitions(y, {x: np.ones(2, np.float32)}, partial_run=True).values()
                 for n in p.nodes}
        assert {"sq_b", "two", "three", "five"} <= nodes
