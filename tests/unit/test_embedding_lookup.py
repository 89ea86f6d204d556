"""tf.dynamic_partition / dynamic_stitch and tf.nn.embedding_lookup (embedding_ops.py): values against numpy,
gradients against finite differences, and each shard's gather placed on its parameter server."""

import threading

import numpy as np
import pytest

import dfcore as tf
from tests.unit.gradcheck import GRAD_TOL

RNG = np.random.default_rng(3)
IDS = np.array([[9, 0, 3], [4, 4, 7], [8, 1, 5]])


def _run(fetches, feeds=None):
    with tf.Session() as sess:
        return sess.run(fetches, feeds)


# -- DynamicPartition / DynamicStitch -----------------------------------------------------------------
def test_dynamic_partition_and_stitch_match_numpy_and_invert_each_other():
    data0, parts0 = RNG.standard_normal((2, 3, 4)), np.array([[0, 2, 1], [0, 0, 2]], np.int32)
    with tf.Graph().as_default():
        data = tf.constant(data0)
        parts = tf.dynamic_partition(data, parts0, 3)
        assert [p.shape.as_list() for p in parts] == [[None, 4]] * 3
        positions = tf.dynamic_partition(tf.reshape(tf.range(6), [2, 3]), parts0, 3)
        stitched = tf.dynamic_stitch(positions, parts)
        got_parts, got_stitched = _run([parts, stitched])
        with tf.Session():
            for i in range(3):
                assert tf.test.compute_gradient_error(data, data0.shape, parts[i], [int((parts0 == i).sum()), 4],
                                                      x_init_value=data0) < GRAD_TOL
    for i in range(3):
        np.testing.assert_array_equal(got_parts[i], data0[parts0 == i])
    np.testing.assert_array_equal(got_stitched, data0.reshape(6, 4))


def test_dynamic_stitch_later_indices_win_and_its_gradient_gathers():
    with tf.Graph().as_default():
        data = [tf.constant([[1.0, 1.0], [2.0, 2.0]]), tf.constant([[3.0, 3.0]])]
        merged = tf.dynamic_stitch([tf.constant([0, 2]), tf.constant([2])], data)
        assert merged.shape.as_list() == [3, 2]  # constant indices give the static size
        weights = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        grads = tf.gradients(tf.reduce_sum(merged * weights), data)
        got, got_grads = _run([merged, grads])
    np.testing.assert_array_equal(got, [[1, 1], [0, 0], [3, 3]])  # row 1 has no entry: zeros
    np.testing.assert_array_equal(got_grads[0], [[1, 2], [5, 6]])  # TF gathers, even where overwritten
    np.testing.assert_array_equal(got_grads[1], [[5, 6]])


def test_partition_and_stitch_errors_in_tf_words():
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"partitions\[1\] = 3 is not in \[0, 2\)"):
            _run(tf.dynamic_partition(tf.constant([1.0, 2.0]), tf.constant([0, 3]), 2))
        with pytest.raises(tf.errors.InvalidArgumentError, match="Dimension 0 in both shapes must be equal"):
            tf.dynamic_partition(tf.zeros([3, 2]), tf.constant([0, 1]), 2)
        with pytest.raises(ValueError, match="num_partitions must be >= 1"):
            tf.dynamic_partition(tf.zeros([3]), tf.constant([0, 0, 0]), 0)
        with pytest.raises(ValueError, match="lists of the same length"):
            tf.dynamic_stitch([tf.constant([0])], [])


