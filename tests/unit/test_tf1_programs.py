"""Classic TensorFlow 1 tutorial programs, run with only the import changed.

The programs of ``tf1_programs/`` (each a module written as a TF 1.x user writes it) are run here on the
digits and checked against a reference: numpy's least squares, an accuracy bound, the mean of the tower
gradients, numpy's EMA recurrence, the steps TF's hooks take and the summaries TensorBoard reads back.
``python -m dfcore.compat_report --check`` must find every TF name they use. The short bodies below
follow more tutorials inline (getting-started regression on TF's own data, softmax regression "for ML
beginners", an MLP trained with Adam, the seeds' device-placement program).
"""

import logging
import os
import pathlib
import re

import numpy as np
import pytest
from _requirements import require_module
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import dfcore as tf
from dfcore import compat_report

require_module("sklearn")

from tf1_programs import (  # noqa: E402 - after the check: the programs need sklearn's digits
    cifar10_multi_gpu,
    ema_eval,
    input_data,
    layers_cnn,
    linear_regression,
    mnist_softmax,
    monitored_training,
)

PROGRAMS = sorted(p.name for p in (pathlib.Path(__file__).parent / "tf1_programs").glob("*.py"))


@pytest.fixture
def keep_logging_verbosity():
    """The MonitoredTrainingSession program sets ``tf.logging``'s verbosity to INFO: give it back."""
    verbosity = tf.logging.get_verbosity()
    yield
    tf.logging.set_verbosity(verbosity)


@pytest.mark.parametrize("program", PROGRAMS)
def test_compat_report_finds_every_tf_name_the_program_uses(program, capsys):
    path = str(pathlib.Path(__file__).parent / "tf1_programs" / program)
    status = compat_report.main(["--check", path])
    report = capsys.readouterr().out
    assert status == 0 and "dfcore has every one of them" in report, report


def test_getting_started_linear_regression_finds_the_least_squares_solution():
    curr_W, curr_b, curr_loss = linear_regression.main()
    digits = input_data.read_data_sets()
    features = linear_regression.row_features(digits.train.images).astype(np.float64)
    design = np.c_[features, np.ones(len(features))]
    solution, residual, _, _ = np.linalg.lstsq(design, digits.train.labels.astype(np.float64), rcond=None)
    np.testing.assert_allclose(curr_W.ravel(), solution[:8], rtol=0, atol=1e-5)
    np.testing.assert_allclose(curr_b, solution[8:], rtol=0, atol=1e-5)
    np.testing.assert_allclose(curr_loss, residual[0], rtol=1e-5)


def test_mnist_softmax_reaches_90_percent_on_the_digits():
    assert mnist_softmax.main() >= 0.9


def test_cifar10_multi_gpu_loss_decreases_and_summaries_are_written(tmp_path):
    losses = cifar10_multi_gpu.train(str(tmp_path), max_steps=40)
    assert np.all(np.isfinite(losses))
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.1, losses
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-40")
    accumulator = EventAccumulator(str(tmp_path))
    accumulator.Reload()
    tags = accumulator.Tags()
    # TF 1.x's tags: the name scope the summary op is made in (so the tutorial's stripped tower prefix
    # comes back), made unique against existing op names; the last tower's summaries only
    assert {"tower_1/conv1/conv1/conv1/sparsity", "tower_1/cross_entropy_1", "tower_1/local3/weight_loss_1",
            "tower_1/total_loss_1_1", "learning_rate"} <= set(tags["scalars"])
    assert {"tower_1/conv1/conv1/conv1/activations", "conv1/weights_1", "conv1/weights/gradients"} <= set(
        tags["histograms"])
    assert tags["graph"] and [event.step for event in accumulator.Scalars("learning_rate")] == [0, 10, 20, 30]
    sparsity = [event.value for event in accumulator.Scalars("tower_1/conv1/conv1/conv1/sparsity")]
    assert all(0 < value < 1 for value in sparsity)  # a share of the ReLUs is zero


