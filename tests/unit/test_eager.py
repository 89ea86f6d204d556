"""Eager execution: ops run at once with the graph kernels and placer rules (dfcore.eager).

References: numpy results of the same arithmetic, TF 1.x's eager rules and reprs (tensorflow/python/eager/
context.py, framework/ops.py), and the same model run in a Session.
"""

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors
from dfcore.eager import EagerTensor, context, eager_mode

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"


def test_graph_mode_by_default_and_eager_inside_the_block():
    assert not tf.executing_eagerly()
    with eager_mode():
        assert tf.executing_eagerly()
        with tf.Graph().as_default():
            assert not tf.executing_eagerly()  # building a graph, as in TF
        assert tf.executing_eagerly()
    assert not tf.executing_eagerly()


def test_ops_run_now_and_match_numpy():
    a_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    with eager_mode():
        a = tf.constant(a_np)
        b = tf.matmul(a, tf.transpose(a)) * 2.0 - 1.0
        assert isinstance(b, EagerTensor)
        np.testing.assert_allclose(b.numpy(), a_np @ a_np.T * 2 - 1)
        assert b.shape.as_list() == [2, 2]
        assert b.dtype == tf.float32
        s = tf.reduce_sum(b)
        assert float(s) == pytest.approx(float((a_np @ a_np.T * 2 - 1).sum()))


def test_repr_and_str_are_tfs():
    with eager_mode():
        t = tf.constant(3.0)
        assert repr(t) == f"<tf.Tensor: id={t._id}, shape=(), dtype=float32, numpy=3.0>"
        assert str(tf.constant([1, 2])) == "tf.Tensor([1 2], shape=(2,), dtype=int32)"
        m = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        assert repr(m).endswith("numpy=\narray([[1., 2.],\n       [3., 4.]], dtype=float32)>")


def test_device_scope_places_each_op_and_default_is_the_placers_first_device():
    config = tf.ConfigProto(device_count={"CPU": 1, "GPU": 2})
    with eager_mode(config):
        with tf.device("/gpu:1"):
            x = tf.constant([1.0, 2.0]) + 1.0
        assert x.device == GPU1
        with tf.device("/cpu:0"):
            y = x * 2.0
        assert y.device == CPU0
        z = x * 3.0  # no request: GPU before CPU, as TF's placer (and TF eager)
        assert z.device == "/job:localhost/replica:0/task:0/device:GPU:0"
        with pytest.raises(errors.InvalidArgumentError, match="Cannot assign a device for operation"):
            with tf.device("/gpu:7"):
                tf.constant(1.0) + 1.0


def test_soft_placement_from_the_config():
    config = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0}, allow_soft_placement=True)
    with eager_mode(config):
        with tf.device("/gpu:0"):
            x = tf.constant(1.0) + 1.0
        assert x.device == CPU0


def test_shape_errors_are_raised_as_in_graph_building():
    with eager_mode():
        with pytest.raises(errors.InvalidArgumentError, match="MatMul"):
            tf.matmul(tf.ones([2, 3]), tf.ones([2, 3]))


def test_kernel_errors_name_the_op():
    with eager_mode():
        with pytest.raises(errors.InvalidArgumentError, match=r"\[\[node"):
            tf.gather(tf.ones([3]), tf.constant([5]))


def test_graph_and_eager_tensors_do_not_mix():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(1.0)
    with eager_mode():
        with pytest.raises(ValueError, match="must be from the same graph"):
            tf.add(c, tf.constant(1.0))
        with pytest.raises(TypeError, match="graph tensor"):
            tf.get_default_graph().create_op("Identity", [c], {"T": tf.float32})


def test_variables_read_and_write_at_once():
    with eager_mode():
        v = tf.Variable([1.0, 2.0], name="v")
        assert v.name == "v:0"
        assert v.dtype == tf.float32
        np.testing.assert_allclose(v.numpy(), [1.0, 2.0])
        v.assign_add([1.0, 1.0])
        np.testing.assert_allclose(v.read_value().numpy(), [2.0, 3.0])
        v.assign_sub([0.5, 0.5])
        np.testing.assert_allclose((v * 2).numpy(), [3.0, 5.0])
        v.assign([7.0, 8.0])
        np.testing.assert_allclose(v.value().numpy(), [7.0, 8.0])
        w = tf.Variable(0.0, name="v")  # same name: its own storage
        assert w.name == "v_1:0"
        assert v.numpy()[0] == 7.0
        assert repr(w) == "<tf.Variable 'v_1:0' shape=() dtype=float32, numpy=0.0>"


def test_a_read_is_a_snapshot_not_a_view():
    with eager_mode():
        v = tf.Variable(1.0)
        before = v.read_value()
        v.assign(5.0)
        assert before.numpy() == 1.0 and v.numpy() == 5.0


def test_failed_update_changes_nothing():
    with eager_mode():
        v = tf.Variable([1.0, 2.0])
        with pytest.raises((errors.InvalidArgumentError, ValueError)):
            v.assign([1.0, 2.0, 3.0])
        np.testing.assert_allclose(v.numpy(), [1.0, 2.0])


def test_variable_on_a_device_and_updates_go_there():
    with eager_mode(tf.ConfigProto(device_count={"CPU": 1, "GPU": 2})):
        with tf.device("/gpu:1"):
            v = tf.Variable(1.0)
        assert v.device == GPU1
        assert v.read_value().device == GPU1
        v.assign_add(1.0)
        assert v.numpy() == 2.0


