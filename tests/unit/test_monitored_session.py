"""MonitoredTrainingSession and the stock hooks, as TF 1.x's monitored_session.py and
basic_session_run_hooks.py behave: the "Distributed TensorFlow" how-to's training loop runs unchanged.
"""

import logging
import os
import re

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors
from dfcore.framework import registry

_ABORT = {"remaining": 0}


@registry.RegisterShape("MonitoredSessionTestAbort")
def _abort_shape(op):
    return [(op.inputs[0].dtype, op.inputs[0].shape)]


@registry.RegisterKernel("MonitoredSessionTestAbort")
def _abort_kernel(op):
    def compute(x):  # a task that restarted: the step fails with AbortedError, the next session works
        if _ABORT["remaining"] > 0:
            _ABORT["remaining"] -= 1
            raise errors.AbortedError(None, op, "the ps task restarted")
        return x

    return compute


registry.mark_stateful("MonitoredSessionTestAbort")


@registry.RegisterGradient("MonitoredSessionTestAbort")
def _abort_gradient(op, grad):
    return [grad]


def build_model(abort_point=False):
    """Linear regression y = 3x + 1 with SGD; returns (train_op, loss, global_step)."""
    global_step = tf.train.get_or_create_global_step()
    rng = np.random.default_rng(0)
    x_data = rng.standard_normal((64, 1)).astype(np.float32)
    x = tf.constant(x_data)
    y = tf.constant(3.0 * x_data + 1.0)
    w = tf.get_variable("w", [1, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    prediction = tf.matmul(x, w) + b
    if abort_point:
        prediction = tf.get_default_graph().create_op("MonitoredSessionTestAbort", [prediction]).outputs[0]
    loss = tf.reduce_mean(tf.square(prediction - y))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    return train_op, loss, global_step


def checkpoint_steps(directory):
    state = tf.train.get_checkpoint_state(str(directory))
    return [int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths]


def test_the_howto_loop_trains_to_the_last_step_and_checkpoints_at_start_every_n_and_end(tmp_path):
    with tf.Graph().as_default():
        train_op, loss, global_step = build_model()
        final = tf.train.FinalOpsHook(loss)
        hooks = [tf.train.StopAtStepHook(last_step=50), final]
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=hooks,
                                               save_checkpoint_steps=20) as sess:
            first = sess.run(loss)
            while not sess.should_stop():
                sess.run(train_op)
        last = final.final_ops_values
    assert checkpoint_steps(tmp_path) == [0, 20, 40, 50]
    assert last < 0.01 * first
    with tf.Graph().as_default():  # the program run again goes on from its checkpoint
        train_op, loss, global_step = build_model()
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_steps=20,
                                               hooks=[tf.train.StopAtStepHook(num_steps=15)]) as sess:
            assert sess.run(global_step) == 50
            assert sess.run(loss) == pytest.approx(last)
            while not sess.should_stop():
                sess.run(train_op)
    # TF's SessionManager hands the restored directory's checkpoints to the saver (recover_last_checkpoints):
    # they stay listed and count against max_to_keep (5); 50 is saved again at the start
    assert checkpoint_steps(tmp_path) == [0, 20, 40, 50, 65]


class RecordingHook(tf.train.SessionRunHook):
    def __init__(self, tensor, stop_after):
        self.tensor, self.stop_after, self.calls, self.seen = tensor, stop_after, [], []

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")

    def before_run(self, run_context):
        self.calls.append("before_run")
        return tf.train.SessionRunArgs(self.tensor)

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.seen.append(int(run_values.results))
        if len(self.seen) == self.stop_after:
            run_context.request_stop()

    def end(self, session):
        self.calls.append("end")


def test_hooks_are_called_in_tfs_order_with_their_fetches_and_can_stop_training():
    with tf.Graph().as_default():
        train_op, _, global_step = build_model()
        hook = RecordingHook(global_step, stop_after=3)
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            while not sess.should_stop():
                sess.run(train_op)
            with pytest.raises(RuntimeError, match="Run called even after should_stop requested."):
                sess.run(train_op)
    assert hook.calls == ["begin", "after_create_session"] + ["before_run", "after_run"] * 3 + ["end"]
    # the hook's fetch runs in the same call as the update, before or after it lands (as in TF)
    assert hook.seen in ([0, 1, 2], [1, 2, 3])


def test_a_tensor_fed_by_a_hook_and_the_caller_is_refused():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        y = x * 2.0
        tf.train.get_or_create_global_step()
        with tf.train.MonitoredSession(hooks=[tf.train.FeedFnHook(lambda: {x: 1.0})]) as sess:
            assert sess.run(y) == 2.0
            with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user."):
                sess.run(y, {x: 5.0})


