"""ExponentialMovingAverage against its closed form, and TF1's names and collections."""

import numpy as np
import pytest

import dfcore as tf

VALUES = [np.array([1.0, -2.0]), np.array([4.0, 0.5]), np.array([-3.0, 2.0]), np.array([0.0, 10.0])]
INIT = np.array([2.0, 1.0])


def _closed_form(decays, init, values):
    """shadow_k = prod(d_1..d_k) * init + sum_i (1 - d_i) * prod(d_{i+1}..d_k) * v_i."""
    total = np.prod(decays) * init
    for i, v in enumerate(values):
        total = total + (1 - decays[i]) * np.prod(decays[i + 1:]) * v
    return total


def _track(ema, feed_step=None):
    """Assign VALUES to a float64 variable one by one, running the EMA update after each; return shadows."""
    x = tf.Variable(INIT, name="x")
    new = tf.placeholder(tf.float64, [2])
    assign = x.assign(new)
    update = ema.apply([x])
    shadows = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for k, value in enumerate(VALUES):
            sess.run(assign, {new: value})
            sess.run(update, {} if feed_step is None else {feed_step: k})
            shadows.append(sess.run(ema.average(x)))
    return x, shadows


def test_closed_form_over_k_steps():
    decay = float(np.float32(0.75))  # the decay is a float32 constant cast to the variable's dtype
    _, shadows = _track(tf.train.ExponentialMovingAverage(0.75))
    for k, got in enumerate(shadows, start=1):
        np.testing.assert_allclose(got, _closed_form([decay] * k, INIT, VALUES[:k]), rtol=1e-12)


def test_num_updates_caps_the_decay():
    step = tf.placeholder(tf.int64, [], name="step")
    _, shadows = _track(tf.train.ExponentialMovingAverage(0.99, num_updates=step), feed_step=step)
    decays = [float(np.float32(min(np.float32(0.99), np.float32((1.0 + n) / (10.0 + n))))) for n in range(4)]
    for k, got in enumerate(shadows, start=1):
        np.testing.assert_allclose(got, _closed_form(decays[:k], INIT, VALUES[:k]), rtol=1e-6)
    assert decays[0] == pytest.approx(0.1)


def test_shadow_names_collections_and_placement():
    x = tf.Variable(INIT, name="x")
    ema = tf.train.ExponentialMovingAverage(0.9)
    op = ema.apply([x])
    shadow = ema.average(x)
    assert op.name == "ExponentialMovingAverage" and op.type == "NoOp"
    assert shadow.name == "x/ExponentialMovingAverage:0"
    assert ema.average_name(x) == "x/ExponentialMovingAverage"
    assert not shadow.trainable and shadow in tf.global_variables()
    assert shadow.op.colocation_groups == ["loc:@x"]
    assert tf.moving_average_variables() == [x]  # TF collects the averaged variables, not the shadows
    y = tf.Variable(1.0, name="y")
    assert ema.average(y) is None and ema.average_name(y) == "y/ExponentialMovingAverage"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(shadow), INIT)  # initialized to the variable's initial value


def test_variables_to_restore_maps_shadow_names():
    x = tf.Variable(INIT, name="x")
    gs = tf.train.get_or_create_global_step()
    ema = tf.train.ExponentialMovingAverage(0.9)
    ema.apply([x])
    mapping = ema.variables_to_restore()
    assert mapping == {"x/ExponentialMovingAverage": x, "global_step": gs}


def test_errors():
    x = tf.Variable(INIT, name="x")
    ema = tf.train.ExponentialMovingAverage(0.9)
    ema.apply([x])
    with pytest.raises(ValueError, match="Moving average already computed for: x:0"):
        ema.apply([x])
    with pytest.raises(TypeError, match="The variables must be half, float, or double: i:0"):
        ema.apply([tf.Variable(1, name="i")])


def test_tensor_average_with_zero_debias():
    value = tf.placeholder(tf.float64, [2], name="value")
    batch_mean = tf.identity(value, name="batch_mean")
    ema = tf.train.ExponentialMovingAverage(0.5, zero_debias=True)
    update = ema.apply([batch_mean])
    shadow = ema.average(batch_mean)
    assert shadow.name == "batch_mean/ExponentialMovingAverage:0"
    biased = 0.0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for t, v in enumerate(VALUES, start=1):
            sess.run(update, {value: v})
            biased = 0.5 * biased + 0.5 * v
            np.testing.assert_allclose(sess.run(shadow), biased / (1 - 0.5**t), rtol=1e-12)


