"""Data-parallel training with mirrored variables and all-reduced gradients."""

import re
import subprocess
import sys

import numpy as np
import pytest
from _requirements import require_module

import dfcore as tf
from dfcore.distribute import MirroredStrategy, ring_bytes_sent


def _one_step(num_devices, algorithm, initial, x, y):
    from dfcore.examples import data_parallel

    graph = tf.Graph()
    with graph.as_default():
        model = data_parallel.build_data_parallel(num_devices, 64, 64, 10, hidden=32, all_reduce_alg=algorithm,
                                                  learning_rate=0.5, dtype=tf.float64)
    with tf.Session(graph=graph) as sess:
        for replica in model["replica_vars"]:
            for var, value in zip(replica, initial):
                var.load(value, sess)
        metadata = tf.RunMetadata()
        sess.run(model["train_op"], {model["x"]: x, model["y"]: y},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
        return [sess.run(list(r)) for r in model["replica_vars"]], metadata, model


@pytest.mark.parametrize("algorithm", ["ring", "tree"])
def test_replicated_step_equals_the_single_device_full_batch_step(algorithm):
    rng = np.random.default_rng(0)
    x = rng.random((64, 64))
    y = rng.integers(0, 10, 64)
    initial = [rng.standard_normal(s) * 0.1 for s in ((64, 32), (32,), (32, 10), (10,))]
    replicas, metadata, model = _one_step(4, algorithm, initial, x, y)
    (single,), _, _ = _one_step(1, algorithm, initial, x, y)
    for got, want, start in zip(replicas[0], single, initial):
        assert not np.allclose(want, start)
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
    for replica in replicas[1:]:  # the mirrored copies stay equal
        for got, first in zip(replica, replicas[0]):
            np.testing.assert_array_equal(got, first)
    assert len(tf.step_records(metadata).collective_traces) == 4  # one all-reduce per variable
    traced = {}
    for trace in tf.step_records(metadata).collective_traces:
        for device, nbytes in trace.bytes_sent_per_device.items():
            traced[device] = traced.get(device, 0) + nbytes
    expected = model["strategy"].communication_bytes_per_device(model["replica_vars"], itemsize=8)
    assert sorted(traced.values()) == sorted(expected.values())


def test_communication_bytes_follow_the_ring_rule():
    strategy = MirroredStrategy(["/gpu:0", "/gpu:1", "/gpu:2"])
    graph = tf.Graph()
    with graph.as_default():
        replicas = strategy.create_variables(lambda: [tf.Variable(tf.zeros([10, 3])), tf.Variable(tf.zeros([4]))])
    assert [v.device for v in replicas[2]] == ["/device:GPU:2"] * 2
    sent = strategy.communication_bytes_per_device(replicas)
    assert sent["/gpu:1"] == ring_bytes_sent(1, 3, 30, 4) + ring_bytes_sent(1, 3, 4, 4)


def test_bad_strategy_arguments():
    with pytest.raises(ValueError, match="at least one device"):
        MirroredStrategy([])
    with pytest.raises(ValueError, match="listed twice"):
        MirroredStrategy(["/gpu:0", "/device:GPU:0"])
    with pytest.raises(ValueError, match="Unknown all-reduce algorithm"):
        MirroredStrategy(["/gpu:0"], all_reduce_alg="nccl")


def test_data_parallel_example_reaches_95_percent():
    require_module("sklearn")
    require_module("tqdm")
    result = subprocess.run([sys.executable, "-m", "dfcore.examples.data_parallel", "--no-progress", "--devices",
                             "4", "--all-reduce", "ring", "--epochs", "15"], capture_output=True, text=True,
                            timeout=300, check=True)
    accuracy = float(re.search(r"^test_accuracy=([0-9.]+)$", result.stdout, re.MULTILINE).group(1))
    assert accuracy >= 0.95
    sent = [int(v) for v in re.findall(r"^bytes_sent_per_step \S+=(\d+)$", result.stdout, re.MULTILINE)]
    assert len(sent) == 4 and all(s > 0 for s in sent)
