"""Input pipelines on the wall clock: record_pipeline's lanes per map/prefetch thread, the IteratorGetNext
and feed_dict waits, buffer occupancy, and no recording or thread left behind."""

import threading

import numpy as np
import pytest

import dfcore as tf
from dfcore.data.pipeline_run import split_lane_device
from dfcore.data.pipeline_trace import record_pipeline
from tests.conftest import threads_left_running


def slow_model(parallel, prefetch, steps_data=64, batch=4):
    """A one-variable model reading batches of a map that sleeps 1 ms per element (a py_func)."""
    def decode(v):
        out = tf.py_func(lambda a: (threading.Event().wait(0.001), a.astype(np.float32))[1], [v], tf.float32)
        out.set_shape([])
        return out

    ds = tf.data.Dataset.range(steps_data).map(decode, parallel).batch(batch)
    if prefetch:
        ds = ds.prefetch(prefetch)
    x = ds.make_one_shot_iterator().get_next()
    w = tf.Variable(0.0)
    return tf.assign_add(w, tf.reduce_sum(x))


def lanes(run):
    return {split_lane_device(d.device)[1:] if split_lane_device(d.device) else d.device: d.node_stats
            for d in run.step_stats.dev_stats}


def test_parallel_map_and_prefetch_threads_get_a_lane_each():
    before = threading.enumerate()
    train = slow_model(parallel=2, prefetch=1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        run = record_pipeline(sess, train, steps=5)
    assert run.clock == "wall" and len(run.step_ends_us) == len(run.waits_us) == 5
    by_lane = lanes(run)
    assert {("ParallelMap", 0), ("ParallelMap", 1), ("Prefetch", 0)} <= set(by_lane)
    calls = [ns for key in (("ParallelMap", 0), ("ParallelMap", 1)) for ns in by_lane[key]]
    assert len(calls) >= 5 * 4  # every element of the 5 batches was mapped (some more ran ahead)
    assert all(ns.all_end_rel_micros >= 1000 and ns.sim_start_micros is None for ns in calls)
    host = by_lane["/job:localhost/replica:0/task:0/device:CPU:0"]
    assert [ns.op_type for ns in host] == ["IteratorGetNext"] * 5
    assert all(0 <= w <= e - s for w, s, e in zip(run.waits_us, run.step_starts_us, run.step_ends_us))
    assert list(run.occupancy) == ["Prefetch"] and all(0 <= level <= 1 for _, level in run.occupancy["Prefetch"])
    assert {level for _, level in run.occupancy["Prefetch"]} == {0, 1}
    assert 0.0 <= run.starved_fraction <= 1.0 and run.period_us > 0
    assert not threads_left_running(before)


def test_a_sequential_map_runs_on_one_lane_without_a_buffer():
    train = slow_model(parallel=None, prefetch=0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        run = record_pipeline(sess, train, steps=3)
    by_lane = lanes(run)
    assert len(by_lane[("Map", 0)]) == 12 and run.occupancy == {}
    assert not any(isinstance(key, tuple) and key[0] in ("ParallelMap", "Prefetch") for key in by_lane)


def test_a_feed_dict_loop_records_its_batch_preparation_as_the_wait():
    x = tf.placeholder(tf.float32, [None])
    total = tf.reduce_sum(x)

    def feed():
        threading.Event().wait(0.002)
        return {x: np.ones(4, np.float32)}

    with tf.Session() as sess:
        run = record_pipeline(sess, total, steps=3, feed_fn=feed, name="feed_dict")
    host = lanes(run)["/job:localhost/replica:0/task:0/device:CPU:0"]
    assert [ns.op_type for ns in host] == ["FeedDict"] * 3
    assert all(w >= 2000 for w in run.waits_us) and run.name == "feed_dict"


def test_one_recording_at_a_time_and_none_left_after_an_error():
    x = tf.placeholder(tf.float32, [])
    with tf.Session() as sess:
        def nested():
            record_pipeline(sess, x, steps=1, feed_fn=lambda: {x: 1.0})
            return {x: 1.0}

        with pytest.raises(RuntimeError, match="already recording"):
            record_pipeline(sess, x, steps=1, feed_fn=nested)
        with pytest.raises(tf.errors.InvalidArgumentError):
            record_pipeline(sess, x, steps=1)  # the placeholder is not fed: the step's error propagates
        assert record_pipeline(sess, x, steps=2, feed_fn=lambda: {x: 1.0}).makespan_us > 0
        with pytest.raises(ValueError, match="steps >= 1"):
            record_pipeline(sess, x, steps=0)


def test_queue_runner_threads_and_queue_levels_are_recorded():
    before = threading.enumerate()
    images = np.arange(40, dtype=np.float32).reshape(40, 1)
    image, = tf.train.slice_input_producer([images], shuffle=False)
    slow = tf.py_func(lambda a: (threading.Event().wait(0.001), a)[1], [image], tf.float32)
    slow.set_shape([1])
    batch = tf.train.batch([slow], 4, num_threads=2, capacity=8)
    total = tf.reduce_sum(batch)
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        run = record_pipeline(sess, total, steps=4)
        coord.request_stop()
        coord.join(threads)
    by_lane = lanes(run)
    assert {("QueueRunner", 0), ("QueueRunner", 1)} <= set(by_lane)  # one lane per enqueue thread
    host = by_lane["/job:localhost/replica:0/task:0/device:CPU:0"]
    assert [ns.op_type for ns in host] == ["QueueDequeueManyV2"] * 4  # the training side's wait
    queues = {name: max(level for _, level in series) for name, series in run.occupancy.items()}
    assert queues["batch/fifo_queue"] <= 8 and queues["input_producer/input_producer"] <= 32
    assert not threads_left_running(before)
