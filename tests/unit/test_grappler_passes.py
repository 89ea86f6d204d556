"""The optimizer's passes, each against the same graph run with TF's no-rewrite config (the reference:
results and dtypes bit for bit) and against hand-built expectations of the rewritten partitions.

References: TF's ``constant_folding.cc`` (in-place ``Const`` under the node's name,
``ConstantFolding/<name>-folded-<i>``, classic ``__cf__`` names), ``arithmetic_optimizer.cc``,
``common_subgraph_elimination.cc``, ``dependency_optimizer.cc``, ``remapper.cc``; IEEE 754 for ``-0.0 + 0.0``.
"""

import numpy as np
import pytest

import dfcore as tf
from dfcore.framework.protos import ConfigProto
from dfcore.runtime.grappler import no_rewrite_session_config


def _run_both(fetches, feed_dict=None, config=None):
    """(optimized values, reference values, {node name: op type} of the optimized partitions)."""
    with tf.Session(config=no_rewrite_session_config(config)) as sess:
        reference = sess.run(fetches, feed_dict)
    with tf.Session(config=config) as sess:
        values = sess.run(fetches, feed_dict)
        nodes = {n.name: n for graph in sess.partitions(fetches, feed_dict).values() for n in graph.nodes}
    return values, reference, nodes


def _assert_identical(values, reference):
    for got, want in zip(values, reference):
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.atleast_1d(got).view(np.uint8), np.atleast_1d(want).view(np.uint8))  # bits


def test_constant_expression_folds_under_its_own_name_and_the_fetch_survives():
    a = tf.constant([1.5, 2.0], name="a")
    b = tf.multiply(a, tf.constant(3.0), name="b")
    c = tf.subtract(b, tf.constant(0.25), name="c")
    d = tf.sqrt(c, name="d")
    values, reference, nodes = _run_both([d])
    _assert_identical(values, reference)
    assert nodes["c"].op == "Const" and nodes["d"].op == "Sqrt"  # the fetched node is never folded
    assert "b" not in nodes and "a" not in nodes
    np.testing.assert_array_equal(nodes["c"].original.get_attr("value"), np.array([4.25, 5.75], np.float32))


def test_multi_output_fold_names_each_output_as_tf():
    parts = tf.unstack(tf.constant([[1, 2], [3, 4]], tf.int32), name="u")
    s = tf.add(parts[0], parts[1], name="s")
    out = tf.identity(s * 2, name="out")
    values, reference, nodes = _run_both([out])
    _assert_identical(values, reference)
    assert nodes["mul"].op == "Const" and "s" not in nodes and "u" not in nodes  # folded through, then dead
    p = tf.placeholder(tf.int32, [2], name="p")
    both = tf.identity((parts[0] - p) * (parts[1] - p), name="both")
    feed = {p: np.array([1, 1], np.int32)}
    values, reference, nodes = _run_both([both], feed)
    _assert_identical(values, reference)
    assert nodes["sub"].inputs[0] == "ConstantFolding/u-folded-0"
    assert nodes["sub_1"].inputs[0] == "ConstantFolding/u-folded-1" and "u" not in nodes


def test_classic_folding_adds_cf_constants_when_grappler_is_off():
    a = tf.constant(2, name="a")
    b = tf.multiply(a, 5, name="b")
    c = tf.add(b, 1, name="c")
    config = ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    values, reference, nodes = _run_both([c], config=config)
    _assert_identical(values, reference)
    assert nodes["c"].op == "Add" and "b" not in nodes
    assert [n for n in nodes if "__cf__" in n] == ["b/_0__cf__0"]


def test_stateful_nodes_and_feeds_are_never_folded():
    r = tf.random_uniform([3], seed=1, name="r")
    z = tf.add(r * 0.0, tf.constant(1.0), name="z")
    w = tf.identity(z * 2.0, name="w")
    c = tf.constant(1.0, name="c")
    d = tf.add(c, 1.0, name="d")
    e = tf.multiply(d, 2.0, name="e")
    f = tf.identity(e + 1.0, name="f")
    with tf.Session() as sess:
        assert sess.run(f, {d: 10.0}) == 21.0  # d's producer is kept; e reads the feed
        assert sess.run(f) == 5.0
        nodes = {n.name: n.op for g in sess.partitions(w).values() for n in g.nodes}
        assert nodes["r/RandomUniform"] == "RandomUniform"
        first, second = sess.run(r), sess.run(r)
        assert not np.array_equal(first, second)


