"""tf.get_variable and tf.variable_scope, as TF 1.x's variable_scope.py defines them.

References: TF 1.x behaviour (names from variable scopes only, reuse rules and their error messages,
scope defaults inherited by inner scopes, regularization losses collected); the classic CIFAR-10
multi-GPU tutorial's pattern (one tower builds the variables, the next reuses them).
"""

import numpy as np
import pytest

import dfcore as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def test_variables_are_named_by_variable_scopes_not_name_scopes():
    with tf.variable_scope("model"):
        with tf.name_scope("ignored"):
            w = tf.get_variable("w", [2, 3])
            c = tf.constant(1.0, name="c")
        with tf.variable_scope("layer1"):
            b = tf.get_variable("b", [3], initializer=tf.zeros_initializer())
    assert w.op.name == "model/w" and b.op.name == "model/layer1/b"
    assert c.op.name == "model/ignored/c"  # ops still get the name scope
    assert set(tf.global_variables()) == {w, b} and set(tf.trainable_variables()) == {w, b}


def test_reuse_returns_the_same_variable_as_in_the_towers_of_the_multi_gpu_tutorial():
    towers = []
    for i in range(2):
        with tf.variable_scope("tower", reuse=i > 0):
            towers.append(tf.get_variable("w", [4, 2]))
    assert towers[0] is towers[1]
    with tf.variable_scope("shared") as scope:
        first = tf.get_variable("v", [1])
        scope.reuse_variables()
        assert tf.get_variable("v", [1]) is first
        with tf.variable_scope("inner"):  # reuse is inherited
            assert tf.get_variable_scope().reuse is True
    with tf.variable_scope(scope, reuse=True):  # re-entering a scope object
        assert tf.get_variable("v") is first


def test_auto_reuse_creates_once_then_shares():
    def layer():
        with tf.variable_scope("dense", reuse=tf.AUTO_REUSE):
            return tf.get_variable("kernel", [3, 3])

    assert layer() is layer()
    assert len(tf.global_variables()) == 1


def test_creating_an_existing_variable_without_reuse_raises_tf_message():
    with tf.variable_scope("s"):
        tf.get_variable("x", [1])
    with tf.variable_scope("s"), pytest.raises(ValueError, match=r"^Variable s/x already exists, disallowed. Did you "
                                                                 r"mean to set "
                                                                r"reuse=True or reuse=tf.AUTO_REUSE in VarScope\?"):
        tf.get_variable("x", [1])


def test_reusing_a_missing_variable_raises_tf_message():
    with tf.variable_scope("s", reuse=True), pytest.raises(
            ValueError, match=r"^Variable s/nope does not exist, or was not created with tf.get_variable\(\). "
                              r"Did you mean to set reuse=tf.AUTO_REUSE"):
        tf.get_variable("nope", [1])


def test_sharing_with_another_shape_or_dtype_raises_tf_message():
    tf.get_variable("v", [2, 3])
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        with pytest.raises(ValueError, match=r"Trying to share variable v, but specified shape \(3, 2\) and found "
                                             r"shape \(2, 3\)"):
            tf.get_variable("v", [3, 2])
        with pytest.raises(ValueError, match="specified dtype float64 and found dtype float32"):
            tf.get_variable("v", [2, 3], dtype=tf.float64)


def test_a_new_variable_needs_a_fully_defined_shape():
    with pytest.raises(ValueError, match=r"Shape of a new variable \(w\) must be fully defined"):
        tf.get_variable("w", [None, 3])


def test_scope_defaults_apply_inside_and_the_call_overrides_them():
    with tf.variable_scope("s", initializer=tf.constant_initializer(0.5), dtype=tf.float64):
        a = tf.get_variable("a", [2])
        with tf.variable_scope("inner"):
            b = tf.get_variable("b", [2])
        c = tf.get_variable("c", [2], initializer=tf.ones_initializer())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([a, b, c])
    assert a.dtype.base_dtype == tf.float64 and b.dtype.base_dtype == tf.float64
    np.testing.assert_array_equal(got[0], [0.5, 0.5])
    np.testing.assert_array_equal(got[1], [0.5, 0.5])
    np.testing.assert_array_equal(got[2], [1.0, 1.0])


