"""No op a lesson or an example runs falls back to the cost model's default (one flop per output element):
every op type with a shape function has a cost function, and the examples' graphs hold no other type.
Formulas are checked against hand counts (2·b·m·k·n for a batched matmul; LU-based 2n³ and 2n³/3)."""

import pytest

import dfcore as tf
from dfcore.framework import registry
from dfcore.runtime import cost_model as cm


def _example_graphs():
    from dfcore.examples import conv_digits, data_parallel, digits, digits_pipeline, model_parallel, multi_tower

    def digits_graph():
        x, y = tf.placeholder(tf.float32, [32, 64]), tf.placeholder(tf.int64, [32])
        logits = digits.build_mlp(x, 64, 10, 0)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        tf.train.AdamOptimizer(0.01).minimize(loss)
        tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))

    def conv_graph():  # as conv_digits.train builds it
        x, y = tf.placeholder(tf.float32, [32, 64]), tf.placeholder(tf.int64, [32])
        with tf.variable_scope("conv_net"):
            logits = conv_digits.conv_net(tf.reshape(x, [-1, 8, 8, 1]), 10, training=True)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        step = tf.train.get_or_create_global_step()
        rate = tf.train.exponential_decay(0.01, step, 100, 0.5, staircase=True)
        tf.train.AdamOptimizer(rate).minimize(loss, global_step=step)

    builders = {"digits": digits_graph, "conv_digits": conv_graph,
                "data_parallel": lambda: data_parallel.build_data_parallel(4, 64, 64, 10),
                "multi_tower": lambda: multi_tower.build_multi_tower(4, 64, 64, 10),
                "digits_pipeline": digits_pipeline.feed_dict_model}
    for placement in model_parallel.PLACEMENTS:
        builders[f"model_parallel/{placement}"] = lambda p=placement: model_parallel.build(p, micro_batches=2)
    for name, build in builders.items():
        graph = tf.Graph()
        with graph.as_default():
            build()
        yield name, graph


def test_no_example_op_falls_back_to_the_default_cost():
    fallbacks = {}
    for name, graph in _example_graphs():
        for op in graph.get_operations():
            if registry.cost_function(op.type) is None:
                fallbacks.setdefault(op.type, set()).add(name)
    assert fallbacks == {}


def test_every_registered_op_type_has_a_cost_function():
    # the lessons build their graphs from these ops (their cells cannot run here): covering every type covers them;
    # op types a test module registers for itself (its shape function is the test's) are not the engine's
    engine = [t for t in registry.registered_op_types() if registry.shape_function(t).__module__.startswith("dfcore")]
    assert len(engine) > 200  # the engine registers some 215 op types
    assert [t for t in engine if registry.cost_function(t) is None] == []


@pytest.mark.parametrize("adj_x, adj_y", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_matmul_counts_two_flops_per_term(adj_x, adj_y):
    b, m, k, n = 8, 3, 5, 7
    a = (b, k, m) if adj_x else (b, m, k)
    c = (b, n, k) if adj_y else (b, k, n)
    cost = cm.op_cost("BatchMatMul", [a, c], [(b, m, n)], 4, {"adj_x": adj_x, "adj_y": adj_y})
    assert cost.flops == 2 * b * m * k * n
    assert cost.bytes_accessed == 4 * (b * m * k + b * k * n + b * m * n)
    # 8 × 512³ on a K20m is compute bound: 2.1e9 flops, 615 µs at the datasheet's peak, 768 µs at the profile's
    # achieved 80 % of it (was 2.1e6 flops by the default cost: 126 µs)
    big = cm.op_cost("BatchMatMul", [(8, 512, 512)] * 2, [(8, 512, 512)])
    assert big.flops == 2 * 8 * 512 ** 3
    assert cm.op_time_s(big, cm.TESLA_K20M) == pytest.approx(5e-6 + 2 * 8 * 512 ** 3 / (0.8 * 3.52e12))


def test_a_batched_matmul_built_through_the_api_carries_its_attrs():
    with tf.Graph().as_default():
        out = tf.matmul(tf.zeros([4, 6, 3]), tf.zeros([4, 6, 5]), transpose_a=True)
    op = out.op
    shapes = [t.shape.as_list() for t in op.inputs]
    assert op.type == "BatchMatMul"
    assert cm.op_cost(op.type, shapes, [out.shape.as_list()], 4, op.attrs).flops == 2 * 4 * 3 * 6 * 5


def test_matrix_inverse_and_determinant_are_lu_costs():
    n = 2048
    assert cm.op_cost("MatrixInverse", [(n, n)], [(n, n)]).flops == 2 * n ** 3
    assert cm.op_cost("MatrixInverse", [(3, 6, 6)], [(3, 6, 6)]).flops == 3 * 2 * 6 ** 3
    assert cm.op_cost("MatrixDeterminant", [(3, 6, 6)], [(3,)]).flops == 3 * 2 * 6 ** 3 // 3


def test_moves_and_views_cost_what_they_touch():
    assert cm.op_cost("ConcatV2", [(2, 3), (2, 3), ()], [(4, 3)]) == cm.OpCost(0, 4 * (6 + 6 + 1 + 12))
    assert cm.op_cost("ExpandDims", [(5,), ()], [(5, 1)]) == cm.OpCost(0, 0)
    assert cm.op_cost("Switch", [(5,), ()], [(5,), (5,)]) == cm.OpCost(0, 0)
    assert cm.op_cost("MaxPoolGrad", [(1, 4, 4, 1), (1, 2, 2, 1), (1, 2, 2, 1)], [(1, 4, 4, 1)],
                      4, {"ksize": [1, 2, 2, 1]}).flops == 4 * 4  # 2×2 taps per gradient element
