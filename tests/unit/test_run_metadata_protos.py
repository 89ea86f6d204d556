"""ConfigProto, RunOptions and RunMetadata are TF's messages: a traced step fills TF's StepStats and
partition graphs (serializable, wire-compatible), TF's classic Timeline idiom works on them, and dfcore's
own records of the step (simulated clock, transfers) are attached to the RunMetadata object (found with
tf.step_records) and go with it."""

import gc
import json
import weakref

import numpy as np
import pytest
from tensorboard.compat.proto import config_pb2, step_stats_pb2

import dfcore as tf
from dfcore.timeline import Timeline

TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, output_partition_graphs=True)


def _traced():
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [4, 4], name="x")
        a = tf.square(x, name="a")
    with tf.device("/gpu:0"):
        b = tf.matmul(a, a, name="b")
    metadata = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(b, {x: np.ones((4, 4), np.float32)}, options=TRACE, run_metadata=metadata)
    return metadata


def test_config_and_options_are_tfs_messages_and_serialize():
    config = tf.ConfigProto(device_count={"GPU": 2}, log_device_placement=True, device_filters=["/job:ps"],
                            gpu_options=tf.GPUOptions(allow_growth=True))
    assert isinstance(config, config_pb2.ConfigProto) and tf.RunOptions is config_pb2.RunOptions
    assert config_pb2.ConfigProto.FromString(config.SerializeToString()) == config
    assert tf.RunOptions.FULL_TRACE == 3 and tf.RunOptions().trace_level == tf.RunOptions.NO_TRACE
    with pytest.raises(ValueError, match='has no "no_such_field" field'):
        tf.ConfigProto(no_such_field=1)


def test_a_traced_step_fills_tfs_run_metadata():
    metadata = _traced()
    assert isinstance(metadata.step_stats, step_stats_pb2.StepStats)
    assert config_pb2.RunMetadata.FromString(metadata.SerializeToString()) == metadata
    devices = {d.device.rsplit("/", 1)[-1]: {n.node_name for n in d.node_stats} for d in metadata.step_stats.dev_stats}
    assert "b" in devices["device:GPU:0"] and "a" in devices["device:CPU:0"]
    assert [g.node[0].device.rsplit("/", 1)[-1] for g in metadata.partition_graphs] == ["device:CPU:0",
                                                                                         "device:GPU:0"]


def test_dfcores_records_of_the_step_sit_beside_the_message():
    metadata = _traced()
    records = tf.step_records(metadata)
    wall = {n.node_name: n for d in metadata.step_stats.dev_stats for n in d.node_stats}
    for dev in records.step_stats.dev_stats:
        for node in dev.node_stats:
            assert node.sim_end_micros >= node.sim_start_micros >= 0
            assert (node.all_start_micros, node.all_end_rel_micros) == (
                wall[node.node_name].all_start_micros, wall[node.node_name].all_end_rel_micros)
    assert [t.nbytes for t in records.transfers if t.src_device != t.dst_device] == [64, 64]  # a to GPU, b back
    with pytest.raises(TypeError, match="expects a RunMetadata"):
        tf.step_records(records)


def test_the_step_records_go_with_their_run_metadata():
    metadata = _traced()
    records = weakref.ref(tf.step_records(metadata))
    copied = tf.RunMetadata()
    copied.CopyFrom(metadata)
    assert tf.step_records(copied) is records() and copied == metadata
    del metadata, copied
    gc.collect()
    assert records() is None  # no table in any module kept them


def test_a_refill_without_trace_drops_the_records_and_tfs_bare_message_has_none():
    metadata = _traced()
    with tf.Session() as sess:
        sess.run(tf.constant(1.0), run_metadata=metadata)
    with pytest.raises(ValueError, match="no dfcore step records"):
        tf.step_records(metadata)
    assert not metadata.HasField("step_stats")
    with pytest.raises(ValueError, match="TF's RunMetadata message carries no dfcore step records"):
        tf.step_records(config_pb2.RunMetadata())


def test_tfs_timeline_idiom_works_on_the_message():
    metadata = _traced()
    trace = json.loads(Timeline(metadata.step_stats).generate_chrome_trace_format())
    ops = {e["args"]["name"] for e in trace["traceEvents"] if e.get("cat") == "Op"}
    assert {"a", "b"} <= ops


def test_build_cost_model_fills_tfs_cost_graph_from_the_simulated_clock():
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [64, 64], name="x")
    with tf.device("/gpu:0"):
        y = tf.matmul(x, x, name="y")
    feed = {x: np.ones((64, 64), np.float32)}
    metadata = tf.RunMetadata()
    config = tf.ConfigProto(graph_options=tf.GraphOptions(build_cost_model=1))
    with tf.Session(config=config) as sess:
        sess.run(y, feed, options=TRACE, run_metadata=metadata)
    by_id = {n.id: n for n in metadata.cost_graph.node}
    matmul = next(n for n in metadata.cost_graph.node if n.name == "y")
    sim = {n.node_name: n for d in tf.step_records(metadata).step_stats.dev_stats for n in d.node_stats}["y"]
    assert matmul.device.endswith("GPU:0") and matmul.compute_cost == sim.sim_end_micros - sim.sim_start_micros > 0
    assert [o.size for o in matmul.output_info] == [64 * 64 * 4]
    feeders = [by_id[i.preceding_node] for i in matmul.input_info]
    assert len(feeders) == 2 and feeders[0] == feeders[1] and feeders[0].device.endswith("GPU:0")  # x, received once
    with tf.Session() as sess:
        sess.run(y, feed, options=TRACE, run_metadata=metadata)
    assert not metadata.HasField("cost_graph")  # build_cost_model = 0, TF's default: no cost graph
