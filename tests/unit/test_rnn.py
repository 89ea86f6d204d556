"""tf.nn.dynamic_rnn with BasicRNNCell and BasicLSTMCell: TF's variable names, results against a numpy
unrolled loop, sequence_length masking, and gradients (inputs and weights) against finite differences."""

import numpy as np
import pytest
from gradcheck import GRAD_TOL, grad_error

import dfcore as tf


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _numpy_rnn(x, kernel, bias, lstm, lengths=None, forget_bias=1.0):
    """The cells' equations unrolled in numpy: returns (outputs [batch, time, units], final state)."""
    batch, steps, _ = x.shape
    units = bias.shape[0] // (4 if lstm else 1)
    h, c = np.zeros((batch, units)), np.zeros((batch, units))
    outputs = np.zeros((batch, steps, units))
    for t in range(steps):
        z = np.concatenate([x[:, t], h], 1) @ kernel + bias
        if lstm:
            i, j, f, o = np.split(z, 4, axis=1)
            new_c = c * _sigmoid(f + forget_bias) + _sigmoid(i) * np.tanh(j)
            new_h = np.tanh(new_c) * _sigmoid(o)
        else:
            new_c, new_h = c, np.tanh(z)
        live = np.ones(batch, bool) if lengths is None else t < np.asarray(lengths)
        h = np.where(live[:, None], new_h, h)
        c = np.where(live[:, None], new_c, c)
        outputs[:, t] = np.where(live[:, None], new_h, 0.0)
    return outputs, (c, h)


@pytest.mark.parametrize("lstm", [False, True], ids=["basic_rnn", "basic_lstm"])
def test_dynamic_rnn_matches_a_numpy_unrolled_loop(lstm):
    x = tf.placeholder(tf.float64, [3, 5, 2], name="x")
    cell = tf.nn.rnn_cell.BasicLSTMCell(4) if lstm else tf.nn.rnn_cell.BasicRNNCell(4)
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=[5, 2, 4], dtype=tf.float64)
    name = "basic_lstm_cell" if lstm else "basic_rnn_cell"
    assert [v.name for v in tf.trainable_variables()] == [f"rnn/{name}/kernel:0", f"rnn/{name}/bias:0"]
    assert tf.trainable_variables()[0].shape.as_list() == [2 + 4, 16 if lstm else 4]
    assert outputs.shape.as_list() == [3, 5, 4]
    value = np.random.RandomState(1).standard_normal((3, 5, 2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kernel, bias = sess.run(tf.trainable_variables())
        sess.run(tf.assign(tf.trainable_variables()[1], np.linspace(-0.5, 0.5, bias.shape[0])))
        kernel, bias = sess.run(tf.trainable_variables())
        got_outputs, got_state = sess.run([outputs, state], {x: value})
    expected_outputs, (c, h) = _numpy_rnn(value, kernel, bias, lstm, lengths=[5, 2, 4])
    np.testing.assert_allclose(got_outputs, expected_outputs, rtol=1e-10)
    if lstm:
        np.testing.assert_allclose(got_state.c, c, rtol=1e-10)
        np.testing.assert_allclose(got_state.h, h, rtol=1e-10)
    else:
        np.testing.assert_allclose(got_state, h, rtol=1e-10)


@pytest.mark.parametrize("lstm", [False, True], ids=["basic_rnn", "basic_lstm"])
def test_dynamic_rnn_gradient_wrt_inputs_matches_finite_differences(lstm):
    x = tf.placeholder(tf.float64, [2, 4, 3], name="x")
    cell = tf.nn.rnn_cell.BasicLSTMCell(3) if lstm else tf.nn.rnn_cell.BasicRNNCell(3)
    outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert grad_error(x, outputs, np.random.RandomState(2).standard_normal((2, 4, 3))) < GRAD_TOL


def test_dynamic_rnn_gradient_wrt_the_weights_matches_finite_differences():
    x = tf.constant(np.random.RandomState(3).standard_normal((2, 4, 3)))
    outputs, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(3), x, dtype=tf.float64)
    loss = tf.reduce_sum(outputs * outputs) + tf.reduce_sum(state.c)
    kernel, bias = tf.trainable_variables()
    grad_kernel, grad_bias = tf.gradients(loss, [kernel, bias])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        k0, b0, gk, gb = sess.run([kernel, bias, grad_kernel, grad_bias])
        eps = 1e-6
        for variable, start, grad, index in [(kernel, k0, gk, (1, 5)), (kernel, k0, gk, (4, 10)),
                                             (bias, b0, gb, (7,)), (bias, b0, gb, (0,))]:
            losses = []
            for sign in (1, -1):
                value = start.copy()
                value[index] += sign * eps
                variable.load(value, sess)
                losses.append(sess.run(loss))
            variable.load(start, sess)
            assert abs((losses[0] - losses[1]) / (2 * eps) - grad[index]) < 1e-6


def test_dynamic_rnn_needs_a_dtype_without_an_initial_state():
    with pytest.raises(ValueError, match="If there is no initial_state, you must give a dtype."):
        tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(2), tf.zeros([1, 2, 3]))


