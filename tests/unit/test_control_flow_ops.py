"""tf.cond, tf.case, tf.while_loop, map_fn/scan/foldl/foldr: TF 1.x graph structure and names, results
against numpy, gradients against finite differences, and TF's errors for bad input."""

import numpy as np
import pytest
from gradcheck import GRAD_TOL, grad_error

import dfcore as tf


# -- cond ---------------------------------------------------------------------------------
def test_cond_builds_tfs_v1_structure_and_names():
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.cond(x > 0, lambda: x * 2.0, lambda: x - 1.0)
    names = {op.name: op.type for op in tf.get_default_graph().get_operations()}
    assert names["cond/Switch"] == "Switch"
    assert names["cond/switch_t"] == names["cond/switch_f"] == names["cond/pred_id"] == "Identity"
    assert y.op.name == "cond/Merge" and y.op.type == "Merge"
    pivot_t = tf.get_default_graph().get_operation_by_name("cond/switch_t")
    assert pivot_t.inputs[0].name == "cond/Switch:1"
    # the outside x reaches each branch through its own Switch on pred_id
    ops = tf.get_default_graph().get_operations()
    switches = [op for op in ops if op.type == "Switch" and op.name != "cond/Switch"]
    assert len(switches) == 2 and all(op.inputs[1].op.name == "cond/pred_id" for op in switches)


def test_cond_runs_only_the_taken_branch():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.cond(tf.size(x) > 2, lambda: tf.reduce_sum(tf.reshape(x, [3])), lambda: tf.constant(-1.0))
    with tf.Session() as sess:
        assert sess.run(y, {x: [1.0, 2.0, 3.0]}) == 6.0
        assert sess.run(y, {x: [1.0]}) == -1.0  # the reshape to [3] would fail if it ran


def test_cond_returns_nested_structures_and_unpacks_singletons():
    x = tf.placeholder(tf.float32, [], name="x")
    a, (b, c) = tf.cond(x > 0, lambda: (x, (x + 1.0, x * 3.0)), lambda: (-x, (x, x)))
    single = tf.cond(x > 0, lambda: [x], lambda: [x + 1.0])
    with tf.Session() as sess:
        assert sess.run([a, b, c, single], {x: 2.0}) == [2.0, 3.0, 6.0, 2.0]
        assert sess.run([a, b, c, single], {x: -2.0}) == [2.0, -2.0, -2.0, -1.0]


@pytest.mark.parametrize("value", [1.3, -0.7])
def test_cond_gradient_matches_finite_differences(value):
    x = tf.placeholder(tf.float64, [3], name="x")
    w = tf.constant([0.5, -1.0, 2.0], tf.float64)
    y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * x * w, lambda: tf.exp(x) + w)
    with tf.Session():
        assert grad_error(x, y, np.full(3, value)) < GRAD_TOL


def test_cond_branches_with_different_structures_fail_with_tfs_message():
    x = tf.constant(1.0)
    with pytest.raises(ValueError, match="The two structures don't have the same number of elements"):
        tf.cond(x > 0, lambda: (x, x), lambda: x)
    with pytest.raises(ValueError, match="don't have the same nested structure"):
        tf.cond(x > 0, lambda: (x, (x, x)), lambda: ((x, x), x))


def test_cond_branches_with_different_dtypes_fail_with_tfs_message():
    x = tf.constant(1.0)
    with pytest.raises(ValueError, match="Outputs of true_fn and false_fn must have the same type: float32, int32"):
        tf.cond(x > 0, lambda: x, lambda: tf.constant(0))


def test_cond_rejects_a_python_bool_and_a_missing_result():
    x = tf.constant(1.0)
    with pytest.raises(TypeError, match="pred must not be a Python bool"):
        tf.cond(True, lambda: x, lambda: x)
    with pytest.raises(ValueError, match="true_fn must have a return value."):
        tf.cond(x > 0, lambda: None, lambda: x)