def test_cifar10_multi_gpu_averages_the_tower_gradients_and_places_each_tower_on_its_gpu():
    digits = input_data.read_data_sets()
    tf.set_random_seed(0)
    model = cifar10_multi_gpu.build_train_op(num_gpus=2, num_batches_per_epoch=10)
    config = tf.ConfigProto(device_count={"GPU": 2}, allow_soft_placement=True)
    options, metadata = tf.RunOptions(output_partition_graphs=True), tf.RunMetadata()
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        images, labels = digits.train.next_batch(2 * cifar10_multi_gpu.BATCH_SIZE)
        tower_grads, grads = sess.run([model["tower_grads"], model["grads"]],
                                      {model["images"]: images, model["labels"]: labels},
                                      options=options, run_metadata=metadata)
        summary_metadata = tf.RunMetadata()
        sess.run(model["summary_op"], {model["images"]: images, model["labels"]: labels}, options=options,
                 run_metadata=summary_metadata)
    assert len(grads) == len(tf.trainable_variables()) == 10
    for i in range(2):  # each tower sums its own cross entropy and the two weight decays it added
        assert [loss.op.name for loss in tf.get_collection("losses", f"tower_{i}/")] == [
            f"tower_{i}/local3/weight_loss", f"tower_{i}/local4/weight_loss", f"tower_{i}/cross_entropy"]
    for (g0, v0), (g1, _), (g, v) in zip(*tower_grads, grads):
        np.testing.assert_array_equal(v0, v)  # one set of variables, shared by the towers
        assert not np.allclose(g0, g1)  # the towers saw different halves of the batch
        np.testing.assert_allclose(g, (g0 + g1) / 2, rtol=1e-6, atol=1e-7)
    device_of = {node.name: node.device for graph in metadata.partition_graphs for node in graph.node
                 if node.op not in ("_Send", "_Recv")}
    op_of = {node.name: node.op for graph in metadata.partition_graphs for node in graph.node}
    for i in range(2):
        tower_ops = [name for name in device_of if name.startswith(f"tower_{i}/")]
        # Conv2D + BiasAdd + Relu run fused on the GPU (TF's remapper.cc, cuDNN's fused convolution)
        assert op_of[f"tower_{i}/conv1/conv1"] == "_FusedConv2D"
        assert f"tower_{i}/gradients/tower_{i}/conv1/Conv2D_grad/Conv2DBackpropFilter" in tower_ops
        assert {device_of[name] for name in tower_ops} == {f"/job:localhost/replica:0/task:0/device:GPU:{i}"}
    assert device_of["conv1/weights"].endswith("CPU:0") and device_of["concat"].endswith("CPU:0")
    # summary ops have CPU kernels only: allow_soft_placement moves the towers' ones off their GPUs
    summary_devices = {node.name: node.device for graph in summary_metadata.partition_graphs for node in graph.node
                       if node.op.endswith("Summary")}
    assert "tower_1/conv1/conv1/conv1/sparsity" in summary_devices and len(summary_devices) > 20
    assert {device.rsplit("/", 1)[1] for device in summary_devices.values()} == {"device:CPU:0"}


def test_ema_eval_restores_the_shadow_values_of_training(tmp_path):
    history = ema_eval.train(str(tmp_path), max_steps=60)
    precision, global_step, restored = ema_eval.evaluate(str(tmp_path))
    assert global_step == 60
    for name, values in history.items():
        shadow = np.zeros_like(values[0])  # the variables start at zero: so do their averages
        for step, value in enumerate(values, start=1):  # updated after each step, global_step already `step`
            decay = min(ema_eval.MOVING_AVERAGE_DECAY, (1.0 + step) / (10.0 + step))
            shadow = decay * shadow + (1 - decay) * value.astype(np.float64)
        np.testing.assert_allclose(restored[name], shadow, rtol=1e-4, atol=1e-6)
        assert np.abs(restored[name] - values[-1]).max() > 1e-3  # the averages, not the last values
    assert precision >= 0.9


def test_monitored_training_session_resumes_and_writes_summaries(tmp_path, caplog, keep_logging_verbosity):
    checkpoint_dir = str(tmp_path)
    caplog.set_level(logging.INFO)
    assert monitored_training.main(checkpoint_dir, last_step=30) == 30
    assert tf.train.latest_checkpoint(checkpoint_dir).endswith("model.ckpt-30")
    assert monitored_training.main(checkpoint_dir, last_step=50) == 20  # resumed at the saved step 30
    state = tf.train.get_checkpoint_state(checkpoint_dir)
    # saved when each session starts and ends; the second session's saver counts the first one's files
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "model.ckpt-0", "model.ckpt-30", "model.ckpt-50"]
    messages = [record.getMessage() for record in caplog.records]
    # LoggingTensorHook: sorted tags every 10 local steps, with the seconds since its last line
    logged = [m for m in messages if m.startswith("loss = ")]
    assert len(logged) == 3 + 2, logged
    for i, line in enumerate(logged):
        elapsed = "" if i in (0, 3) else r" \([0-9.]+ sec\)"  # a new hook (session) starts without one
        assert re.fullmatch(r"loss = [0-9.]+, step = [0-9]+" + elapsed, line), line
    assert f"Saving checkpoints for 50 into {os.path.join(checkpoint_dir, 'model.ckpt')}." in messages
    tf.summary.FileWriterCache.clear()  # flush and close the directory's writer, shared by both sessions
    accumulator = EventAccumulator(checkpoint_dir)
    accumulator.Reload()
    assert accumulator.Tags()["graph"] and os.path.exists(os.path.join(checkpoint_dir, "graph.pbtxt"))
    assert accumulator.Graph().node  # TensorBoard's graph: the one CheckpointSaverHook wrote
    losses = accumulator.Scalars("loss")
    # SummarySaverHook: the first run of each session, then every 10 steps, tagged with the step after the run
    assert [event.step for event in losses] == [1, 11, 21, 31, 41]
    values = [event.value for event in losses]
    assert np.all(np.isfinite(values)) and values[-1] < values[0]