def test_default_initializers_glorot_uniform_for_floats_zeros_for_ints():
    w = tf.get_variable("w", [30, 70])
    n = tf.get_variable("n", [3], dtype=tf.int32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        w_value, n_value = sess.run([w, n])
    limit = np.sqrt(6.0 / (30 + 70))
    assert np.abs(w_value).max() <= limit and np.abs(w_value).max() > 0.8 * limit
    np.testing.assert_array_equal(n_value, [0, 0, 0])


def test_an_initial_value_initializer_gives_the_shape():
    v = tf.get_variable("v", initializer=tf.constant([[1.0, 2.0]]))
    assert v.shape.as_list() == [1, 2]
    with pytest.raises(ValueError, match="If initializer is a constant, do not specify shape."):
        tf.get_variable("u", [1, 2], initializer=tf.constant([[1.0, 2.0]]))


def test_regularizers_land_in_regularization_losses_and_the_total_loss():
    def l2(scale):
        return lambda v: scale * tf.reduce_sum(tf.square(v))

    with tf.variable_scope("net", regularizer=l2(0.1)):
        w = tf.get_variable("w", initializer=tf.constant([1.0, 2.0]))
        b = tf.get_variable("b", initializer=tf.constant([3.0]), regularizer=l2(1.0))
    tf.losses.add_loss(tf.constant(10.0))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2 and losses[0].op.name.startswith("net/w/Regularizer/")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(tf.losses.get_regularization_loss()) == pytest.approx(0.1 * 5.0 + 1.0 * 9.0)
        assert sess.run(tf.losses.get_total_loss()) == pytest.approx(10.0 + 0.5 + 9.0)
    assert w.device == b.device == ""


def test_custom_getters_of_the_scope_and_the_call_wrap_the_real_getter():
    calls = []

    def scope_getter(getter, name, *args, **kwargs):
        calls.append(("scope", name))
        return getter(name, *args, **kwargs)

    def call_getter(getter, name, *args, **kwargs):
        calls.append(("call", name))
        kwargs["trainable"] = False
        return getter(name, *args, **kwargs)

    with tf.variable_scope("s", custom_getter=scope_getter):
        v = tf.get_variable("v", [1], custom_getter=call_getter)
    assert calls == [("call", "s/v"), ("scope", "s/v")]
    assert v not in tf.trainable_variables()


def test_default_name_scopes_are_made_unique():
    names = []
    for _ in range(3):
        with tf.variable_scope(None, default_name="block"):
            names.append(tf.get_variable("w", [1]).op.name)
    assert names == ["block/w", "block_1/w", "block_2/w"]
    with pytest.raises(ValueError, match="If default_name is None then scope"), tf.variable_scope(None):
        pass


def test_get_variable_under_replica_device_setter_goes_to_the_ps():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        with tf.variable_scope("m"):
            a = tf.get_variable("a", [1])
            b = tf.get_variable("b", [1])
    assert a.device == "/job:ps/task:0" and b.device == "/job:ps/task:1"


def test_a_partitioned_variable_is_shards_spread_over_the_ps_tasks():
    """TF's way to put one large embedding on several parameter servers: 10 rows in 3 shards of 4, 3, 3
    rows (the first d % n shards get one more), each shard on the next ps task."""
    with tf.device(tf.train.replica_device_setter(ps_tasks=3)):
        embedding = tf.get_variable("embedding", [10, 2], initializer=tf.ones_initializer(),
                                    partitioner=tf.fixed_size_partitioner(3))
    shards = list(embedding)
    assert [v.op.name for v in shards] == ["embedding/part_0", "embedding/part_1", "embedding/part_2"]
    assert [v.shape.as_list() for v in shards] == [[4, 2], [3, 2], [3, 2]]
    assert [v.device for v in shards] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2"]
    assert [v._save_slice_info.var_offset for v in shards] == [[0, 0], [4, 0], [7, 0]]
    assert embedding.shape.as_list() == [10, 2]


def test_a_partitioned_variable_reads_as_the_concatenation_of_its_shards():
    embedding = tf.get_variable("embedding", [10, 2], initializer=tf.ones_initializer(),
                                partitioner=tf.fixed_size_partitioner(3))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        full = sess.run(tf.convert_to_tensor(embedding))
        doubled = sess.run(embedding.as_tensor() * 2.0)
    np.testing.assert_array_equal(full, np.ones([10, 2]))
    np.testing.assert_array_equal(doubled, np.full([10, 2], 2.0))


def test_partitioned_variables_are_reused_and_their_shapes_checked():
    with tf.variable_scope("s", partitioner=tf.fixed_size_partitioner(2)):
        first = tf.get_variable("w", [6, 3])
    with tf.variable_scope("s", reuse=True):
        assert tf.get_variable("w", [6, 3], partitioner=tf.fixed_size_partitioner(2)) is first
        with pytest.raises(ValueError, match=r"Trying to reuse partitioned variable s/w, but specified shape "
                                             r"\(4, 3\) and found shape \(6, 3\)"):
            tf.get_variable("w", [4, 3], partitioner=tf.fixed_size_partitioner(2))
    with tf.variable_scope("s"), pytest.raises(ValueError, match="Partitioned variable with name s/w already exists"):
        tf.get_variable("w", [6, 3], partitioner=tf.fixed_size_partitioner(2))


def test_partitioners_split_one_axis_and_never_more_shards_than_rows():
    assert tf.fixed_size_partitioner(5)([3, 4], tf.float32) == [3, 1]
    assert tf.fixed_size_partitioner(2, axis=1)([3, 4], tf.float32) == [1, 2]
    # 1024 x 256 float32 = 1 MiB: at least 256 KiB per shard gives 4, capped by max_partitions
    assert tf.min_max_variable_partitioner(8)([1024, 256], tf.float32) == [4, 1]
    assert tf.min_max_variable_partitioner(2)([1024, 256], tf.float32) == [2, 1]
    with pytest.raises(ValueError, match="Can only slice a variable along one dimension"):
        tf.get_variable("x", [4, 4], partitioner=lambda shape, dtype: [2, 2])


def test_default_names_restart_when_the_enclosing_scope_is_entered_again():
    """TF counts every opened scope and forgets a scope's sub-scopes when it is left (close_variable_subscopes)."""
    names = []
    for reuse in (False, True):
        with tf.variable_scope("model", reuse=reuse), tf.variable_scope(None, default_name="block"):
            names.append(tf.get_variable("w", [1]).op.name)
    assert names == ["model/block/w", "model/block/w"]
    with tf.variable_scope("layer"):
        pass
    with tf.variable_scope(None, default_name="layer"):
        assert tf.get_variable("v", [1]).op.name == "layer_1/v"