def test_update_after_train_op_uses_control_dependencies():
    """The classic TF1 pattern: ``with control_dependencies([train]): ema.apply()``."""
    w = tf.Variable(np.array([1.0]), name="w")
    train = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(w.value()))
    ema = tf.train.ExponentialMovingAverage(0.5)
    with tf.control_dependencies([train]):
        step = ema.apply([w])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        w_now, shadow = sess.run([w, ema.average(w)])
    np.testing.assert_allclose(w_now, [0.5])
    np.testing.assert_allclose(shadow, [0.5 * 1.0 + 0.5 * 0.5])  # averaged with the trained value


def test_a_global_step_num_updates_is_read_after_the_train_op_it_depends_on():
    # cifar10.py: the averages follow apply_gradients (which increments the step) in the same run
    x = tf.Variable(INIT, name="x")
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(1.0).apply_gradients(
        [(tf.constant([1.0, 1.0], tf.float64), x)], global_step=global_step)
    ema = tf.train.ExponentialMovingAverage(0.99, num_updates=global_step)
    with tf.control_dependencies([train_op]):
        update = ema.apply([x])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(update)
        decay = float(np.float32(2.0 / 11.0))  # num_updates = 1: the incremented step, as TF
        np.testing.assert_allclose(sess.run(ema.average(x)), decay * INIT + (1 - decay) * (INIT - 1), rtol=1e-7)


def test_apply_places_the_update_arithmetic_on_the_callers_device_as_tf():
    """Recorded with TF 2.21's compat.v1 (ref variables; w on CPU:1, b on CPU:2, apply() under CPU:0 of three
    CPUs, partition_graphs): ``1 - decay``, ``sub`` and ``mul`` on the caller's device, each ``AssignSub`` with
    its shadow (colocated with its variable), ``group`` one NoOp per device and one on the caller's. (TF 1.15's
    default strategy colocated the whole update with the shadow; TF 2's does not.) dfcore's own read of the
    variable (``AssignMovingAvg/read``, TF reads ``w/read``) stays with the variable."""
    with tf.device("/gpu:0"):
        w = tf.Variable([1.0, 2.0], name="w")
    with tf.device("/gpu:1"):
        b = tf.Variable(0.5, name="b")
    graph = tf.get_default_graph()
    first = len(graph.get_operations())
    with tf.device("/cpu:0"):
        step = tf.train.ExponentialMovingAverage(0.9).apply([w, b])
    config = tf.ConfigProto(device_count={"CPU": 1, "GPU": 2})
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        shadow = graph.get_tensor_by_name("b/ExponentialMovingAverage:0")
        np.testing.assert_allclose(sess.run(shadow), 0.5)
        placed = {r.node_name: r.assigned_device.rsplit("/", 1)[1] for r in sess.placement_records()}
    assert shadow.op.colocation_groups == ["loc:@b"]
    got = {op.name: (op.type, placed[op.name]) for op in graph.get_operations()[first:]
           if op.name.startswith("ExponentialMovingAverage")}
    cpu, gpu0, gpu1 = "device:CPU:0", "device:GPU:0", "device:GPU:1"
    s = "ExponentialMovingAverage/"
    assert got == {
        s + "decay": ("Const", cpu),
        s + "AssignMovingAvg/sub/x": ("Const", cpu), s + "AssignMovingAvg/sub": ("Sub", cpu),
        s + "AssignMovingAvg/read": ("Identity", gpu0), s + "AssignMovingAvg/sub_1": ("Sub", cpu),
        s + "AssignMovingAvg/mul": ("Mul", cpu), s + "AssignMovingAvg": ("AssignSub", gpu0),
        s + "AssignMovingAvg_1/sub/x": ("Const", cpu), s + "AssignMovingAvg_1/sub": ("Sub", cpu),
        s + "AssignMovingAvg_1/read": ("Identity", gpu1), s + "AssignMovingAvg_1/sub_1": ("Sub", cpu),
        s + "AssignMovingAvg_1/mul": ("Mul", cpu), s + "AssignMovingAvg_1": ("AssignSub", gpu1),
        s + "NoOp": ("NoOp", gpu0), s + "NoOp_1": ("NoOp", gpu1), "ExponentialMovingAverage": ("NoOp", cpu),
    }
    assert graph.get_operation_by_name(s + "AssignMovingAvg").colocation_groups == ["loc:@w"]


def test_apply_on_one_device_groups_on_that_device():
    with tf.device("/gpu:1"):
        w = tf.Variable([1.0, 2.0], name="w")
        b = tf.Variable(0.5, name="b")
    step = tf.train.ExponentialMovingAverage(0.9).apply([w, b])
    assert (step.name, step.device) == ("ExponentialMovingAverage", "/device:GPU:1")
    assert [op.name for op in step.control_inputs] == ["ExponentialMovingAverage/AssignMovingAvg",
                                                       "ExponentialMovingAverage/AssignMovingAvg_1"]
