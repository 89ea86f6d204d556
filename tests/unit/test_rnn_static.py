"""tf.nn.static_rnn / static_bidirectional_rnn / bidirectional_dynamic_rnn and the DropoutWrapper and
ResidualWrapper cells.

Variable names and error messages were recorded with TensorFlow 2.21 (``tf.compat.v1`` with tf_keras,
``TF_USE_LEGACY_KERAS=1``) on the same graphs. Values are checked against ``dynamic_rnn`` (static_rnn is the
same cell unrolled) and against the cells run step by step.
"""

import numpy as np
import pytest

import dfcore as tf

RNG = np.random.default_rng(3)
X = RNG.standard_normal((2, 4, 3)).astype(np.float32)  # [batch, time, depth]
LENGTHS = np.array([4, 2], np.int32)


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        tf.set_random_seed(1)
        yield g


def _names():
    return [v.name for v in tf.global_variables()]


def test_static_rnn_equals_dynamic_rnn():
    x = tf.constant(X)
    dyn_out, dyn_state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(5), x, sequence_length=LENGTHS,
                                           dtype=tf.float32)
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        st_out, st_state = tf.nn.static_rnn(tf.nn.rnn_cell.BasicLSTMCell(5), tf.unstack(x, axis=1),
                                            sequence_length=LENGTHS, dtype=tf.float32)
    assert _names() == ["rnn/basic_lstm_cell/kernel:0", "rnn/basic_lstm_cell/bias:0"]  # as TF's static_rnn
    assert len(st_out) == 4 and st_out[0].shape.as_list() == [2, 5]
    assert isinstance(st_state, tf.nn.rnn_cell.LSTMStateTuple)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        dyn, static, ds, ss = sess.run([dyn_out, tf.stack(st_out, axis=1), dyn_state, st_state])
    np.testing.assert_allclose(static, dyn, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(static[1, 2:], 0)  # past its length: zeros
    np.testing.assert_allclose(ss.h, ds.h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ss.c, ds.c, rtol=1e-5, atol=1e-6)


def test_static_rnn_errors():
    x = tf.constant(X[:, 0])
    with pytest.raises(TypeError, match="Argument `inputs` must be a sequence"):
        tf.nn.static_rnn(tf.nn.rnn_cell.GRUCell(3), x, dtype=tf.float32)
    with pytest.raises(ValueError, match="Argument `inputs` must not be empty."):
        tf.nn.static_rnn(tf.nn.rnn_cell.GRUCell(3), [], dtype=tf.float32)
    with pytest.raises(ValueError, match="If no initial_state is provided, argument `dtype` must be specified"):
        tf.nn.static_rnn(tf.nn.rnn_cell.GRUCell(3), [x])
    for bad in (1.5, -0.1):
        with pytest.raises(ValueError, match="Parameter input_keep_prob must be between 0 and 1. Received"):
            tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(3), input_keep_prob=bad)