def test_an_lstm_learns_to_sum_a_sequence_with_adam():
    """A classic TF1 program: dynamic_rnn + dense + AdamOptimizer.minimize; the loss falls a hundredfold."""
    rs = np.random.RandomState(0)
    inputs = rs.standard_normal((32, 6, 2))
    targets = inputs[:, :, 0].sum(1, keepdims=True)
    x = tf.placeholder(tf.float32, [None, 6, 2])
    y = tf.placeholder(tf.float32, [None, 1])
    _, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(8), x, dtype=tf.float32)
    loss = tf.reduce_mean(tf.square(tf.layers.dense(state.h, 1) - y))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    tf.set_random_seed(0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: inputs, y: targets})
        for _ in range(60):
            sess.run(train, {x: inputs, y: targets})
        assert sess.run(loss, {x: inputs, y: targets}) < first / 100


def test_gru_cell_matches_numpy_and_tfs_variable_names():
    x = tf.placeholder(tf.float64, [2, 4, 3], name="x")
    outputs, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(5), x, dtype=tf.float64)
    names = [v.name for v in tf.trainable_variables()]
    assert names == ["rnn/gru_cell/gates/kernel:0", "rnn/gru_cell/gates/bias:0", "rnn/gru_cell/candidate/kernel:0",
                     "rnn/gru_cell/candidate/bias:0"]
    value = np.random.RandomState(4).standard_normal((2, 4, 3))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        gk, gb, ck, cb = sess.run(tf.trainable_variables())
        got, final = sess.run([outputs, state], {x: value})
    np.testing.assert_array_equal(gb, np.ones(10))  # TF's gate bias starts at 1
    h = np.zeros((2, 5))
    for t in range(4):
        r, u = np.split(_sigmoid(np.concatenate([value[:, t], h], 1) @ gk + gb), 2, axis=1)
        c = np.tanh(np.concatenate([value[:, t], r * h], 1) @ ck + cb)
        h = u * h + (1 - u) * c
        np.testing.assert_allclose(got[:, t], h, rtol=1e-10)
    np.testing.assert_allclose(final, h, rtol=1e-10)


def test_multi_rnn_cell_stacks_cells_with_tfs_variable_names():
    x = tf.placeholder(tf.float64, [2, 3, 2], name="x")
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicRNNCell(4), tf.nn.rnn_cell.LSTMCell(3)])
    outputs, (first, second) = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)
    assert [v.name for v in tf.trainable_variables()] == [
        "rnn/multi_rnn_cell/cell_0/basic_rnn_cell/kernel:0", "rnn/multi_rnn_cell/cell_0/basic_rnn_cell/bias:0",
        "rnn/multi_rnn_cell/cell_1/lstm_cell/kernel:0", "rnn/multi_rnn_cell/cell_1/lstm_cell/bias:0"]
    value = np.random.RandomState(5).standard_normal((2, 3, 2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        k0, b0, k1, b1 = sess.run(tf.trainable_variables())
        got, got_first, got_second = sess.run([outputs, first, second], {x: value})
    hidden, _ = _numpy_rnn(value, k0, b0, lstm=False)
    expected, (c, h) = _numpy_rnn(hidden, k1, b1, lstm=True)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    np.testing.assert_allclose(got_first, hidden[:, -1], rtol=1e-10)
    np.testing.assert_allclose(got_second.c, c, rtol=1e-10)