def test_chain_of_constant_adds_collapses_to_one_add():
    x = tf.placeholder(tf.float32, [1], name="x")
    y = x
    for _ in range(1000):
        y = tf.add(y, 1.0)
    x0 = np.zeros([1], np.float32)
    values, reference, nodes = _run_both([y], {x: x0})
    _assert_identical(values, reference)
    ops = sorted(n.op for n in nodes.values() if not n.op.startswith("_"))
    assert ops == ["Add", "Const"]
    assert nodes["Add_999"].inputs[1] == "Add_998" and nodes["Add_998"].op == "Const"
    np.testing.assert_array_equal(nodes["Add_998"].original.get_attr("value"), np.float32(1000.0))


def test_chain_of_int_multiplies_combines_its_constants():
    x = tf.placeholder(tf.int32, [2], name="x")
    y = tf.identity(((x * 2) * 3) * 4, name="y")
    values, reference, nodes = _run_both([y], {x: np.array([1, -5], np.int32)})
    _assert_identical(values, reference)
    assert sorted(n.op for n in nodes.values() if not n.op.startswith("_")) == ["Const", "Identity", "Mul"]


@pytest.mark.parametrize("make", [lambda x: x * 1.0, lambda x: 1.0 * x, lambda x: x / 1.0, lambda x: x - 0.0,
                                  lambda x: x + (-0.0)])
def test_neutral_elements_are_dropped(make):
    x = tf.placeholder(tf.float32, [3], name="x")
    y = tf.identity(tf.square(make(x), name="sq"), name="y")
    x0 = np.array([-0.0, 1.5, np.inf], np.float32)
    values, reference, nodes = _run_both([y], {x: x0})
    _assert_identical(values, reference)
    assert sorted(n.op for n in nodes.values() if not n.op.startswith("_")) == ["Identity", "Square"]


def test_float_plus_positive_zero_is_kept_because_it_turns_minus_zero_into_zero():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.identity(tf.square(x + 0.0) * (x + 0.0), name="y")
    values, reference, nodes = _run_both([y, x + 0.0], {x: np.array([-0.0, 2.0], np.float32)})
    _assert_identical(values, reference)
    assert np.signbit(reference[1][0]) == np.False_


def test_integer_plus_zero_is_dropped():
    x = tf.placeholder(tf.int64, [2], name="x")
    y = tf.identity(tf.square(tf.add(x, tf.constant(0, tf.int64))), name="y")
    values, reference, nodes = _run_both([y], {x: np.array([3, -4], np.int64)})
    _assert_identical(values, reference)
    assert "Add" not in {n.op for n in nodes.values()}


def test_cse_merges_equal_nodes_commutative_ones_included():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.placeholder(tf.float32, [2], name="y")
    a = tf.add(tf.exp(x, name="e1"), y, name="a")
    b = tf.add(y, tf.exp(x, name="e2"), name="b")
    out = tf.identity(a * b, name="out")
    feed = {x: np.array([0.5, 1.0], np.float32), y: np.array([2.0, 3.0], np.float32)}
    values, reference, nodes = _run_both([out], feed)
    _assert_identical(values, reference)
    assert "e2" not in nodes and "b" not in nodes and nodes["mul"].inputs[:2] == ("a", "a")


def test_cse_never_merges_random_ops_or_fetched_nodes():
    r1 = tf.random_uniform([2], seed=3, name="r1")
    r2 = tf.random_uniform([2], seed=3, name="r2")
    s = tf.identity(r1 + r2, name="s")
    x = tf.placeholder(tf.float32, [], name="x")
    f1, f2 = tf.square(x, name="f1"), tf.square(x, name="f2")
    g = tf.identity(f1 + f2, name="g")
    with tf.Session() as sess:
        nodes = {n.name for p in sess.partitions([s, f1, f2, g], {x: 2.0}).values() for n in p.nodes}
        assert {"r1/RandomUniform", "r2/RandomUniform", "f1", "f2"} <= nodes
        assert sess.run([f1, f2, g], {x: 2.0}) == [4.0, 4.0, 8.0]


def test_identity_and_noop_dependencies_are_bypassed_but_a_device_crossing_identity_stays():
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.device("/cpu:0"):
        i1 = tf.identity(tf.exp(x, name="e"), name="i1")
        noop = tf.no_op(name="noop")
        with tf.control_dependencies([noop]):
            y = tf.square(i1, name="y")
    with tf.device("/gpu:0"):
        z = tf.identity(tf.identity(y, name="hop"), name="z")
    feed = {x: np.array([0.0, 1.0], np.float32)}
    values, reference, nodes = _run_both([z], feed, ConfigProto(device_count={"GPU": 1}))
    _assert_identical(values, reference)
    assert "i1" not in nodes and "noop" not in nodes and nodes["y"].inputs == ("e",)
    assert nodes["hop"].op == "Identity"  # its producer is on another device


