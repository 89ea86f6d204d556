"""tf.train.Supervisor as TF 1.x programs use it: managed_session initializes or restores from logdir,
saves a last checkpoint on exit, writes summaries, and ends quietly on OutOfRangeError."""

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import dfcore as tf


@pytest.fixture(autouse=True)
def _close_cached_writers():
    yield
    tf.summary.FileWriterCache.clear()


def _model():
    step = tf.train.get_or_create_global_step()
    w = tf.Variable([4.0], name="w")
    loss = tf.reduce_sum(tf.square(w))
    tf.summary.scalar("loss", loss)
    train = tf.train.GradientDescentOptimizer(0.25).minimize(loss, global_step=step)
    return step, w, train


def test_managed_session_trains_saves_and_resumes(tmp_path):
    with tf.Graph().as_default():
        step, w, train = _model()
        sv = tf.train.Supervisor(logdir=str(tmp_path), save_summaries_secs=0.05, save_model_secs=0)
        with sv.managed_session() as sess:
            for _ in range(3):
                sess.run(train)
            assert sess.run(step) == 3 and not sv.should_stop()
            sv.summary_computed(sess, sess.run(sv._scaffold.summary_op))
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-3")
    tf.summary.FileWriterCache.clear()
    accumulator = EventAccumulator(str(tmp_path))
    accumulator.Reload()
    assert 3 in [e.step for e in accumulator.Scalars("loss")]
    with tf.Graph().as_default():
        step, w, train = _model()
        sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0)
        with sv.managed_session() as sess:
            np.testing.assert_allclose(sess.run(w), [4.0 * 0.5 ** 3])  # w <- w - 0.25 * 2w, restored
            assert sess.run(step) == 3


def test_out_of_range_ends_the_block_quietly_and_errors_stop_it(tmp_path):
    with tf.Graph().as_default():
        _model()
        sv = tf.train.Supervisor(logdir=None)
        with sv.managed_session() as sess:
            raise tf.errors.OutOfRangeError(None, None, "input exhausted")
        assert sv.should_stop()
        sv = tf.train.Supervisor(logdir=None)
        with pytest.raises(ValueError, match="boom"):
            with sv.managed_session() as sess:
                raise ValueError("boom")
        assert sv.should_stop() and sv.summary_writer is None
        with pytest.raises(RuntimeError, match="requires a summary writer"):
            sv.summary_computed(sess, b"")