# -- embedding_lookup -------------------------------------------------------------------------------
def _logical_table(shards, strategy):
    """The table a list of shards stands for: ``div`` concatenates them, ``mod`` deals row i to shard i % n."""
    if strategy == "div":
        return np.concatenate(shards)
    n = len(shards)
    return np.stack([shards[i % n][i // n] for i in range(sum(len(s) for s in shards))])


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_three_shards_look_up_the_logical_table_and_gradients_reach_each_shard(strategy):
    shards0 = [RNG.standard_normal((rows, 4)) for rows in (4, 3, 3)]
    with tf.Graph().as_default():
        shards = [tf.constant(s) for s in shards0]
        ids = tf.constant(IDS)
        rows = tf.nn.embedding_lookup(shards, ids, partition_strategy=strategy)
        assert rows.shape.as_list() == [3, 3, 4] and rows.op.type == "Reshape"
        assert rows.op.inputs[0].op.type == "ParallelDynamicStitch"
        np.testing.assert_array_equal(_run(rows), np.take(_logical_table(shards0, strategy), IDS, axis=0))
        with tf.Session():
            for shard, value in zip(shards, shards0):
                assert tf.test.compute_gradient_error(shard, value.shape, rows, [3, 3, 4], x_init_value=value,
                                                      delta=1e-5) < GRAD_TOL


def test_one_table_is_a_colocated_gather_and_max_norm_clips_rows():
    table0 = RNG.standard_normal((6, 3)) * 3
    with tf.Graph().as_default():
        with tf.device("/cpu:0"):
            table = tf.get_variable("table", dtype=tf.float64, initializer=tf.constant(table0))
        rows = tf.nn.embedding_lookup(table, IDS[:, :2] % 6)
        clipped = tf.nn.embedding_lookup(table, [1, 2, 5], max_norm=1.0)
        gather = rows.op.inputs[0].op
        assert (gather.type, gather.name, gather.device) == ("GatherV2", "embedding_lookup", "/device:CPU:0")
        assert rows.op.type == "Identity" and rows.op.device == ""
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, got_clipped = sess.run([rows, clipped])
    np.testing.assert_array_equal(got, table0[IDS[:, :2] % 6])
    picked = table0[[1, 2, 5]]
    norms = np.linalg.norm(picked, axis=1, keepdims=True)
    np.testing.assert_allclose(got_clipped, picked / np.maximum(norms, 1.0), rtol=1e-12)


def test_errors_in_tf_words():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Need at least one param"):
            tf.nn.embedding_lookup([], [0])
        with pytest.raises(ValueError, match="Unrecognized partition strategy: ring"):
            tf.nn.embedding_lookup([tf.zeros([2, 2]), tf.zeros([2, 2])], [0], partition_strategy="ring")
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0\] = 7 is not in \[0, 2\)"):
            _run(tf.nn.embedding_lookup(tf.zeros([2, 2]), [7]))


@pytest.fixture
def ps_cluster():
    """Three ps tasks and one worker, in process; every server stopped afterwards."""
    before = set(threading.enumerate())
    config = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0})
    spec = tf.train.ClusterSpec({"ps": [f"emb-ps{i}:1" for i in range(3)], "worker": ["emb-w0:1"]})
    servers = [tf.train.Server(spec, "ps", i, config=config) for i in range(3)]
    servers.append(tf.train.Server(spec, "worker", 0, config=config))
    yield servers[-1]
    for server in servers:
        server.stop()
    assert set(threading.enumerate()) <= before


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_a_partitioned_variable_over_three_ps_tasks_gathers_on_each_shards_task(ps_cluster, strategy):
    """replica_device_setter + fixed_size_partitioner(3): shards of 4, 3, 3 rows on ps tasks 0, 1, 2; each
    shard's GatherV2 runs on its own task, and one SGD step changes exactly the rows looked up."""
    with tf.Graph().as_default() as graph:
        with tf.device(tf.train.replica_device_setter(ps_tasks=3)):
            embedding = tf.get_variable("embedding", [10, 4], tf.float64, partitioner=tf.fixed_size_partitioner(3))
        rows = tf.nn.embedding_lookup(embedding, IDS, partition_strategy=strategy)
        gathers = [op for op in graph.get_operations() if op.type == "GatherV2"]
        assert [op.device for op in gathers] == [f"/job:ps/task:{i}" for i in range(3)]
        assert [op.inputs[0].op.name for op in gathers] == [f"embedding/part_{i}/read" for i in range(3)]
        train = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(rows))
        with tf.Session(ps_cluster.target, graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            before = [sess.run(v) for v in embedding]
            got, _ = sess.run([rows, train])
            after = [sess.run(v) for v in embedding]
    table = _logical_table(before, strategy)
    np.testing.assert_array_equal(got, np.take(table, IDS, axis=0))
    counts = np.bincount(IDS.reshape(-1), minlength=10)[:, None]  # SGD subtracts 1 per lookup of a row
    np.testing.assert_allclose(_logical_table(after, strategy), table - counts, rtol=1e-12)
