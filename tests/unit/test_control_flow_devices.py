"""Loops across devices (TF's graph_partition.cc AddControlFlow, Yu et al. EuroSys 2018 §4): a control loop
per device that receives inside the loop, _Send/_Recv pairs counted, keys carrying frame:iter, results
against numpy on 2 and 4 devices, gradients across devices."""

import numpy as np
import pytest

import dfcore as tf
from dfcore.framework import rendezvous_key
from dfcore.runtime.control_flow_executor import frame_id_of

ITERATIONS = 4
W = np.array([0.5, 1.0, 2.0])
X = np.array([0.1, 0.2, 0.3])


def _loop_over_devices(num_devices):
    """y <- tanh((((y * w) on GPU:1) … on GPU:k) + x) on GPU:0, ITERATIONS times: a chain of one Mul per device."""
    x = tf.placeholder(tf.float64, [3], name="x")
    w = tf.constant(W, name="w")

    def body(i, y):
        for d in range(1, num_devices):
            with tf.device(f"/device:GPU:{d}"):
                y = y * w
        with tf.device("/device:GPU:0"):
            return i + 1, tf.tanh(y + x)

    with tf.device("/device:GPU:0"):
        out = tf.while_loop(lambda i, y: i < ITERATIONS, body, (tf.constant(0), tf.ones([3], tf.float64)))
    return x, out


def _numpy(num_devices):
    y = np.ones(3)
    for _ in range(ITERATIONS):
        y = np.tanh(y * W ** (num_devices - 1) + X)
    return y


def _run(num_devices, fetch_builder=None):
    x, out = _loop_over_devices(num_devices)
    fetch = out if fetch_builder is None else fetch_builder(x, out)
    config = tf.ConfigProto(device_count={"GPU": num_devices})
    meta = tf.RunMetadata()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, output_partition_graphs=True, timeout_in_ms=10000)
    with tf.Session(config=config) as sess:
        value = sess.run(fetch, {x: X}, options=options, run_metadata=meta)
    return value, meta


@pytest.mark.parametrize("num_devices", [2, 4])
def test_a_loop_across_devices_matches_numpy(num_devices):
    (count, y), _ = _run(num_devices)
    assert count == ITERATIONS
    np.testing.assert_allclose(y, _numpy(num_devices))


@pytest.mark.parametrize("num_devices", [2, 4])
def test_each_device_gets_a_control_loop_and_the_loop_condition(num_devices):
    _, meta = _run(num_devices)
    graphs = {g.node[0].device: g for g in meta.partition_graphs}
    for d in range(1, num_devices):
        nodes = graphs[f"/job:localhost/replica:0/task:0/device:GPU:{d}"].node
        ops = [n.op for n in nodes if "/_cloop_" in n.name]
        assert sorted(ops) == ["Const", "Enter", "Identity", "Merge", "NextIteration", "Switch"]
        loop_cond_recvs = [n for n in nodes if n.op == "_Recv" and n.name.startswith("while/LoopCond/")]
        assert len(loop_cond_recvs) == 1
        merge = next(n.name for n in nodes if "/_cloop_" in n.name and n.op == "Merge")
        # every _Recv inside the loop waits for the device's control loop (runs once per iteration)
        for n in nodes:
            if n.op == "_Recv" and not n.name.startswith("_arg"):
                assert f"^{merge}" in n.input


@pytest.mark.parametrize("num_devices", [2, 4])
def test_transfers_per_iteration_carry_frame_and_iteration_in_their_keys(num_devices):
    _, meta = _run(num_devices)
    transfers = tf.step_records(meta).transfers
    frame_id = frame_id_of(0, 0, "while/while_context")
    keys = {t.key: rendezvous_key.parse_key(t.key) for t in transfers}
    in_loop = [t for t in transfers if keys[t.key].frame_id == frame_id]
    # per iteration (ITERATIONS live ones plus the last, which only tests the condition and sends dead
    # values): the LoopCond to each other device, and the chain GPU:0 -> GPU:1 -> ... -> GPU:0
    iterations = sorted({keys[t.key].iter_id for t in in_loop})
    assert iterations == list(range(ITERATIONS + 1))
    per_iteration = {it: sum(1 for t in in_loop if keys[t.key].iter_id == it) for it in iterations}
    # the LoopCond to each other device, the chain's hops, and the loop invariant w: entered once (on the device
    # of its first consumer, GPU:1), its Enter's output goes to the other Mul devices in every iteration
    expected = (num_devices - 1) + num_devices + max(0, num_devices - 2)
    assert set(per_iteration.values()) == {expected}
    sources = {t.tensor_name.split("_", 2)[2] for t in in_loop}
    assert {"while/LoopCond", "while/Identity_1"} <= sources
    last = [t for t in in_loop if keys[t.key].iter_id == ITERATIONS]
    chain = [t for t in last if "LoopCond" not in t.tensor_name and "Enter" not in t.tensor_name]
    assert chain and all(t.nbytes == 0 for t in chain)  # the body is dead in the last iteration: nothing moves
    outside = [t for t in transfers if (keys[t.key].frame_id, keys[t.key].iter_id) == (0, 0)]
    assert outside and all(t.key.endswith(";0:0") for t in outside)  # the feed in, the results out


def test_gradient_of_a_loop_across_two_devices_matches_finite_differences():
    def fetch(x, out):
        return tf.gradients(tf.reduce_sum(out[1]), x)[0]

    grad, _ = _run(2, fetch)
    eps = 1e-6
    numeric = np.zeros(3)
    for k in range(3):
        def f(xv):
            y = np.ones(3)
            for _ in range(ITERATIONS):
                y = np.tanh(y * W + xv)
            return y.sum()

        plus, minus = X.copy(), X.copy()
        plus[k] += eps
        minus[k] -= eps
        numeric[k] = (f(plus) - f(minus)) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, atol=1e-7)


def test_four_devices_on_the_thread_pool_with_parallel_iterations_agree_with_numpy_every_step():
    x = tf.placeholder(tf.float64, [3], name="x")
    w = tf.constant(W)

    def body(i, y):
        for d in (1, 2, 3):
            with tf.device(f"/device:GPU:{d}"):
                y = y * w
        with tf.device("/device:GPU:0"):
            return i + 1, tf.tanh(y + x)

    with tf.device("/device:GPU:0"):
        out = tf.while_loop(lambda i, y: i < 12, body, (tf.constant(0), tf.ones([3], tf.float64)),
                            parallel_iterations=4)
    expected = np.ones(3)
    for _ in range(12):
        expected = np.tanh(expected * W ** 3 + X)
    config = tf.ConfigProto(device_count={"GPU": 4}, inter_op_parallelism_threads=4)
    with tf.Session(config=config, executor_runner="pool") as sess:
        for _ in range(10):  # threads race differently each step; the result may not
            np.testing.assert_allclose(sess.run(out, {x: X}, options=tf.RunOptions(timeout_in_ms=10000))[1], expected)