def test_bidirectional_rnns():
    x = tf.constant(X)
    steps = tf.unstack(x, axis=1)
    outputs, fw_state, bw_state = tf.nn.static_bidirectional_rnn(
        tf.nn.rnn_cell.BasicLSTMCell(5), tf.nn.rnn_cell.GRUCell(4), steps, dtype=tf.float32)
    # Recorded variable names (TF): fw/basic_lstm_cell, bw/gru_cell/{gates,candidate}.
    assert _names() == ["bidirectional_rnn/fw/basic_lstm_cell/kernel:0", "bidirectional_rnn/fw/basic_lstm_cell/bias:0",
                        "bidirectional_rnn/bw/gru_cell/gates/kernel:0", "bidirectional_rnn/bw/gru_cell/gates/bias:0",
                        "bidirectional_rnn/bw/gru_cell/candidate/kernel:0",
                        "bidirectional_rnn/bw/gru_cell/candidate/bias:0"]
    assert len(outputs) == 4 and outputs[0].shape.as_list() == [2, 9]
    with tf.variable_scope("bidirectional_rnn/bw", reuse=True):  # the backward cell, by hand over reversed time
        cell = tf.nn.rnn_cell.GRUCell(4)
        state = cell.zero_state(2, tf.float32)
        by_hand = []
        for step in steps[::-1]:
            out, state = cell(step, state)
            by_hand.append(out)
    (d_fw, d_bw), _ = tf.nn.bidirectional_dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(5), tf.nn.rnn_cell.BasicRNNCell(4),
                                                      x, dtype=tf.float32, scope="dyn")
    with tf.variable_scope("dyn", reuse=True):
        rev_out, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(4), tf.reverse(x, [1]), dtype=tf.float32,
                                       scope="bw")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, hand, final_bw, fw_out, bw_out, rev = sess.run([tf.stack(outputs, 1), tf.stack(by_hand[::-1], 1),
                                                             bw_state, d_fw, d_bw, rev_out])
    np.testing.assert_allclose(got[..., 5:], hand, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(final_bw, hand[:, 0], rtol=1e-5, atol=1e-6)
    assert fw_out.shape == (2, 4, 5) and bw_out.shape == (2, 4, 4)
    np.testing.assert_allclose(bw_out, rev[:, ::-1], rtol=1e-5, atol=1e-6)


def test_wrappers_in_multi_cell():
    steps = tf.unstack(tf.constant(X), axis=1)
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.ResidualWrapper(tf.nn.rnn_cell.GRUCell(3)),
                                        tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(3), input_keep_prob=0.9,
                                                                      state_keep_prob=0.8)])
    outputs, _ = tf.nn.static_rnn(cell, steps, dtype=tf.float32)
    assert _names() == [f"rnn/multi_rnn_cell/cell_{k}/gru_cell/{part}/{var}:0"  # recorded from TF
                        for k in range(2) for part in ("gates", "candidate") for var in ("kernel", "bias")]
    with tf.variable_scope("check"):  # the residual: output = GRU output + input
        gru = tf.nn.rnn_cell.GRUCell(3)
        plain, _ = gru(steps[0], gru.zero_state(2, tf.float32))
    with tf.variable_scope("check", reuse=True):
        wrapped, _ = tf.nn.rnn_cell.ResidualWrapper(tf.nn.rnn_cell.GRUCell(3))(steps[0], gru.zero_state(2, tf.float32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_plain, got_wrapped = sess.run([plain, wrapped])
        assert np.isfinite(sess.run(outputs[-1])).all()
    np.testing.assert_allclose(got_wrapped, got_plain + X[:, 0], rtol=1e-6)


def test_dropout_wrapper_drops_output_and_state_h_only():
    keep = 0.5
    x = tf.constant(np.ones((64, 3), np.float32))
    lstm = tf.nn.rnn_cell.BasicLSTMCell(16)
    state = tf.nn.rnn_cell.LSTMStateTuple(tf.ones([64, 16]), tf.ones([64, 16]))
    with tf.variable_scope("d"):
        out, new_state = tf.nn.rnn_cell.DropoutWrapper(lstm, output_keep_prob=keep, state_keep_prob=keep)(x, state)
    with tf.variable_scope("d", reuse=True):
        ref_out, ref_state = tf.nn.rnn_cell.BasicLSTMCell(16)(x, state)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, st, ref, rst = sess.run([out, new_state, ref_out, ref_state])
    for dropped, full in ((got, ref), (st.h, rst.h)):
        kept = dropped != 0
        assert 0.3 < kept.mean() < 0.7  # about half kept ...
        np.testing.assert_allclose(dropped[kept], full[kept] / keep, rtol=1e-5)  # ... and scaled by 1 / keep
    np.testing.assert_allclose(st.c, rst.c, rtol=1e-6)  # the LSTM memory is never dropped (TF's default filter)
