"""tf.layers.batch_normalization: TF's variables and names, its UPDATE_OPS, and the moving averages after a
training step (layers/normalization.py: Bessel-corrected variance when fused, biased otherwise)."""

import numpy as np
import pytest

import dfcore as tf

RNG = np.random.default_rng(11)
X0 = RNG.standard_normal((4, 3, 3, 2)) * 2 + 1  # NHWC, 2 channels


def _moving(scope):
    graph = tf.get_default_graph()
    return [graph.get_tensor_by_name(f"{scope}/{name}:0") for name in ("moving_mean", "moving_variance")]


def test_variables_names_and_update_ops_as_tf():
    with tf.Graph().as_default():
        x = tf.constant(X0, tf.float32)
        y = tf.layers.batch_normalization(x, training=True)
        tf.layers.batch_normalization(y, training=True)
        tf.layers.batch_normalization(y, training=False)  # inference: no updates
        names = [v.op.name for v in tf.global_variables()]
        assert names[:8] == ["batch_normalization/gamma", "batch_normalization/beta", "batch_normalization/moving_mean",
                             "batch_normalization/moving_variance", "batch_normalization_1/gamma",
                             "batch_normalization_1/beta", "batch_normalization_1/moving_mean",
                             "batch_normalization_1/moving_variance"]
        assert names[8:] == [n.replace("_1/", "_2/") for n in names[4:8]]
        assert [v.op.name for v in tf.trainable_variables()] == [n for n in names if n.endswith(("gamma", "beta"))]
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        assert [u.op.name for u in updates] == ["batch_normalization/AssignMovingAvg",
                                                "batch_normalization/AssignMovingAvg_1",
                                                "batch_normalization_1/AssignMovingAvg",
                                                "batch_normalization_1/AssignMovingAvg_1"]
        assert all(u.op.type == "AssignSub" for u in updates)
        assert y.op.type == "FusedBatchNorm" and y.shape.as_list() == list(X0.shape)


@pytest.mark.parametrize("shape, axis, fused, ddof", [
    ((4, 3, 3, 2), -1, "FusedBatchNorm", 1),  # fused: TF feeds the Bessel-corrected variance
    ((4, 2, 3, 3), 1, "FusedBatchNorm", 1),  # NCHW
    ((36, 2), -1, None, 0),  # moments + batch_normalization: the biased variance
])
def test_one_training_step_moves_the_averages_towards_the_batch_statistics(shape, axis, fused, ddof):
    x0 = X0.transpose(0, 3, 1, 2) if axis == 1 else X0.reshape(shape)
    axes = tuple(a for a in range(len(shape)) if a != axis % len(shape))
    with tf.Graph().as_default():
        x = tf.constant(x0, tf.float64)
        y = tf.layers.batch_normalization(x, axis=axis, momentum=0.9, training=True)
        assert (y.op.type == fused) if fused else ("batchnorm" in y.op.name)
        loss = tf.reduce_sum(tf.square(y))
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got_y, _ = sess.run([y, train])
            moving_mean, moving_variance = sess.run(_moving("batch_normalization"))
    expected_y = (x0 - x0.mean(axes, keepdims=True)) / np.sqrt(x0.var(axes, keepdims=True) + 1e-3)
    np.testing.assert_allclose(got_y, expected_y, rtol=1e-10)
    # 0 - (0 - mean) * (1 - 0.9), with TF's float32 decay constant (cast to the variables' float64)
    np.testing.assert_allclose(moving_mean, 0.1 * x0.mean(axes), rtol=1e-7)
    np.testing.assert_allclose(moving_variance, 1 - (1 - x0.var(axes, ddof=ddof)) * 0.1, rtol=1e-7)


def test_inference_uses_the_moving_statistics_and_a_training_tensor_picks_the_mode():
    with tf.Graph().as_default():
        x = tf.constant(X0)
        training = tf.placeholder_with_default(False, [])
        y = tf.layers.batch_normalization(x, training=training, center=False, scale=False, momentum=0.5)
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        assert len(updates) == 2  # built for a tensor: momentum becomes 1 when it is False
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            inferred, _ = sess.run([y, updates])  # not training: moving statistics 0 and 1, unchanged
            np.testing.assert_allclose(inferred, X0 / np.sqrt(1 + 1e-3), rtol=1e-12)
            np.testing.assert_allclose(sess.run(_moving("batch_normalization")), [np.zeros(2), np.ones(2)])
            trained, _ = sess.run([y, updates], {training: True})
            axes = (0, 1, 2)
            np.testing.assert_allclose(trained, (X0 - X0.mean(axes)) / np.sqrt(X0.var(axes) + 1e-3), rtol=1e-10)
            np.testing.assert_allclose(sess.run(_moving("batch_normalization"))[0], 0.5 * X0.mean(axes), rtol=1e-12)


def test_named_layers_reuse_and_unsupported_arguments():
    with tf.Graph().as_default():
        x = tf.constant(X0, tf.float32)
        tf.layers.batch_normalization(x, name="bn")
        tf.layers.batch_normalization(x, name="bn", reuse=True)
        assert [v.op.name for v in tf.global_variables()] == ["bn/gamma", "bn/beta", "bn/moving_mean",
                                                              "bn/moving_variance"]
        assert not tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with pytest.raises(NotImplementedError, match="renorm"):
            tf.layers.batch_normalization(x, renorm=True)
        with pytest.raises(ValueError, match="fused batch norm only supports axis == \\[1\\] or axis == \\[3\\]"):
            tf.layers.batch_normalization(tf.zeros([4, 2]), fused=True)
        with pytest.raises(ValueError, match="Input has undefined `axis` dimension"):
            tf.layers.batch_normalization(tf.placeholder(tf.float32, [None, None]))
