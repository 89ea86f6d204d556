"""The runnable examples: real training on scikit-learn's digits, and the multi-tower equivalence."""

import re
import subprocess
import sys

import numpy as np
from _requirements import require_module

import dfcore as tf

require_module("sklearn")
require_module("tqdm")


def _run_example(module, *args):
    result = subprocess.run([sys.executable, "-m", module, "--no-progress", *args], capture_output=True, text=True,
                            timeout=300, check=True)
    match = re.search(r"^test_accuracy=([0-9.]+)$", result.stdout, re.MULTILINE)
    assert match, result.stdout
    return float(match.group(1))


def test_digits_example_reaches_95_percent():
    assert _run_example("dfcore.examples.digits") >= 0.95


def test_conv_digits_example_reaches_97_percent():
    assert _run_example("dfcore.examples.conv_digits") >= 0.97


def test_conv_digits_is_seeded_and_its_towers_share_variables():
    from dfcore.examples import conv_digits

    assert conv_digits.train(epochs=1, progress=False) == conv_digits.train(epochs=1, progress=False)
    images = tf.placeholder(tf.float32, [None, 8, 8, 1])
    for reuse in (False, True):
        with tf.variable_scope("conv_net", reuse=reuse):
            logits = conv_digits.conv_net(images, 10, training=not reuse)
    assert logits.shape.as_list() == [None, 10]
    assert [v.op.name for v in tf.trainable_variables()] == [
        f"conv_net/{layer}/{weight}" for layer in ("conv2d", "conv2d_1", "dense", "dense_1")
        for weight in ("kernel", "bias")]


def test_multi_tower_example_reaches_95_percent():
    assert _run_example("dfcore.examples.multi_tower", "--towers", "4") >= 0.95


def test_one_multi_tower_step_equals_one_full_batch_step():
    from dfcore.examples import multi_tower

    rng = np.random.default_rng(0)
    x = rng.random((64, 64))
    y = rng.integers(0, 10, 64)
    initial = [rng.standard_normal(s) * 0.1 for s in ((64, 32), (32,), (32, 10), (10,))]

    def one_step(num_towers):
        graph = tf.Graph()
        with graph.as_default():
            model = multi_tower.build_multi_tower(num_towers, 64, 64, 10, hidden=32, learning_rate=0.5,
                                                  dtype=tf.float64)
        with tf.Session(graph=graph) as sess:
            for var, value in zip(model["params"], initial):
                var.load(value, sess)
            sess.run(model["train_op"], {model["x"]: x, model["y"]: y})
            return sess.run(list(model["params"]))

    towers, single = one_step(4), one_step(1)
    for got, want, start in zip(towers, single, initial):
        assert not np.allclose(want, start)  # the step moved the parameters
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)


def test_multi_tower_places_towers_on_their_gpus():
    from dfcore.examples import multi_tower

    model = multi_tower.build_multi_tower(2, 8, 4, 3, hidden=5)
    with tf.Session(config=tf.ConfigProto(device_count={"CPU": 1, "GPU": 2})) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(model["train_op"], {model["x"]: np.zeros((8, 4)), model["y"]: np.zeros(8, np.int64)})
        placed = {r.node_name: r.assigned_device for r in sess.placement_records()}
    assert placed["tower_0/MatMul"].endswith("GPU:0") and placed["tower_1/MatMul"].endswith("GPU:1")
    assert placed["w1"].endswith("CPU:0")


def test_multi_tower_writes_a_tensorboard_run_with_the_towers_on_their_gpus(tmp_path, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from dfcore.examples import multi_tower

    multi_tower.main(["--towers", "2", "--epochs", "1", "--no-progress", "--logdir", str(tmp_path)])
    assert capsys.readouterr().out.startswith("test_accuracy=")
    accumulator = EventAccumulator(str(tmp_path))
    accumulator.Reload()
    devices = {node.name: node.device for node in accumulator.Graph().node}
    assert devices["tower_0/MatMul"] == "/device:GPU:0" and devices["tower_1/MatMul"] == "/device:GPU:1"
    assert devices["w1"] == devices["loss"] == "/device:CPU:0"
    losses = accumulator.Scalars("loss")
    assert [e.step for e in losses] == list(range(22)) and losses[-1].value < losses[0].value  # 1,437 // 64 steps
    assert accumulator.Tags()["run_metadata"] == ["step1"]
    traced = {d.device.rsplit("/", 1)[-1] for d in accumulator.RunMetadata("step1").step_stats.dev_stats}
    assert {"device:CPU:0", "device:GPU:0", "device:GPU:1"} <= traced


def test_model_parallel_example_reaches_95_percent_and_prints_each_placement():
    result = subprocess.run([sys.executable, "-m", "dfcore.examples.model_parallel", "--no-progress",
                             "--micro-batches", "2"], capture_output=True, text=True, timeout=300, check=True)
    for placement in ("one_gpu", "by_hand", "tf_rules", "cost_static", "cost_measured"):
        assert re.search(rf"^{placement} +M=1  step +[0-9.]+ µs  transfers +[0-9.]+ KB", result.stdout, re.MULTILINE)
    assert re.search(r"^by_hand +M=2 ", result.stdout, re.MULTILINE)
    assert re.search(r"^bubble with N=4 stages, M=2: GPipe's \(N-1\)/\(M\+N-1\) 0\.600, ", result.stdout,
                     re.MULTILINE)
    match = re.search(r"^test_accuracy=([0-9.]+)$", result.stdout, re.MULTILINE)
    assert match and float(match.group(1)) >= 0.95, result.stdout
