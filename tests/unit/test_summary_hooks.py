"""MonitoredTrainingSession writes TensorBoard summaries as TF 1.x does: SummarySaverHook at TF's steps with
the values of plain gradient descent, StepCounterHook's global_step/sec, a SessionLog START, the graph and
a SessionLog CHECKPOINT per save from CheckpointSaverHook; ProfilerHook traces only its trigger steps into
timeline-<step>.json Chrome traces and step_<step> run metadata; bad hook arguments are TF's ValueErrors."""

import json
import os

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

import dfcore as tf


@pytest.fixture(autouse=True)
def _close_cached_writers():
    yield
    tf.summary.FileWriterCache.clear()


def _train(logdir, **kwargs):
    step = tf.train.get_or_create_global_step()
    w = tf.Variable([5.0], name="w")
    loss = tf.reduce_sum(tf.square(w))
    tf.summary.scalar("loss", loss)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(logdir), hooks=[tf.train.StopAtStepHook(last_step=7)],
                                           **kwargs) as sess:
        while not sess.should_stop():
            sess.run(train)
    tf.summary.FileWriterCache.clear()
    accumulator = EventAccumulator(str(logdir))
    accumulator.Reload()
    return accumulator


def test_summaries_are_written_every_n_steps_at_the_global_step(tmp_path):
    accumulator = _train(tmp_path, save_summaries_steps=2, log_step_count_steps=3)
    events = accumulator.Scalars("loss")
    assert [e.step for e in events] == [1, 3, 5, 7]  # TF: the first run, then every 2 steps of the global step
    w = 5.0 * 0.8 ** np.array([0, 2, 4, 6])  # w <- w - 0.1 * 2w; each summary saw w before its run's update
    np.testing.assert_allclose([e.value for e in events], w ** 2, rtol=1e-5)
    rates = accumulator.Scalars("global_step/sec")
    assert [e.step for e in rates] == [4, 7] and all(e.value > 0 for e in rates)


def test_the_checkpoint_saver_writes_the_graph_and_a_checkpoint_event_per_save(tmp_path):
    accumulator = _train(tmp_path, save_checkpoint_steps=5)
    assert accumulator.Tags()["graph"]  # TensorBoard's Graphs dashboard, from CheckpointSaverHook as in TF
    assert {"w", "global_step"} <= {node.name for node in accumulator.Graph().node}
    assert (tmp_path / "graph.pbtxt").exists()
    (event_file,) = [name for name in os.listdir(tmp_path) if name.startswith("events.out.tfevents")]
    saves = [(event.step, event.session_log.checkpoint_path) for event in EventFileLoader(
        str(tmp_path / event_file)).Load() if event.session_log.status == tf.SessionLog.CHECKPOINT]
    assert saves == [(step, str(tmp_path / "model.ckpt")) for step in (0, 5, 7)]


def test_no_summary_dir_means_no_summary_hooks(tmp_path):
    step = tf.train.get_or_create_global_step()
    train = tf.assign_add(step, 1)
    with tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(last_step=2)]) as sess:
        assert not any(isinstance(h, (tf.train.SummarySaverHook, tf.train.StepCounterHook)) for h in sess._hooks)
        while not sess.should_stop():
            sess.run(train)


def test_bad_hook_arguments_are_tfs_value_errors(tmp_path):
    summary = tf.summary.scalar("x", tf.constant(1.0))
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        tf.train.SummarySaverHook(save_steps=1, output_dir=str(tmp_path))
    with pytest.raises(ValueError, match="exactly one of every_steps and every_secs"):
        tf.train.SummarySaverHook(save_steps=1, save_secs=1, output_dir=str(tmp_path), summary_op=summary)
    with pytest.raises(ValueError, match="exactly one of every_n_steps and every_n_secs"):
        tf.train.StepCounterHook(every_n_steps=None, output_dir=str(tmp_path))
    with pytest.raises(RuntimeError, match="Global step should be created to use SummarySaverHook"):
        tf.train.SummarySaverHook(save_steps=1, output_dir=str(tmp_path), summary_op=summary).begin()


class _TraceLevels(tf.train.SessionRunHook):
    """Records the trace level of every call's merged RunOptions."""

    def __init__(self):
        self.levels = []

    def after_run(self, run_context, run_values):
        self.levels.append(run_values.options.trace_level)


def test_profiler_hook_traces_every_n_steps_into_chrome_traces_and_run_metadata(tmp_path):
    step = tf.train.get_or_create_global_step()
    with tf.device("/gpu:0"):
        w = tf.Variable([5.0], name="w")
        loss = tf.reduce_sum(tf.square(w))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    levels = _TraceLevels()
    hooks = [tf.train.ProfilerHook(save_steps=3, output_dir=str(tmp_path), show_dataflow=False, show_memory=True),
             tf.train.StopAtStepHook(last_step=10), levels]
    with tf.train.MonitoredSession(hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train)
    tf.summary.FileWriterCache.clear()
    full = tf.RunOptions.FULL_TRACE
    assert levels.levels == [full if call in (3, 6, 9) else 0 for call in range(1, 11)]  # TF: never the first call
    assert sorted(p.name for p in tmp_path.glob("timeline-*.json")) == [
        "timeline-3.json", "timeline-6.json", "timeline-9.json"]
    trace = json.loads((tmp_path / "timeline-6.json").read_text())
    processes = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert any(name.endswith("GPU:0 Compute") for name in processes)
    assert any(name.endswith("GPU:0 Tensors") for name in processes)  # show_memory
    assert {e["args"]["op"] for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "Op"} >= {
        "ApplyGradientDescent"}
    assert not any(e.get("cat") == "DataFlow" for e in trace["traceEvents"])  # show_dataflow=False
    accumulator = EventAccumulator(str(tmp_path))
    accumulator.Reload()
    assert sorted(accumulator.Tags()["run_metadata"]) == ["step_3", "step_6", "step_9"]
    assert accumulator.RunMetadata("step_9").step_stats.dev_stats


def test_profiler_hook_checks_its_arguments_and_the_global_step(tmp_path):
    with pytest.raises(ValueError, match="exactly one of every_steps and every_secs"):
        tf.train.ProfilerHook(output_dir=str(tmp_path))
    with pytest.raises(ValueError, match="exactly one of every_steps and every_secs"):
        tf.train.ProfilerHook(save_steps=1, save_secs=1, output_dir=str(tmp_path))
    with pytest.raises(RuntimeError, match="Global step should be created to use ProfilerHook"):
        tf.train.ProfilerHook(save_steps=1, output_dir=str(tmp_path)).begin()