def test_case_picks_the_first_true_predicate_else_the_default():
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.case([(x < 0, lambda: tf.constant(-1.0)), (x < 10, lambda: x)], default=lambda: tf.constant(100.0))
    with tf.Session() as sess:
        assert [sess.run(y, {x: v}) for v in (-5.0, 5.0, 50.0)] == [-1.0, 5.0, 100.0]


def test_case_rejects_pairs_that_are_not_bool_tensor_and_callable():
    with pytest.raises(TypeError, match="pred must be Tensor of type bool"):
        tf.case([(tf.constant(1.0), lambda: 1.0)])


# -- while_loop ---------------------------------------------------------------------------
def test_while_loop_builds_tfs_structure_and_names():
    r = tf.while_loop(lambda i: i < 10, lambda i: i + 1, [tf.constant(0)])
    types = {op.name: op.type for op in tf.get_default_graph().get_operations()}
    for name, op_type in [("while/Enter", "Enter"), ("while/Merge", "Merge"), ("while/LoopCond", "LoopCond"),
                          ("while/Switch", "Switch"), ("while/Identity", "Identity"),
                          ("while/NextIteration", "NextIteration"), ("while/Exit", "Exit")]:
        assert types[name] == op_type
    enter = tf.get_default_graph().get_operation_by_name("while/Enter")
    assert enter.get_attr("frame_name") == "while/while_context" and enter.get_attr("parallel_iterations") == 10
    merge = tf.get_default_graph().get_operation_by_name("while/Merge")
    assert [t.op.type for t in merge.inputs] == ["Enter", "NextIteration"]
    with tf.Session() as sess:
        assert sess.run(r) == 10


def test_while_loop_with_nested_loop_vars_matches_numpy():
    x = tf.placeholder(tf.float64, [3], name="x")
    out = tf.while_loop(lambda s: s["i"] < 5, lambda s: {"i": s["i"] + 1, "acc": (s["acc"][0] * x, s["acc"][1] + 1.0)},
                        [{"i": tf.constant(0), "acc": (tf.ones([3], tf.float64), tf.constant(0.0, tf.float64))}])
    value = np.array([1.0, 2.0, 3.0])
    with tf.Session() as sess:
        got = sess.run(out, {x: value})
    assert got["i"] == 5 and got["acc"][1] == 5.0
    np.testing.assert_allclose(got["acc"][0], value ** 5)


def test_nested_loops_and_conds_inside_loops_and_loops_inside_untaken_branches():
    def outer_body(j, total):
        inner = tf.while_loop(lambda k, t: k < j, lambda k, t: (k + 1, t + k), (tf.constant(0), total))
        return j + 1, inner[1]

    nested = tf.while_loop(lambda j, t: j < 5, outer_body, (tf.constant(0), tf.constant(0)))
    with_cond = tf.while_loop(lambda i, s: i < 6, lambda i, s: (i + 1, tf.cond(tf.equal(i % 2, 0), lambda: s + i,
                                                                                      lambda: s - 1)),
                              (tf.constant(0), tf.constant(0)))
    p = tf.placeholder(tf.bool, [], name="p")
    in_cond = tf.cond(p, lambda: tf.while_loop(lambda k: k < 3, lambda k: k + 1, [tf.constant(0)]),
                      lambda: tf.constant(-1))
    expected_nested = sum(k for j in range(5) for k in range(j))
    s = 0
    for i in range(6):
        s = s + i if i % 2 == 0 else s - 1
    with tf.Session() as sess:
        assert sess.run(nested)[1] == expected_nested
        assert sess.run(with_cond)[1] == s
        assert sess.run(in_cond, {p: True}) == 3
        assert sess.run(in_cond, {p: False}) == -1


def test_maximum_iterations_stops_the_loop():
    one = tf.while_loop(lambda i: i < 100, lambda i: i + 2, [tf.constant(0)], maximum_iterations=7)
    two = tf.while_loop(lambda i, j: i < 100, lambda i, j: (i + 2, j * 2), [tf.constant(0), tf.constant(1)],
                        maximum_iterations=7)
    unreached = tf.while_loop(lambda i: i < 10, lambda i: i + 2, [tf.constant(0)], maximum_iterations=70)
    with tf.Session() as sess:
        assert sess.run(one) == 14 and sess.run(two) == [14, 128] and sess.run(unreached) == 10
    with pytest.raises(ValueError, match="maximum_iterations must be a scalar"):
        tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)], maximum_iterations=[3, 4])