def test_out_of_range_ends_the_with_block_quietly_and_runs_the_end_hooks():
    final = None
    with tf.Graph().as_default():
        queue = tf.FIFOQueue(3, tf.float32)
        enqueue = queue.enqueue_many([[1.0, 2.0]])
        close = queue.close()
        taken = queue.dequeue()
        global_step = tf.train.get_or_create_global_step()
        final = tf.train.FinalOpsHook(global_step)
        values = []
        with tf.train.MonitoredSession(hooks=[final]) as sess:
            sess.run([enqueue, close])
            while True:
                values.append(sess.run(taken))
    assert values == [1.0, 2.0] and final.final_ops_values == 0


def test_an_aborted_step_recreates_the_session_from_the_latest_checkpoint(tmp_path):
    with tf.Graph().as_default():
        train_op, _, global_step = build_model(abort_point=True)
        steps = []
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_steps=10,
                                               hooks=[tf.train.StopAtStepHook(last_step=30)]) as sess:
            while not sess.should_stop():
                if len(steps) == 15:
                    _ABORT["remaining"] = 1  # the 16th call fails once, at global step 15
                steps.append(int(sess.run([train_op, global_step])[1]))
    assert steps[:15] == list(range(1, 16))
    assert steps[15] == 11  # the call ran again in a new session restored from the step-10 checkpoint
    assert steps[-1] == 30 and _ABORT["remaining"] == 0


def test_a_worker_waits_for_the_chief_and_gives_up_after_max_wait_secs():
    with tf.Graph().as_default():
        build_model()
        with pytest.raises(errors.DeadlineExceededError, match="Session was not ready after waiting 0.2 secs."):
            tf.train.MonitoredTrainingSession(is_chief=False, max_wait_secs=0.2)


def test_workers_on_a_cluster_share_what_the_chief_initialized():
    spec = tf.train.ClusterSpec({"ps": ["ps0:2222"], "worker": ["w0:2222", "w1:2222"]})
    config = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0})
    servers = [tf.train.Server(spec, job, i, config=config) for job, i in (("ps", 0), ("worker", 0), ("worker", 1))]
    try:
        results = {}
        for index in (0, 1):
            with tf.Graph().as_default():
                with tf.device(tf.train.replica_device_setter(cluster=spec, worker_device=f"/job:worker/task:{index}")):
                    train_op, _, global_step = build_model()
                final = tf.train.FinalOpsHook(global_step)
                with tf.train.MonitoredTrainingSession(master=servers[1 + index].target, is_chief=index == 0,
                                                       hooks=[tf.train.StopAtStepHook(num_steps=5), final]) as sess:
                    while not sess.should_stop():
                        sess.run(train_op)
                results[index] = final.final_ops_values
        assert results == {0: 5, 1: 10}  # worker 1 found the chief's variables and went on from them
    finally:
        for server in servers:
            server.stop()


def test_nan_loss_fails_training_and_logging_hook_logs(caplog):
    with tf.Graph().as_default():
        tf.train.get_or_create_global_step()
        loss = tf.constant(float("nan"))
        with caplog.at_level(logging.INFO, logger="dfcore.train"):
            with tf.train.MonitoredSession(hooks=[tf.train.LoggingTensorHook({"loss": loss}, every_n_iter=1)]) as sess:
                sess.run(loss)
        assert "loss = nan" in caplog.text
        with tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(loss)]) as sess:
            with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training."):
                sess.run(loss)


def test_logging_hook_writes_tfs_line_sorted_tags_then_seconds_since_the_last(caplog):
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        train_op = tf.assign_add(step, 1)
        hook = tf.train.LoggingTensorHook({"zeta": tf.constant(1.5), "alpha": tf.constant([0.000001, 2.0])},
                                          every_n_iter=2)
        with caplog.at_level(logging.INFO, logger="dfcore.train"):
            with tf.train.MonitoredSession(hooks=[hook]) as sess:
                for _ in range(3):
                    sess.run(train_op)
    lines = [record.getMessage() for record in caplog.records if "zeta" in record.getMessage()]
    assert lines[0] == "alpha = [0.000001 2.      ], zeta = 1.5"  # numpy without scientific notation, as TF
    assert re.fullmatch(r"alpha = \[0\.000001 2\.      \], zeta = 1\.5 \([0-9]+\.[0-9]{3} sec\)", lines[1])
    assert len(lines) == 2


def test_hook_arguments_are_checked_with_tfs_messages():
    with pytest.raises(ValueError, match="One of num_steps or last_step must be specified."):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError, match="Only one of num_steps or last_step can be specified."):
        tf.train.StopAtStepHook(num_steps=1, last_step=2)
    with pytest.raises(ValueError, match="exactly one of every_steps and every_secs should be provided."):
        tf.train.CheckpointSaverHook(os.curdir)
    with tf.Graph().as_default():
        with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStepHook."):
            tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(num_steps=1)])
