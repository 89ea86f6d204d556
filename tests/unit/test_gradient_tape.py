"""GradientTape: gradients of eager code from the registered gradient functions, checked against central
finite differences in float64 (the references), and against tf.gradients of the same graph.

Source of the rules: tensorflow/python/eager/backprop.py (persistent tapes, watch_accessed_variables,
stop_recording, nested tapes).
"""

import numpy as np
import pytest

import dfcore as tf
from dfcore.eager import eager_mode

FD_TOL = 1e-6


def numeric_grad(f, x0, delta=1e-6):
    """Central differences of scalar f (numpy in, float out) at x0 (float64)."""
    grad = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        up, down = x0.copy(), x0.copy()
        up[i] += delta
        down[i] -= delta
        grad[i] = (f(up) - f(down)) / (2 * delta)
    return grad


def tape_grad(fn, x0):
    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x).numpy()


OPS = {
    "tanh_sum": lambda x: tf.reduce_sum(tf.tanh(x) * x),
    "matmul": lambda x: tf.reduce_sum(tf.matmul(x, tf.transpose(x)) ** 2),
    "softmax": lambda x: tf.reduce_sum(tf.nn.softmax(x) * tf.constant(np.arange(12.0).reshape(3, 4))),
    "sigmoid_exp": lambda x: tf.reduce_mean(tf.sigmoid(x) + tf.exp(-x * x)),
    "relu_bias": lambda x: tf.reduce_sum(tf.nn.relu(tf.nn.bias_add(x, tf.constant([0.1, -0.2, 0.3, 0.0],
                                                                                     tf.float64))) ** 2),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_gradient_matches_finite_differences(name):
    rng = np.random.default_rng(3)
    x0 = rng.normal(size=(3, 4))
    fn = OPS[name]
    with eager_mode():
        got = tape_grad(fn, x0)
        want = numeric_grad(lambda v: float(fn(tf.constant(v)).numpy()), x0)
    np.testing.assert_allclose(got, want, atol=FD_TOL, rtol=1e-5)


def _mlp_loss(x, labels, w1, b1, w2, b2):
    hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
    logits = tf.matmul(hidden, w2) + b2
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def test_mlp_loss_gradients_match_finite_differences_and_tf_gradients():
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(5, 8))
    labels0 = np.array([0, 2, 1, 3, 2], np.int32)
    params0 = [rng.normal(size=(8, 6)) * 0.5, rng.normal(size=6) * 0.1, rng.normal(size=(6, 4)) * 0.5,
               rng.normal(size=4) * 0.1]
    with tf.Graph().as_default():
        params = [tf.constant(p) for p in params0]
        loss = _mlp_loss(tf.constant(x0), tf.constant(labels0), *params)
        with tf.Session() as sess:
            graph_grads = sess.run(tf.gradients(loss, params))
    with eager_mode():
        variables = [tf.Variable(p) for p in params0]
        with tf.GradientTape() as tape:  # variables are watched when read
            loss = _mlp_loss(tf.constant(x0), tf.constant(labels0), *variables)
        grads = tape.gradient(loss, variables)
        for i, (grad, graph_grad) in enumerate(zip(grads, graph_grads)):
            def f(value, i=i):
                args = [tf.constant(p) for p in params0]
                args[i] = tf.constant(value)
                return float(_mlp_loss(tf.constant(x0), tf.constant(labels0), *args).numpy())

            np.testing.assert_allclose(grad.numpy(), numeric_grad(f, params0[i]), atol=FD_TOL)
            np.testing.assert_allclose(grad.numpy(), graph_grad, rtol=1e-12, atol=1e-14)
        assert [v.name for v in tape.watched_variables()] == [v.name for v in variables]


def test_non_persistent_tape_gives_one_gradient():
    with eager_mode():
        x = tf.constant(3.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        assert tape.gradient(y, x).numpy() == 6.0
        with pytest.raises(RuntimeError, match="only be called once on non-persistent tapes"):
            tape.gradient(y, x)


def test_persistent_tape_and_structures():
    with eager_mode():
        x = tf.constant(3.0)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x
            z = y * y
        assert tape.gradient(z, x).numpy() == pytest.approx(4 * 27.0)
        dy, dz = tape.gradient([y, z], {"a": x, "b": x}).values()
        assert dy.numpy() == dz.numpy() == pytest.approx(6.0 + 108.0)


def test_unwatched_and_unconnected_give_none():
    with eager_mode():
        x, u = tf.constant(1.0), tf.constant(2.0)
        with tf.GradientTape() as tape:
            y = x * 2.0
        assert tape.gradient(y, x) is None
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * 2.0
        assert tape.gradient(y, [x, u])[1] is None


def test_watch_accessed_variables_off_and_trainable_false():
    with eager_mode():
        v = tf.Variable(2.0)
        frozen = tf.Variable(5.0, trainable=False)
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            y = v * frozen
        assert tape.gradient(y, v) is None
        with tf.GradientTape() as tape:
            y = v * frozen
        assert tape.gradient(y, [v, frozen])[1] is None
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(v)
            y = v * frozen
        assert tape.gradient(y, v).numpy() == 5.0


def test_stop_recording():
    with eager_mode():
        x = tf.constant(2.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            with tape.stop_recording():
                hidden = x * x
            y = x * 3.0 + hidden
        assert tape.gradient(y, x).numpy() == 3.0
        with pytest.raises(RuntimeError, match="not recording"):
            with tape.stop_recording():
                pass


def test_output_gradients():
    with eager_mode():
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        np.testing.assert_allclose(tape.gradient(y, x, output_gradients=tf.constant([1.0, 10.0])).numpy(),
                                   [2.0, 40.0])


def test_nested_tapes_give_second_derivatives():
    with eager_mode():
        x = tf.constant(1.5, tf.float64)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = x * x * x + tf.exp(x)
            dy = inner.gradient(y, x)
        d2y = outer.gradient(dy, x)
        assert dy.numpy() == pytest.approx(3 * 1.5 ** 2 + np.exp(1.5))
        assert d2y.numpy() == pytest.approx(6 * 1.5 + np.exp(1.5))


def test_gradient_of_a_variable_updated_between_steps():
    with eager_mode():
        v = tf.Variable(1.0)
        for expected in (2.0, 4.0):
            with tf.GradientTape() as tape:
                y = v * v
            assert tape.gradient(y, v).numpy() == expected
            v.assign(2.0)


def test_in_graph_mode_the_tape_builds_the_backward_graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2])
        v = tf.Variable([1.0, 3.0])
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(x * x * v)
        dx, dv = tape.gradient(y, [x, v])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got_dx, got_dv = sess.run([dx, dv], {x: [2.0, 5.0]})
    np.testing.assert_allclose(got_dx, [4.0, 30.0])  # 2 x v
    np.testing.assert_allclose(got_dv, [4.0, 25.0])  # x^2
