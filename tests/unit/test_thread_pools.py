"""Inter-op thread pools and the intra-op BLAS limit follow TF's ``config.proto`` rules
(``inter_op_parallelism_threads``, ``use_per_session_threads``, ``session_inter_op_thread_pool``,
``RunOptions.inter_op_thread_pool``, ``intra_op_parallelism_threads``); see
:mod:`dfcore.runtime.thread_pools`."""

import os
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import dfcore as tf
from dfcore.runtime import thread_pools

TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


def _two_products(n=256):
    graph = tf.Graph()
    with graph.as_default():
        sums = []
        for i in range(2):
            with tf.device(f"/gpu:{i}"):
                x = tf.constant(np.full((n, n), 0.01 * (i + 1), np.float32), name=f"x{i}")
                sums.append(tf.reduce_sum(tf.matmul(x, x, name=f"product{i}")))
        with tf.device("/cpu:0"):
            total = tf.add_n(sums, name="total")
    return graph, total


def _op_threads(sess, fetch, options=None):
    """Thread idents that ran the ``product*`` ops of one traced run."""
    run_metadata = tf.RunMetadata()
    run_options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    if options is not None:
        run_options.MergeFrom(options)
    sess.run(fetch, options=run_options, run_metadata=run_metadata)
    return {n.thread_id for d in tf.step_records(run_metadata).step_stats.dev_stats for n in d.node_stats
            if n.node_name.startswith("product")}


@pytest.fixture(autouse=True)
def fresh_global_pool(monkeypatch):
    """A process without a global pool yet (as if no session had been made); the real one is put back."""
    monkeypatch.setattr(thread_pools, "_global_pool", None)
    monkeypatch.setattr(thread_pools, "_named_pools", {})


def test_zero_means_the_number_of_cores_and_negative_the_callers_thread():
    assert thread_pools.num_inter_op_threads(0) == (os.cpu_count() or 1)
    assert thread_pools.num_inter_op_threads(3) == 3
    graph, total = _two_products()
    config = tf.ConfigProto(inter_op_parallelism_threads=-1)
    with tf.Session(graph=graph, config=config, executor_runner="pool") as sess:
        assert _op_threads(sess, total) == {threading.get_ident()}
        assert sess._pools._pools[0].threads == 1  # TF: the global pool it made has one thread


def test_one_thread_per_session_runs_every_op_on_one_pool_thread():
    graph, total = _two_products()
    config = tf.ConfigProto(inter_op_parallelism_threads=1, use_per_session_threads=True)
    with tf.Session(graph=graph, config=config, executor_runner="pool") as sess:
        used = _op_threads(sess, total)
    assert len(used) == 1 and threading.get_ident() not in used


def test_the_first_sessions_setting_is_global_unless_use_per_session_threads():
    graph, total = _two_products()
    first = tf.Session(graph=graph, config=tf.ConfigProto(inter_op_parallelism_threads=1))
    second = tf.Session(graph=graph, config=tf.ConfigProto(inter_op_parallelism_threads=2))
    own = tf.Session(graph=graph, config=tf.ConfigProto(inter_op_parallelism_threads=2,
                                                        use_per_session_threads=True))
    try:
        assert first._thread_pool(None) is second._thread_pool(None)  # one process-global pool ...
        assert second._thread_pool(None).threads == 1  # ... sized by the first session
        assert own._thread_pool(None).threads == 2 and own._thread_pool(None) is not first._thread_pool(None)
        assert len(_op_threads(second, total)) == 1
        for _ in range(5):  # two pool threads: the products overlap on two threads (one try may not)
            if len(_op_threads(own, total)) == 2:
                break
        else:
            pytest.fail("a per-session pool of 2 threads never ran the two products on two threads")
    finally:
        for sess in (first, second, own):
            sess.close()


def test_no_pool_thread_outlives_the_sessions_that_share_it():
    before = set(threading.enumerate())
    graph, total = _two_products()
    sessions = [tf.Session(graph=graph, config=tf.ConfigProto(inter_op_parallelism_threads=2),
                           executor_runner="pool") for _ in range(2)]
    for sess in sessions:
        sess.run(total)
    sessions[0].close()
    sessions[1].run(total)  # the shared pool still serves the other session
    sessions[1].close()
    assert set(threading.enumerate()) <= before


def test_session_inter_op_thread_pool_picks_a_pool_per_run():
    graph, total = _two_products()
    config = tf.ConfigProto()
    config.session_inter_op_thread_pool.add(num_threads=1)
    config.session_inter_op_thread_pool.add(num_threads=2, global_name="shared")
    with tf.Session(graph=graph, config=config, executor_runner="pool") as sess:
        assert len(_op_threads(sess, total, tf.RunOptions(inter_op_thread_pool=0))) == 1
        assert _op_threads(sess, total, tf.RunOptions(inter_op_thread_pool=-1)) == {threading.get_ident()}
        assert sess._thread_pool(tf.RunOptions(inter_op_thread_pool=1)).threads == 2
        with pytest.raises(tf.errors.InvalidArgumentError, match="^Invalid inter_op_thread_pool: 2$"):
            sess.run(total, options=tf.RunOptions(inter_op_thread_pool=2))
        again = tf.ConfigProto()
        again.session_inter_op_thread_pool.add(num_threads=3, global_name="shared")
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Pool shared configured previously with num_threads=2; cannot re-configure "
                                 "with num_threads=3"):
            tf.Session(graph=graph, config=again)


def _blas_threads():
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_intra_op_parallelism_threads_limits_blas_during_the_sessions_runs_only():
    if not _blas_threads():
        pytest.skip("numpy runs on no BLAS threadpoolctl can see")
    seen = []
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(np.eye(4, dtype=np.float32))
        y = tf.py_func(lambda a: (seen.append(_blas_threads()), a)[1], [tf.matmul(x, x)], tf.float32)
    before = _blas_threads()
    with tf.Session(graph=graph, config=tf.ConfigProto(intra_op_parallelism_threads=1)) as sess:
        np.testing.assert_array_equal(sess.run(y), np.eye(4))
    assert seen == [[1] * len(before)]
    assert _blas_threads() == before
    with tf.Session(graph=graph) as sess:  # 0: no limit of its own
        sess.run(y)
    assert seen[1] == before