def test_get_variable_in_eager():
    with eager_mode():
        v = tf.get_variable("gv", shape=[2], initializer=tf.zeros_initializer())
        np.testing.assert_allclose(v.numpy(), [0.0, 0.0])


def test_eager_mode_gives_fresh_state_and_does_not_nest():
    with eager_mode():
        tf.Variable(1.0, name="x")
        with pytest.raises(ValueError):
            with eager_mode():
                pass
    with eager_mode() as ctx:
        assert ctx.variables.names() == []


def test_enable_eager_execution_rules():
    with pytest.raises(TypeError, match="config must be a tf.ConfigProto"):
        tf.enable_eager_execution(config="no")
    tf.constant(1.0)  # graph mode was used
    with pytest.raises(ValueError, match="must be called at program startup"):
        tf.enable_eager_execution()
    tf.reset_default_graph()
    tf.enable_eager_execution()
    assert tf.executing_eagerly()
    tf.enable_eager_execution()  # again, same options: fine
    with pytest.raises(ValueError, match="Trying to change the options"):
        tf.enable_eager_execution(config=tf.ConfigProto(device_count={"CPU": 2}))
    context._reset_for_tests()
    assert not tf.executing_eagerly()


def test_long_loops_keep_no_history():
    with eager_mode():
        x = tf.constant(0.0)
        for _ in range(5):
            x = x + 1.0
        assert x.op.inputs == ()  # nothing recorded it: its inputs were let go
        assert x.numpy() == 5.0


def test_optimizers_apply_and_minimize_in_eager_like_a_session():
    x_np = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    w0 = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]], np.float32)

    def build_loss(x, w):
        return tf.reduce_mean(tf.square(tf.matmul(x, w)))

    with tf.Graph().as_default():
        w = tf.Variable(w0)
        train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(build_loss(tf.constant(x_np), w))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(train)
            expected = sess.run(w)
    with eager_mode():
        w = tf.Variable(w0)
        opt = tf.train.MomentumOptimizer(0.1, 0.9)
        for _ in range(3):
            opt.minimize(lambda: build_loss(tf.constant(x_np), w))
        np.testing.assert_allclose(w.numpy(), expected, rtol=1e-6)
        with pytest.raises(RuntimeError, match="should be a function"):
            opt.minimize(build_loss(tf.constant(x_np), w))


def test_apply_gradients_in_eager():
    with eager_mode():
        v = tf.Variable([1.0, 2.0])
        tf.train.GradientDescentOptimizer(0.5).apply_gradients([(tf.constant([2.0, 2.0]), v)])
        np.testing.assert_allclose(v.numpy(), [0.0, 1.0])


def test_cond_and_while_loop_run_as_python_control_flow():
    with eager_mode():
        assert tf.cond(tf.constant(False), lambda: tf.constant(1), lambda: tf.constant(2)).numpy() == 2
        i, total = tf.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s * 2.0), (tf.constant(0), tf.constant(1.0)))
        assert (i.numpy(), total.numpy()) == (4, 16.0)
        assert tf.while_loop(lambda i: i < 100, lambda i: i + 1, [tf.constant(0)], maximum_iterations=3).numpy() == 3
        x = tf.constant(2.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.cond(x > 1.0, lambda: x * x, lambda: x)
        assert tape.gradient(y, x).numpy() == 4.0


def test_python_protocols():
    with eager_mode():
        rows = [row.numpy().tolist() for row in tf.constant([[1, 2], [3, 4]])]
        assert rows == [[1, 2], [3, 4]]
        assert len(tf.constant([1, 2, 3])) == 3
        np.testing.assert_array_equal(np.asarray(tf.constant([1.0, 2.0])) * 2, [2.0, 4.0])
        assert int(tf.constant(7)) == 7 and bool(tf.constant(True))
        assert f"{tf.constant(0.5):.2f}" == "0.50"


def test_a_session_made_in_eager_mode_has_an_empty_graph():
    with eager_mode():
        t = tf.constant(1.0)
        sess = tf.Session()
        assert sess.graph.get_operations() == []
        with pytest.raises(ValueError, match="not an element of this graph"):
            sess.run(t)
        sess.close()


def test_log_device_placement_prints_tfs_eager_line(capsys):
    with eager_mode(tf.ConfigProto(device_count={"CPU": 1, "GPU": 0}, log_device_placement=True)):
        tf.constant(1.0) + 1.0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"Executing op Const in device {CPU0}", f"Executing op Const in device {CPU0}",
                     f"Executing op Add in device {CPU0}"]


def test_minimize_with_global_step_and_slots_in_eager():
    with eager_mode():
        step = tf.train.get_or_create_global_step()
        v = tf.Variable(3.0)
        optimizer = tf.train.GradientDescentOptimizer(0.1)
        for _ in range(3):
            optimizer.minimize(lambda: v * v, global_step=step)
        assert step.numpy() == 3
        assert v.numpy() == pytest.approx(3.0 * 0.8 ** 3)  # v -= 0.1 * 2v, three times
        adam = tf.train.AdamOptimizer(0.1)
        adam.minimize(lambda: v * v)
        assert v.numpy() == pytest.approx(3.0 * 0.8 ** 3 - 0.1, rel=1e-5)  # Adam's first step moves lr
        assert sorted(x.name for x in adam.variables()) == ["Variable/Adam:0", "Variable/Adam_1:0",
                                                            "beta1_power:0", "beta2_power:0"]
