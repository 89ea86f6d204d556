"""Tensor-slice model parallelism (dfcore.examples.tensor_parallel; model_parallel --split tensor).

References: numpy's ``x @ W`` and its gradients ``xᵀ dy`` and ``dy Wᵀ`` for one split MatMul; the unsplit
staged MLP on one GPU (``build_staged_mlp``, itself checked against the pipelined step in
test_model_parallel.py) for the Megatron MLP, from the same initial weights.
"""

import numpy as np
import pytest

import dfcore as tf
from dfcore.examples import model_parallel as mp, tensor_parallel as tp
from dfcore.examples.staged_mlp import build_staged_mlp

SMALL = (64, 32, 32, 32, 32, 32, 10)  # three Megatron blocks; six layers, as the layer split on 4 GPUs needs


def _short(device):
    return device.rsplit("/", 1)[-1].replace("device:", "")


@pytest.mark.parametrize("kind", tp.SPLITS)
@pytest.mark.parametrize("num_gpus", [2, 4])
def test_split_matmul_output_and_gradients_equal_the_unsplit_matmul(kind, num_gpus):
    model = tp.build_split_matmul(kind, num_gpus, batch=8, fan_in=16, fan_out=12, dtype=tf.float64)
    rng = np.random.default_rng(num_gpus)
    x, dy = rng.standard_normal((8, 16)), rng.standard_normal((8, 12))
    with tf.Session(graph=model.graph, config=mp.session_config(num_gpus)) as sess:
        sess.run([w.initializer for w in model.layer.weights])
        slices = sess.run(list(model.layer.weights))
        y, outputs, grads = sess.run([model.y, list(model.outputs), list(model.grads)], {model.x: x, model.dy: dy})
        placed = {r.node_name: _short(r.assigned_device) for r in sess.placement_records()}
    w = np.concatenate(slices, axis=model.layer.axis)
    assert [s.shape for s in slices] == [(16, 12 // num_gpus) if kind == "column" else (16 // num_gpus, 12)] * num_gpus
    np.testing.assert_allclose(y, x @ w, atol=1e-12, rtol=0)
    for i, out in enumerate(outputs):  # column: device i's slice of y; row: every device holds all of y
        want = (x @ w)[:, i * 12 // num_gpus:(i + 1) * 12 // num_gpus] if kind == "column" else x @ w
        np.testing.assert_allclose(out, want, atol=1e-12, rtol=0)
    np.testing.assert_allclose(np.concatenate(grads[:-1], axis=model.layer.axis), x.T @ dy, atol=1e-12, rtol=0)
    np.testing.assert_allclose(grads[-1], dy @ w.T, atol=1e-12, rtol=0)
    assert [placed[m.op.name] for m in model.layer.weights] == [f"GPU:{i}" for i in range(num_gpus)]


def _send_pairs(kind, num_gpus):
    """``{(src, dst)}`` of the ``_Send`` nodes between two GPUs in the partition graphs of the forward pass."""
    model = tp.build_split_matmul(kind, num_gpus, batch=8, fan_in=16, fan_out=16)
    feed = {model.x: np.zeros((8, 16), np.float32)}
    with tf.Session(graph=model.graph, config=mp.session_config(num_gpus)) as sess:
        partitions = sess.partitions(list(model.outputs) if kind == "row" else model.y, feed)
    return {(_short(n.get_attr("send_device")), _short(n.get_attr("recv_device")))
            for graph in partitions.values() for n in graph.nodes if n.op == "_Send"
            if "GPU" in n.get_attr("send_device") and "GPU" in n.get_attr("recv_device")}


def test_column_split_sends_each_slice_to_the_gathering_gpu_only():
    assert _send_pairs("column", 4) == {(f"GPU:{i}", "GPU:0") for i in range(1, 4)}
    assert _send_pairs("column", 2) == {("GPU:1", "GPU:0")}


def test_row_split_all_reduce_sends_around_the_ring():
    ring = {(f"GPU:{i}", f"GPU:{(i + 1) % 4}") for i in range(4)}
    assert _send_pairs("row", 4) == ring
    assert _send_pairs("row", 2) == {("GPU:0", "GPU:1"), ("GPU:1", "GPU:0")}


@pytest.mark.parametrize("num_gpus", [2, 4])
def test_megatron_mlp_gradients_equal_the_unsplit_mlp(num_gpus):
    rng = np.random.default_rng(2)
    x, y = rng.random((16, 64)), rng.integers(0, 10, 16)
    unsplit = build_staged_mlp(["/gpu:0"], 1, 16, SMALL, dtype=tf.float64, optimizer="sgd", seed=3)
    with tf.Session(graph=unsplit.graph, config=mp.session_config(num_gpus)) as sess:
        sess.run(unsplit.init)
        start = sess.run(unsplit.variables)
        want = sess.run([g for g, _ in unsplit.grads_and_vars], {unsplit.x: x, unsplit.y: y})
    model = tp.build_tensor_parallel_mlp(num_gpus, 16, SMALL, dtype=tf.float64, optimizer="sgd", seed=3)
    with tf.Session(graph=model.graph, config=mp.session_config(num_gpus)) as sess:
        sess.run(model.init)
        grads = dict(zip(model.variables, sess.run([g for g, _ in model.grads_and_vars], {model.x: x, model.y: y})))
        joined_start, joined_grads = [], []
        for layer in model.layers:
            for part, axis in ((layer.weights, layer.axis), (layer.biases, 0)):
                joined_start.append(np.concatenate(sess.run(list(part)), axis=axis))
                joined_grads.append(np.concatenate([grads[v] for v in part], axis=axis))
    for got, want_start in zip(joined_start, start):  # same seed, same initial weights
        np.testing.assert_array_equal(got, want_start)
    for got, want_grad in zip(joined_grads, want):
        assert np.abs(want_grad).max() > 1e-3
        np.testing.assert_allclose(got, want_grad, atol=1e-12, rtol=0)


def test_bad_splits_are_value_errors():
    with pytest.raises(ValueError, match="even number of weight layers, got 3"):
        tp.build_tensor_parallel_mlp(2, layers=(64, 32, 32, 10))
    with pytest.raises(ValueError, match="Cannot split 30 columns over 4 devices"):
        tp.build_tensor_parallel_mlp(4, layers=(64, 30, 10))
    with pytest.raises(ValueError, match="kind must be one of"):
        tp.build_split_matmul("diagonal", 2)


def test_tensor_split_moves_more_bytes_than_the_layer_split():
    """Per step on 4 GPUs, SMALL (hidden 32, batch 64, float32): the layer split sends one 64 x 32 activation
    forward and its gradient back over each of its 3 stage boundaries; the tensor split all-reduces a
    64 x 32 activation in each of its first 2 blocks forward, and again backward, each ring moving 2(N-1)/N of
    it out of every one of the N GPUs: 2 · 2 · 2(N-1)/N · N · 64·32·4 bytes, on top of the fed batch."""
    layer, tensor = mp.measure("by_hand", layers=SMALL), mp.measure_tensor(4, layers=SMALL)
    assert layer.send_recv > 0 and tensor.send_recv > layer.send_recv
    assert tensor.transfer_bytes >= 2 * 2 * 6 * 64 * 32 * 4
    assert tensor.transfer_bytes > layer.transfer_bytes >= 3 * 2 * 64 * 32 * 4
    assert tensor.stage_devices == tuple(f"/gpu:{i}" for i in range(4)) and tensor.bubble == 0.0


def test_cli_split_tensor_prints_the_comparison_and_the_accuracy(capsys):
    mp.main(["--split", "tensor", "--no-progress", "--layers", ",".join(map(str, SMALL))])
    out = capsys.readouterr().out
    for num_gpus in (2, 4):
        assert f"tensor  split on {num_gpus} GPUs" in out and f"by_hand split on {num_gpus} GPUs" in out
        assert f"bytes per step on {num_gpus} GPUs: tensor/layer = " in out
    accuracy = float(out.rsplit("test_accuracy=", 1)[1])
    assert accuracy >= 0.95  # Megatron's MLP block 64-256-10 on 4 GPUs, 8 epochs, seed 0 (0.9722 when written)
