"""Engine behaviours that lessons 01–03 teach and check, specified here so a change fails fast
(before the slower nbval run): ``add_n`` of scalars, which threads run independent partitions,
simulated parallelism across devices, soft placement, and de-duplication of ``_Send``/``_Recv``. Traced runs
and pair counts use the graph as built (TF's no-rewrite test config), as the lessons do: constant folding
would otherwise compute these constant graphs before the step."""

import numpy as np
import pytest

import dfcore as tf
from dfcore.runtime.grappler import no_rewrite_session_config

TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


def _products(devices, n=256):
    graph = tf.Graph()
    with graph.as_default():
        sums = []
        for i, device in enumerate(devices):
            with tf.device(device):
                x = tf.constant(np.full((n, n), 0.01 * (i + 1), np.float32), name=f"x{i}")
                sums.append(tf.reduce_sum(tf.matmul(x, x, name=f"product{i}")))
        with tf.device("/cpu:0"):
            total = tf.add_n(sums, name="total")
    return graph, total


def _traced(graph, fetch, config=None):
    sess = tf.Session(graph=graph, config=no_rewrite_session_config(config))
    run_metadata = tf.RunMetadata()
    value = sess.run(fetch, options=TRACE, run_metadata=run_metadata)
    return value, run_metadata


def _step_us(run_metadata):
    return max(n.sim_end_micros for d in tf.step_records(run_metadata).step_stats.dev_stats for n in d.node_stats)


def test_add_n_of_three_or_more_scalars_from_other_devices():
    graph, total = _products(["/gpu:0", "/gpu:1", "/gpu:2"], n=4)
    value = tf.Session(graph=graph).run(total)
    assert np.isclose(value, sum(4 * 4 * 4 * (0.01 * k) ** 2 for k in (1, 2, 3)), rtol=1e-5)


@pytest.mark.parametrize("threads, expected", [(1, 1), (2, 2)])
def test_independent_heavy_partitions_run_on_as_many_threads_as_the_pool_allows(threads, expected):
    graph, total = _products(["/gpu:0", "/gpu:1"])
    # TF's rule: without use_per_session_threads every session shares the first session's global pool
    config = tf.ConfigProto(inter_op_parallelism_threads=threads, use_per_session_threads=True)
    _, run_metadata = _traced(graph, total, config)
    used = {n.thread_id for d in tf.step_records(run_metadata).step_stats.dev_stats for n in d.node_stats
            if n.node_name.startswith("product")}
    assert len(used) == expected


def test_products_on_two_devices_overlap_in_simulated_time_and_queue_on_one():
    two = _traced(*_products(["/gpu:0", "/gpu:1"]))[1]
    one = _traced(*_products(["/gpu:0", "/gpu:0"]))[1]
    spans = {n.node_name: (n.sim_start_micros, n.sim_end_micros)
             for d in tf.step_records(two).step_stats.dev_stats for n in d.node_stats}
    assert spans["product0"] == spans["product1"]
    assert _step_us(one) > 1.5 * _step_us(two)


def test_soft_placement_moves_a_missing_gpu_request_to_gpu_0_and_a_cpu_only_op_to_the_cpu():
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/gpu:7"):
            total = tf.reduce_sum(tf.constant([1.0, 2.0]), name="total")
        with tf.device("/gpu:0"):
            shuffled = tf.random_shuffle(tf.range(3), seed=1, name="shuffled")
    with pytest.raises(tf.errors.InvalidArgumentError, match="explicitly assigned to /device:GPU:7"):
        tf.Session(graph=graph).run(total)
    sess = tf.Session(graph=graph, config=tf.ConfigProto(allow_soft_placement=True))
    sess.run([total, shuffled])
    placed = {r.node_name: r.assigned_device for r in sess.placement_records()}
    assert placed["total"].endswith("GPU:0") and placed["shuffled"].endswith("CPU:0")


def test_one_pair_per_tensor_and_destination_device():
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/gpu:0"):
            m = tf.constant(np.ones((4, 4), np.float32), name="m")
        with tf.device("/gpu:1"):
            near = tf.add_n([tf.reduce_sum(m), tf.reduce_max(m), tf.reduce_min(m)])
        with tf.device("/gpu:2"):
            far = tf.reduce_mean(m)
        with tf.device("/cpu:0"):
            result = tf.add(near, far)
    stats = tf.Session(graph=graph, config=no_rewrite_session_config()).partitions(result).stats
    assert (stats.cross_device_data_edges, stats.data_pairs, stats.transfers_saved_by_dedup) == (6, 4, 2)
