"""A loop variable's control ops placed on different devices (Enter, Merge, Switch, Exit, NextIteration
split by explicit device requests set after building): the run must finish with numpy's result, never wait
for its deadline. TF moves those ops before partitioning (graph_partition.cc OptimizeControlFlowColocation):
Switch and Exit to their data input's device, a non-reference Enter and NextIteration to their first data
consumer's; the partition graphs show the moved devices."""

import numpy as np
import pytest

import dfcore as tf

pytestmark = pytest.mark.timeout(60)

GPU = "/job:localhost/replica:0/task:0/device:GPU:{}"
ITERATIONS = 5
X = np.array([0.5, -1.0, 2.0])


def _loop():
    """(i, y) <- (i + 1, y * 0.5 + x) ITERATIONS times, on GPU:0 unless moved."""
    x = tf.placeholder(tf.float64, [3], name="x")
    with tf.device("/device:GPU:0"):
        out = tf.while_loop(lambda i, y: i < ITERATIONS, lambda i, y: (i + 1, y * 0.5 + x),
                            (tf.constant(0), tf.ones([3], tf.float64)))
    return x, out


def _numpy():
    y = np.ones(3)
    for _ in range(ITERATIONS):
        y = y * 0.5 + X
    return y


def _run(x, out):
    meta = tf.RunMetadata()
    options = tf.RunOptions(output_partition_graphs=True, timeout_in_ms=10_000)
    with tf.Session(config=tf.ConfigProto(device_count={"GPU": 2})) as sess:
        count, y = sess.run(out, {x: X}, options=options, run_metadata=meta)
    assert count == ITERATIONS
    np.testing.assert_allclose(y, _numpy())
    return {n.name: n.device for g in meta.partition_graphs for n in g.node}


SPLITS = {  # op (of the loop variable y: suffix _1) -> the device it is moved to
    "enter": {"while/Enter_1": 1},
    "merge": {"while/Merge_1": 1},
    "next_iteration": {"while/NextIteration_1": 1},
    "switch": {"while/Switch_1": 1},
    "exit": {"while/Exit_1": 1},
    "loop_cond": {"while/LoopCond": 1},
    "every_other": {"while/Enter_1": 1, "while/Switch_1": 1, "while/NextIteration_1": 1, "while/Enter": 1},
}


@pytest.mark.parametrize("split", sorted(SPLITS))
def test_a_loop_with_its_control_ops_split_over_two_devices_matches_numpy(split):
    x, out = _loop()
    graph = tf.get_default_graph()
    for name, device in SPLITS[split].items():
        graph.get_operation_by_name(name)._set_device(f"/device:GPU:{device}")
    devices = _run(x, out)
    for suffix in ("", "_1"):  # each loop variable's control ops end on its Merge's device, as TF's
        merge = devices[f"while/Merge{suffix}"]
        for kind in ("Enter", "NextIteration", "Switch", "Exit"):
            assert devices[f"while/{kind}{suffix}"] == merge, (kind, suffix)


def test_a_loop_body_moving_the_loop_variable_between_devices_matches_numpy():
    x = tf.placeholder(tf.float64, [3], name="x")

    def body(i, y):
        with tf.device("/device:GPU:1"):
            z = y * 0.5
        return i + 1, z + x

    with tf.device("/device:GPU:0"):
        out = tf.while_loop(lambda i, y: i < ITERATIONS, body, (tf.constant(0), tf.ones([3], tf.float64)))
    graph = tf.get_default_graph()
    # NextIteration with the body's last op on GPU:0, Merge and Enter on GPU:1
    for name in ("while/Merge_1", "while/Enter_1"):
        graph.get_operation_by_name(name)._set_device("/device:GPU:1")
    devices = _run(x, out)
    assert devices["while/NextIteration_1"] == devices["while/Merge_1"] == GPU.format(1)


def test_a_reference_enter_off_its_merges_device_is_refused_at_once_naming_ops_and_devices():
    # TF leaves an Enter of a reference where it is (the variable is read on its device); dfcore cannot run that
    # frame split, so the run fails before any executor starts (a hang would be a DeadlineExceededError here)
    from dfcore.ops import control_flow_prims as cf

    v = tf.Variable(1.0, name="v")
    with tf.device("/device:GPU:1"):
        entered = cf.enter(v._ref(), "loop", name="ref_enter")
    with tf.device("/device:GPU:0"):
        limit, one = (cf.enter(tf.constant(c), "loop", is_constant=True) for c in (4.0, 1.0))
        merged, _ = cf.merge([entered, entered], name="loop_merge")
        done, body = cf.switch(merged, cf.loop_cond(tf.less(merged, limit)), name="loop_switch")
        merged.op._update_input(1, cf.next_iteration(body + one, name="loop_next"))
        out = cf.exit(done)
    with tf.Session(config=tf.ConfigProto(device_count={"GPU": 2})) as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError) as raised:
            sess.run(out, options=tf.RunOptions(timeout_in_ms=10_000))
    message = str(raised.value)
    for name in ("'loop_merge'", "'ref_enter'", GPU.format(0), GPU.format(1)):
        assert name in message


def _numpy_loops(x, nested):
    y = np.ones(3)
    for _ in range(3):
        if nested:
            for _ in range(2):
                y = y * 0.5 + x
        else:
            y = np.tanh(y * 0.5 + x)
    return y


@pytest.mark.parametrize("nested", [False, True], ids=["loop", "nested"])
@pytest.mark.parametrize("grad", [False, True], ids=["forward", "gradient"])
@pytest.mark.parametrize("seed", range(3))
def test_every_op_on_a_random_device_matches_numpy(seed, grad, nested):
    # every op without a colocation constraint gets GPU:0 or GPU:1 at random (the gradient's ops colocate
    # with the forward ones they mirror): forward and backward loops, nested frames, split everywhere
    x = tf.placeholder(tf.float64, [3], name="x")

    def inner(y):
        return tf.while_loop(lambda j, z: j < 2, lambda j, z: (j + 1, z * 0.5 + x), (tf.constant(0), y))[1]

    body = (lambda i, y: (i + 1, inner(y))) if nested else (lambda i, y: (i + 1, tf.tanh(y * 0.5 + x)))
    out = tf.while_loop(lambda i, y: i < 3, body, (tf.constant(0), tf.ones([3], tf.float64)))[1]
    fetch = tf.gradients(tf.reduce_sum(out), x)[0] if grad else out
    rng = np.random.default_rng(seed)
    for op in tf.get_default_graph().get_operations():
        if "_class" not in op.attrs:
            op._set_device(f"/device:GPU:{rng.integers(2)}")
    with tf.Session(config=tf.ConfigProto(device_count={"GPU": 2})) as sess:
        value = sess.run(fetch, {x: X}, options=tf.RunOptions(timeout_in_ms=10_000))
    if not grad:
        np.testing.assert_allclose(value, _numpy_loops(X, nested))
        return
    eps = 1e-6
    numeric = [(_numpy_loops(X + eps * e, nested).sum() - _numpy_loops(X - eps * e, nested).sum()) / (2 * eps)
               for e in np.eye(3)]
    np.testing.assert_allclose(value, numeric, rtol=1e-6)