def test_a_shape_change_without_shape_invariants_fails_with_tfs_message():
    m = tf.ones([2, 2], name="ones")
    with pytest.raises(ValueError, match=r"Input tensor 'ones:0' enters the loop with shape \(2, 2\), but has shape "
                                         r"\(4, 2\) after one iteration. To allow the shape to vary across iterations, "
                                         r"use the `shape_invariants` argument of tf.while_loop to specify a "
                                         r"less-specific shape."):
        tf.while_loop(lambda i, j: i < 2, lambda i, j: [i + 1, tf.concat([j, j], 0)], [tf.constant(0), m])


def test_shape_invariants_let_a_loop_variable_grow():
    i, j = tf.while_loop(lambda i, j: i < 2, lambda i, j: [i + 1, tf.concat([j, j], 0)],
                         [tf.constant(0), tf.ones([2, 2])],
                         shape_invariants=[tf.TensorShape([]), tf.TensorShape([None, 2])])
    assert j.shape.as_list() == [None, 2]
    with tf.Session() as sess:
        assert sess.run(j).shape == (8, 2)
    with pytest.raises(ValueError, match="The shape invariant specified for .* is not compatible"):
        tf.while_loop(lambda i: i < 2, lambda i: i + 1, [tf.ones([2])], shape_invariants=[tf.TensorShape([3])])


def test_while_loop_rejects_bad_arguments_with_tfs_messages():
    with pytest.raises(TypeError, match="cond must be callable."):
        tf.while_loop(1, lambda i: i, [tf.constant(0)])
    with pytest.raises(TypeError, match="parallel_iterations must be a positive integer."):
        tf.while_loop(lambda i: i < 1, lambda i: i, [tf.constant(0)], parallel_iterations=0)
    with pytest.raises(ValueError, match="No loop variables provided"):
        tf.while_loop(lambda: True, lambda: (), [])


def test_while_loop_gradient_matches_finite_differences():
    x = tf.placeholder(tf.float64, [3], name="x")
    w = tf.constant([0.5, -1.0, 0.25], tf.float64)
    _, y = tf.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, tf.tanh(y * x + w)),
                         (tf.constant(0), tf.ones([3], tf.float64)))
    with tf.Session():
        assert grad_error(x, y, np.array([0.3, -1.2, 0.8])) < GRAD_TOL


def test_gradient_through_a_loop_with_a_cond_in_its_body():
    x = tf.placeholder(tf.float64, [2], name="x")
    _, y = tf.while_loop(lambda i, y: i < 5, lambda i, y: (i + 1, tf.cond(tf.equal(i % 2, 0), lambda: y * x,
                                                                            lambda: y + x)),
                         (tf.constant(0), tf.ones([2], tf.float64)))
    with tf.Session():
        assert grad_error(x, y, np.array([0.7, -1.3])) < GRAD_TOL


def test_gradient_through_nested_loops_matches_the_derivative():
    a = tf.placeholder(tf.float64, [], name="a")

    def outer(i, acc):
        _, inner = tf.while_loop(lambda j, t: j < 3, lambda j, t: (j + 1, t * a), (tf.constant(0), acc))
        return i + 1, inner + a

    _, r = tf.while_loop(lambda i, acc: i < 2, outer, (tf.constant(0), tf.constant(1.0, tf.float64)))
    grad, = tf.gradients(r, a)
    with tf.Session() as sess:
        value, got = sess.run([r, grad], {a: 1.1})
    # r = (a^3 + a) a^3 + a = a^6 + a^4 + a
    assert value == pytest.approx(1.1 ** 6 + 1.1 ** 4 + 1.1)
    assert got == pytest.approx(6 * 1.1 ** 5 + 4 * 1.1 ** 3 + 1)


