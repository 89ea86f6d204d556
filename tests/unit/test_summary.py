"""tf.summary ops and FileWriter write TF's event files: read back with TensorBoard's own EventAccumulator,
values checked against numpy (scalars, histogram moments and bucket counts, PNG pixels with TF's scaling)."""

import io

import numpy as np
import pytest
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import dfcore as tf


def _accumulator(logdir):
    accumulator = EventAccumulator(str(logdir), size_guidance={"images": 0, "histograms": 0, "tensors": 0})
    accumulator.Reload()
    return accumulator


def _program():
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        w = tf.Variable(tf.reshape(tf.range(8, dtype=tf.float32), [4, 2]) - 3.5, name="w")
    with tf.device("/gpu:0"):
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w)), name="loss")
    return x, w, loss


def test_scalars_histograms_images_and_text_reach_tensorboard(tmp_path):
    x, w, loss = _program()
    with tf.name_scope("train"):
        scalar = tf.summary.scalar("loss", loss)
    histogram = tf.summary.histogram("weights", w)
    tf.summary.image("inputs", tf.reshape(x, [-1, 2, 2, 1]), max_outputs=2)
    tf.summary.text("note", tf.constant("**dfcore**"))
    merged = tf.summary.merge_all()
    assert (scalar.op.name, histogram.op.name, merged.op.name) == ("train/loss", "weights", "Merge/MergeSummary")
    assert tf.summary.merge([scalar], name="named").op.name == "named/named"  # TF's merge_summary(name=name)
    assert tf.get_collection(tf.GraphKeys.SUMMARIES)[0] is scalar
    feed = {x: np.arange(12, dtype=np.float32).reshape(3, 4) - 2.0}
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path), sess.graph) as writer:
        sess.run(tf.global_variables_initializer())
        for step in range(3):
            summary, loss_value, w_value = sess.run([merged, loss, w], feed)
            writer.add_summary(summary, global_step=step)
    accumulator = _accumulator(tmp_path)
    assert [e.step for e in accumulator.Scalars("train/loss")] == [0, 1, 2]
    assert accumulator.Scalars("train/loss")[0].value == pytest.approx(float(loss_value))
    histo = accumulator.Histograms("weights")[0].histogram_value
    flat = w_value.ravel().astype(np.float64)
    assert (histo.min, histo.max, histo.num, histo.sum, histo.sum_squares) == pytest.approx(
        (flat.min(), flat.max(), flat.size, flat.sum(), (flat ** 2).sum()))
    assert sum(histo.bucket) == flat.size and list(histo.bucket_limit) == sorted(histo.bucket_limit)
    image = accumulator.Images("inputs/image/1")[0]
    pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image_string)))
    second = feed[x][1].reshape(2, 2)  # all >= 0: scaled so that the largest of this image is 255
    np.testing.assert_array_equal(pixels, np.round(second * 255.0 / np.abs(second).max()).astype(np.uint8))
    assert accumulator.Tensors("note")[0].tensor_proto.string_val == [b"**dfcore**"]


def test_the_graph_and_run_metadata_carry_devices_compute_time_and_memory(tmp_path):
    x, w, loss = _program()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        metadata = tf.RunMetadata()
        sess.run(loss, {x: np.ones((2, 4), np.float32)},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
        with tf.summary.FileWriter(str(tmp_path), sess.graph) as writer:
            writer.add_run_metadata(metadata, "step0", global_step=0)
    accumulator = _accumulator(tmp_path)
    graph = accumulator.Graph()
    devices = {n.name: n.device for n in graph.node}
    assert devices["x"] == "/device:CPU:0" and devices["loss"] == "/device:GPU:0"
    assert accumulator.RunMetadata("step0").step_stats.dev_stats
    stats = {d.device.rsplit("/", 1)[-1]: {n.node_name: n for n in d.node_stats}
             for d in accumulator.RunMetadata("step0").step_stats.dev_stats}
    matmul = stats["device:GPU:0"]["MatMul"]
    assert matmul.memory[0].allocator_name == "GPU_0_bfc" and matmul.memory[0].total_bytes == 2 * 2 * 4
    assert matmul.output[0].tensor_description.shape.unknown_rank  # TensorBoard reads every output's shape
    assert matmul.all_end_rel_micros >= 0 and matmul.timeline_label.startswith("MatMul = MatMul(")


def test_merging_two_summaries_with_one_tag_fails_at_run_time():
    a = tf.summary.scalar("same", tf.constant(1.0), collections=[])
    b = tf.summary.scalar("same", tf.constant(2.0), collections=[], family="x")
    c = tf.Summary(value=[tf.Summary.Value(tag="same", simple_value=3.0)]).SerializeToString()
    assert b.op.name == "x/same" and tf.summary.merge_all() is None
    with tf.Session() as sess:
        assert len(tf.Summary.FromString(sess.run(tf.summary.merge([a, b]))).value) == 2
        with pytest.raises(tf.errors.InvalidArgumentError, match="Duplicate tag same found in summary inputs"):
            sess.run(tf.summary.merge([a, tf.constant(c)]))


def test_bad_summary_inputs_are_typed_errors_naming_the_tag():
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Nan in summary histogram for: h"):
            sess.run(tf.summary.histogram("h", tf.constant([1.0, np.nan])))
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"not the same shape: \[\] != \[2\]"):
            sess.run(tf.summary.scalar("s", tf.constant([1.0, 2.0])))
        with pytest.raises(tf.errors.InvalidArgumentError, match="4-D with last dim 1, 3, or 4"):
            sess.run(tf.summary.image("i", tf.zeros([1, 2, 2, 2])))


def test_an_event_directory_that_cannot_be_written_is_a_typed_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(tf.errors.OpError, match="Cannot write event files to .*file/logs"):
        tf.summary.FileWriter(str(blocker / "logs"))
    writer = tf.summary.FileWriter(str(tmp_path / "ok"))
    writer.close()
    with pytest.raises(RuntimeError, match="FileWriter is closed"):
        writer.add_summary(tf.Summary())
    with tf.summary.FileWriter(str(tmp_path / "ok2")) as other, pytest.raises(TypeError, match="expects a Summary"):
        other.add_summary(3.0)


def test_illegal_summary_names_are_cleaned_as_tf_does():
    """A variable's name (``W1:0``) as a summary name: recorded with TF 2.21 (``tf.compat.v1.summary``), the ops
    are named ``W1_0`` and ``a_b_c`` and so are the tags."""
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="W1")
        hist, scalar = tf.summary.histogram(v.name, v), tf.summary.scalar("/a b:c", v)
        assert (hist.op.name, scalar.op.name) == ("W1_0", "a_b_c")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            merged = tf.Summary.FromString(sess.run(tf.summary.merge([hist, scalar])))
    assert [value.tag for value in merged.value] == ["W1_0", "a_b_c"]