def test_monitored_training_session_writes_tfs_meta_graph(tmp_path, keep_logging_verbosity):
    monitored_training.main(str(tmp_path), last_step=10)
    tf.summary.FileWriterCache.clear()
    accumulator = EventAccumulator(str(tmp_path))
    accumulator.Reload()
    assert os.path.exists(str(tmp_path / "model.ckpt-10.meta")) and accumulator.Tags()["meta_graph"]


def test_layers_cnn_with_batch_norm_reaches_95_percent():
    accuracy, moving_means = layers_cnn.main()
    assert accuracy >= 0.95
    assert len(moving_means) == 2 and all(np.abs(m).max() > 0 for m in moving_means)  # UPDATE_OPS ran


def test_getting_started_linear_regression():
    # Model parameters
    W = tf.Variable([.3], dtype=tf.float32)
    b = tf.Variable([-.3], dtype=tf.float32)
    # Model input and output
    x = tf.placeholder(tf.float32)
    linear_model = W * x + b
    y = tf.placeholder(tf.float32)
    # loss
    loss = tf.reduce_sum(tf.square(linear_model - y))
    optimizer = tf.train.GradientDescentOptimizer(0.01)
    train = optimizer.minimize(loss)
    x_train = [1, 2, 3, 4]
    y_train = [0, -1, -2, -3]
    init = tf.global_variables_initializer()
    sess = tf.Session()
    sess.run(init)
    for _ in range(1000):
        sess.run(train, {x: x_train, y: y_train})
    curr_W, curr_b, curr_loss = sess.run([W, b, loss], {x: x_train, y: y_train})
    # TF's documented result: W: [-0.9999969] b: [0.99999082] loss: 5.69997e-11
    np.testing.assert_allclose(curr_W, [-1.0], atol=1e-4)
    np.testing.assert_allclose(curr_b, [1.0], atol=1e-4)
    assert curr_loss < 1e-8


def _digits():
    from dfcore.examples.digits_data import load_digits_split

    return load_digits_split(seed=0)


def test_softmax_regression_for_beginners():
    data = _digits()
    x = tf.placeholder(tf.float32, [None, 64])
    W = tf.Variable(tf.zeros([64, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.nn.softmax(tf.matmul(x, W) + b)
    y_ = tf.placeholder(tf.float32, [None, 10])
    cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y), reduction_indices=[1]))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
    sess = tf.InteractiveSession()
    tf.global_variables_initializer().run()
    one_hot = np.eye(10, dtype=np.float32)
    rng = np.random.RandomState(0)
    for _ in range(300):
        idx = rng.choice(len(data.x_train), 100, replace=False)
        sess.run(train_step, feed_dict={x: data.x_train[idx], y_: one_hot[data.y_train[idx]]})
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    value = sess.run(accuracy, feed_dict={x: data.x_test, y_: one_hot[data.y_test]})
    sess.close()
    assert value > 0.9


def test_mlp_with_adam_and_compat_v1():
    tfv1 = tf.compat.v1
    data = _digits()
    tfv1.set_random_seed(1)
    x = tfv1.placeholder(tfv1.float32, shape=[None, 64], name="x")
    labels = tfv1.placeholder(tfv1.int64, shape=[None], name="labels")
    w1 = tfv1.Variable(tfv1.random_normal([64, 64], stddev=0.1))
    b1 = tfv1.Variable(tfv1.zeros([64]))
    w2 = tfv1.Variable(tfv1.random_normal([64, 10], stddev=0.1))
    b2 = tfv1.Variable(tfv1.zeros([10]))
    hidden = tfv1.nn.relu(tfv1.nn.bias_add(tfv1.matmul(x, w1), b1))
    logits = tfv1.matmul(hidden, w2) + b2
    loss = tfv1.reduce_mean(tfv1.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    global_step = tfv1.train.get_or_create_global_step()
    train_op = tfv1.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)
    accuracy = tfv1.reduce_mean(tfv1.cast(tfv1.equal(tfv1.argmax(logits, 1), labels), tfv1.float32))
    with tfv1.Session() as sess:
        sess.run(tfv1.global_variables_initializer())
        for step in range(300):
            start = (step * 64) % (len(data.x_train) - 64)
            sess.run(train_op, {x: data.x_train[start:start + 64], labels: data.y_train[start:start + 64]})
        assert sess.run(global_step) == 300
        assert sess.run(accuracy, {x: data.x_test, labels: data.y_test}) > 0.9


def test_seeds_device_placement_program_values():
    c = []
    for d in ['/device:GPU:2', '/device:GPU:3']:
        with tf.device(d):
            a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3])
            b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2])
            c.append(tf.matmul(a, b))
    with tf.device('/cpu:0'):
        sum = tf.add_n(c)  # noqa: A001 - as the seed program writes it
    sess = tf.Session(config=tf.ConfigProto(log_device_placement=False))
    np.testing.assert_array_equal(sess.run(sum), [[44, 56], [98, 128]])