def test_gradient_of_a_loop_inside_a_cond_branch():
    x = tf.placeholder(tf.float64, [], name="x")
    p = tf.placeholder(tf.bool, [], name="p")
    y = tf.cond(p, lambda: tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x),
                                         (0, tf.constant(1.0, tf.float64)))[1], lambda: x * 2.0)
    grad, = tf.gradients(y, x)
    with tf.Session() as sess:
        assert sess.run([y, grad], {x: 1.5, p: True}) == pytest.approx([1.5 ** 3, 3 * 1.5 ** 2])
        assert sess.run([y, grad], {x: 1.5, p: False}) == pytest.approx([3.0, 2.0])


def test_gradient_wrt_a_variable_captured_by_map_fn():
    w = tf.Variable(np.arange(6.0).reshape(3, 2) / 10)
    e = tf.placeholder(tf.float64, [4, 3], name="e")
    mapped = tf.map_fn(lambda r: tf.matmul(r[None], w)[0], e)
    grad, = tf.gradients(tf.reduce_sum(mapped * mapped), w)
    value = np.random.RandomState(0).standard_normal((4, 3))
    with tf.Session() as sess:
        sess.run(w.initializer)
        w0 = sess.run(w)
        np.testing.assert_allclose(sess.run(grad, {e: value}), 2 * value.T @ (value @ w0))


def test_gradient_of_a_loop_built_with_back_prop_false_is_refused():
    x = tf.constant(1.0)
    _, y = tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y * x), (tf.constant(0), x), back_prop=False)
    with pytest.raises(ValueError, match="back_prop=False"):
        tf.gradients(y, x)


# -- map_fn, scan, foldl, foldr -----------------------------------------------------------
def test_functional_ops_match_numpy():
    x = tf.placeholder(tf.float64, [4, 3], name="x")
    mapped = tf.map_fn(lambda r: r * r, x)
    pairs = tf.map_fn(lambda r: (tf.reduce_sum(r), r[0]), x, dtype=(tf.float64, tf.float64))
    products = tf.scan(lambda a, r: a * r, x)
    sums = tf.scan(lambda a, r: a + tf.reduce_sum(r), x, initializer=tf.constant(0.0, tf.float64))
    left = tf.foldl(lambda a, r: a * 2 + r, x)
    right = tf.foldr(lambda a, r: a * 2 + r, x)
    assert mapped.shape.as_list() == [4, 3] and products.shape.as_list() == [4, 3]
    v = np.arange(12.0).reshape(4, 3) / 10 + 0.5
    with tf.Session() as sess:
        got = sess.run([mapped, pairs, products, sums, left, right], {x: v})
    expected_left, expected_right = v[0], v[3]
    for row in v[1:]:
        expected_left = expected_left * 2 + row
    for row in v[2::-1]:
        expected_right = expected_right * 2 + row
    np.testing.assert_allclose(got[0], v * v)
    np.testing.assert_allclose(got[1][0], v.sum(1))
    np.testing.assert_allclose(got[1][1], v[:, 0])
    np.testing.assert_allclose(got[2], np.cumprod(v, 0))
    np.testing.assert_allclose(got[3], np.cumsum(v.sum(1)))
    np.testing.assert_allclose(got[4], expected_left)
    np.testing.assert_allclose(got[5], expected_right)


@pytest.mark.parametrize("build", [
    lambda x: tf.map_fn(lambda r: tf.sigmoid(r) * r, x),
    lambda x: tf.scan(lambda a, r: a * r + 0.1, x),
    lambda x: tf.foldl(lambda a, r: tf.tanh(a * r), x),
    lambda x: tf.foldr(lambda a, r: a * r + r, x, initializer=tf.constant([1.0, 2.0, 3.0], tf.float64)),
], ids=["map_fn", "scan", "foldl", "foldr"])
def test_functional_op_gradients_match_finite_differences(build):
    x = tf.placeholder(tf.float64, [4, 3], name="x")
    y = build(x)
    x0 = np.linspace(-0.9, 1.1, 12).reshape(4, 3)
    with tf.Session():
        assert grad_error(x, y, x0) < GRAD_TOL


