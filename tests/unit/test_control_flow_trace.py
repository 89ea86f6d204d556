"""The simulated clock's replay of a traced loop: each op of each iteration costs what the same op costs outside
a loop (an output feeding two inputs of one op, as ``matmul(m, m)``, gives both input shapes), and
``parallel_iterations`` bounds the iterations in flight on each device as in TF's executor (iteration k starts
when iteration k - P is done: ``executor.cc``, ``IterationState``; Yu et al., EuroSys 2018, §4.1)."""

import numpy as np
import pytest

import dfcore as tf
from dfcore.runtime.step_stats import parse_timeline_label

TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
N = 96
ELEMS = np.random.RandomState(0).rand(5, N, N).astype(np.float32)


def _traced(fetch, config=None):
    with tf.Session(config=config) as sess:
        meta = tf.RunMetadata()
        value = sess.run(fetch, options=TRACE, run_metadata=meta)
    return value, tf.step_records(meta).step_stats


def _runs(stats, name):
    return [(dev.device, ns) for dev in stats.dev_stats for ns in dev.node_stats if ns.node_name == name]


def test_a_matmul_of_a_tensor_with_itself_costs_the_same_inside_a_loop():
    with tf.Graph().as_default():
        m = tf.constant(ELEMS[0])
        _, plain = _traced(tf.matmul(m, m, name="square"))
    expected = [ns.sim_end_micros - ns.sim_start_micros for _, ns in _runs(plain, "square")]
    with tf.Graph().as_default():
        value, looped = _traced(tf.map_fn(lambda x: tf.matmul(x, x, name="square"), tf.constant(ELEMS)))
    np.testing.assert_allclose(value, ELEMS @ ELEMS, rtol=1e-5)
    live = [ns for _, ns in _runs(looped, "map/while/square") if sum(ns.output_bytes)]  # the last test runs dead
    assert len(live) == len(ELEMS) and expected[0] > 0
    for ns in live:  # start and end are rounded to whole µs apiece
        assert abs(ns.sim_end_micros - ns.sim_start_micros - expected[0]) <= 1


def _pipeline(parallel_iterations):
    """map_fn whose iterations are independent: a matmul on GPU:0, then one on GPU:1."""
    with tf.Graph().as_default():
        def fn(x):
            with tf.device("/device:GPU:0"):
                a = tf.matmul(x, x, name="first")
            with tf.device("/device:GPU:1"):
                return tf.reduce_sum(tf.matmul(a, a, name="second"))

        with tf.device("/device:GPU:0"):
            out = tf.map_fn(fn, tf.constant(ELEMS), parallel_iterations=parallel_iterations)
        value, stats = _traced(out, tf.ConfigProto(device_count={"GPU": 2}))
    np.testing.assert_allclose(value, [(e @ e @ e @ e).sum() for e in ELEMS], rtol=1e-4)
    return stats


def _span_of_iterations(stats):
    """{(device, iteration): (first start, last end)} of the node runs inside the loop, simulated µs."""
    spans = {}
    for dev in stats.dev_stats:
        for ns in dev.node_stats:
            frame_iter = parse_timeline_label(ns.timeline_label).frame_iter
            if frame_iter is not None:
                start, end = spans.get((dev.device, frame_iter[1]), (ns.sim_start_micros, ns.sim_end_micros))
                spans[(dev.device, frame_iter[1])] = (min(start, ns.sim_start_micros), max(end, ns.sim_end_micros))
    return spans


def _step_us(stats):
    return max(ns.sim_end_micros for d in stats.dev_stats for ns in d.node_stats)


def test_one_iteration_at_a_time_never_overlaps_iterations_on_a_device():
    spans = _span_of_iterations(_pipeline(1))
    for (device, it), (start, _) in spans.items():
        if (device, it - 1) in spans:
            assert start >= spans[(device, it - 1)][1]


@pytest.mark.parametrize("parallel_iterations", [2, 5])
def test_more_iterations_in_flight_let_the_two_devices_overlap_and_the_step_shrink(parallel_iterations):
    serial, parallel = _pipeline(1), _pipeline(parallel_iterations)
    spans = _span_of_iterations(parallel)
    overlapped = [(d, it) for (d, it), (start, _) in spans.items() if (d, it - 1) in spans
                  and start < spans[(d, it - 1)][1]]
    assert overlapped
    assert _step_us(parallel) < _step_us(serial)