def _mlp(seed, activation=True, use_bias_add=False, transpose_b=False, device="/cpu:0"):
    rng = np.random.default_rng(seed)
    with tf.device(device):
        x = tf.placeholder(tf.float32, [8, 5], name="x")
        labels = tf.placeholder(tf.int32, [8], name="labels")
        w1 = tf.Variable(rng.standard_normal((4, 5) if transpose_b else (5, 4)).astype(np.float32), name="w1")
        b1 = tf.Variable(rng.standard_normal(4).astype(np.float32), name="b1")
        w2 = tf.Variable(rng.standard_normal((4, 3)).astype(np.float32), name="w2")
        b2 = tf.Variable(rng.standard_normal(3).astype(np.float32), name="b2")
        product = tf.matmul(x, w1, transpose_b=transpose_b)
        hidden = tf.nn.bias_add(product, b1) if use_bias_add else product + b1
        hidden = tf.nn.relu(hidden) if activation else hidden
        logits = tf.matmul(hidden, w2) + b2
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    feed = {x: rng.standard_normal((8, 5)).astype(np.float32), labels: rng.integers(0, 3, 8).astype(np.int32)}
    return train, loss, logits, [w1, b1, w2, b2], feed


# TF's remapper.cc fuses a MatMul only on a CPU (IsCpuCompatibleMatMul) and only under a BiasAdd: x @ w + b (an
# Add) and a MatMul on a GPU stay unfused, the values identical either way.
@pytest.mark.parametrize("activation, use_bias_add, transpose_b, device, fused",
                         [(True, True, False, "/cpu:0", True), (False, True, False, "/cpu:0", True),
                          (True, True, True, "/cpu:0", True), (True, False, False, "/cpu:0", False),
                          (True, True, False, "/gpu:0", False)])
def test_fused_matmul_keeps_forward_values_and_training_steps_bit_for_bit(activation, use_bias_add, transpose_b,
                                                                          device, fused):
    train, loss, logits, variables, feed = _mlp(7, activation, use_bias_add, transpose_b, device)
    results = {}
    for name, config in (("optimized", None), ("reference", no_rewrite_session_config())):
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            trace = [sess.run([loss, logits, train], feed)[:2] for _ in range(4)]
            results[name] = (trace, sess.run(variables))
            if name == "optimized":
                nodes = {n.name: n for p in sess.partitions([loss, logits, train], feed).values() for n in p.nodes}
    for (got, want) in zip(results["optimized"][0] + [results["optimized"][1]],
                           results["reference"][0] + [results["reference"][1]]):
        _assert_identical(got, want)
    hidden = [n for n in nodes.values() if n.op == "_FusedMatMul" and n.inputs[1] == "w1/read"]
    assert len(hidden) == int(fused)
    if fused:
        expected_ops = ["BiasAdd", "Relu"] if activation else ["BiasAdd"]
        assert hidden[0].attrs["fused_ops"] == expected_ops and hidden[0].attrs["num_args"] == 1
        assert hidden[0].attrs["transpose_b"] is transpose_b and hidden[0].attrs["epsilon"] == 0.0
        assert hidden[0].name == ("Relu" if activation else "BiasAdd")


def test_no_fusion_across_a_control_dependency():
    """TF fuses no pattern whose nodes have control inputs (remapper.cc: HasControlFaninOrFanout)."""
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [2, 2], name="x")
        counter = tf.Variable(0.0, name="counter")
        gate = tf.assign_add(counter, 1.0, name="gate")
        eye = tf.constant(np.eye(2, dtype=np.float32))
        with tf.control_dependencies([gate]):
            product = tf.matmul(x, eye, name="product")
        out = tf.nn.relu(tf.nn.bias_add(product, tf.constant([1.0, -5.0])), name="out")
    with tf.Session() as sess:
        sess.run(counter.initializer)
        feed = {x: np.ones((2, 2), np.float32)}
        np.testing.assert_array_equal(sess.run(out, feed), [[2.0, 0.0], [2.0, 0.0]])
        assert sess.run(counter) == 1.0
        ops = {n.op for p in sess.partitions([out], feed).values() for n in p.nodes}
    assert "_FusedMatMul" not in ops and "MatMul" in ops


def test_fused_matmul_kernel_reports_a_wrong_bias_length():
    from dfcore.framework import registry
    from dfcore.framework.tensor_shape import TensorShape
    from dfcore.runtime.grappler.graph_item import Node

    node = Node("f", "_FusedMatMul", {"T": tf.float32, "transpose_a": False, "transpose_b": False, "num_args": 1,
                                      "fused_ops": ["BiasAdd"], "epsilon": 0.0}, "", 0,
                [(tf.float32, TensorShape([2, 2]))])
    compute = registry.kernel("_FusedMatMul").build(node)
    a = np.eye(2, dtype=np.float32)
    np.testing.assert_array_equal(compute(a, a, np.array([1, 2], np.float32)), np.array([[2, 2], [1, 3]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"as many biases .*\[3\] vs. \[2,2\]"):
        compute(a, a, np.ones(3, np.float32))