def test_tf_nest_flattens_packs_and_compares_structures():
    structure = {"b": (1, [2, 3]), "a": 4}
    assert tf.nest.flatten(structure) == [4, 1, 2, 3]
    assert tf.nest.pack_sequence_as(structure, [40, 10, 20, 30]) == {"b": (10, [20, 30]), "a": 40}
    assert tf.nest.map_structure(lambda v: v * 2, (1, [2])) == (2, [4])
    assert tf.nest.is_nested([1]) and not tf.nest.is_nested(1)
    with pytest.raises(TypeError, match="don't have the same sequence type"):
        tf.nest.assert_same_structure((1, 2), [1, 2])


def test_a_loop_survives_export_and_import_graph_def():
    x = tf.placeholder(tf.float32, [], name="x")
    _, y = tf.while_loop(lambda i, y: i < 10, lambda i, y: (i + 1, y * 2.0 + x), [tf.constant(0), tf.constant(1.0)])
    graph_def = tf.get_default_graph().as_graph_def()
    with tf.Graph().as_default() as imported:
        tf.import_graph_def(graph_def, name="imported")
        merge = imported.get_operation_by_name("imported/while/Merge_1")
        assert [t.op.type for t in merge.inputs] == ["Enter", "NextIteration"]
        with tf.Session() as sess:
            got = sess.run(imported.get_tensor_by_name(f"imported/{y.name}"),
                           {imported.get_tensor_by_name("imported/x:0"): 0.5})
    assert got == 2.0 ** 10 + 0.5 * (2.0 ** 10 - 1)


def test_case_exclusive_checks_that_at_most_one_predicate_holds():
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.case([(x < 0, lambda: tf.constant(-1.0)), (x < 10, lambda: x)], default=lambda: tf.constant(100.0),
                exclusive=True)
    with tf.Session() as sess:
        assert sess.run(y, {x: 5.0}) == 5.0
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"assertion failed: \[Input error: exclusive=True: more than 1 conditions "
                                 r"\(Less:0, Less_1:0\) evaluated as True:\] \[True True\]"):
            sess.run(y, {x: -5.0})


def test_assert_fails_the_step_with_its_data():
    x = tf.placeholder(tf.float32, [4], name="x")
    check = tf.Assert(tf.reduce_all(x > 0), ["x must be positive:", x], summarize=2)
    with tf.control_dependencies([check]):
        y = tf.identity(x)
    with tf.Session() as sess:
        assert sess.run(y, {x: [1.0, 2.0, 3.0, 4.0]}).tolist() == [1.0, 2.0, 3.0, 4.0]
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"assertion failed: \[x must be positive:\] "
                                                                 r"\[1.0 -2.0...\]"):
            sess.run(y, {x: [1.0, -2.0, 3.0, 4.0]})


def test_cond_and_while_loop_under_outer_control_dependencies():
    """The loop waits for the caller's control dependencies at its Enters (body ops drop them: they are outside
    the loop's frame); a branch constant that also waits for one still belongs to its branch (TF's rules)."""
    v = tf.Variable(0.0)
    increment = tf.assign_add(v, 1.0)
    p = tf.placeholder(tf.int32, [], name="p")
    with tf.control_dependencies([increment]):
        r = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)])
        y = tf.cond(r > 2, lambda: tf.constant(1.0), lambda: tf.constant(2.0))
        z = tf.while_loop(lambda i: i < 2, lambda i: i + tf.constant(5), [p])
    enter = tf.get_default_graph().get_operation_by_name("while_1/Enter")
    assert [c.name for c in enter.control_inputs] == ["AssignAdd"]
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run([r, y]) == [3, 1.0]
        assert sess.run(v) == 1.0
        assert sess.run(z, {p: 0}) == 5
        assert sess.run(v) == 2.0
