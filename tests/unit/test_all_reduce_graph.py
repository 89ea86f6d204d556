"""All-reduce inside Session.run: the CollectiveAllReduce op, TF's graph builders, and faults."""

import threading

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors
from dfcore.distribute import all_reduce, collective_all_reduce
from dfcore.distribute.all_reduce_graph import (
    build_recursive_hd_all_reduce,
    build_ring_all_reduce,
    build_shuffle_all_reduce,
)
from dfcore.runtime.grappler import no_rewrite_session_config

GPU = "/job:localhost/replica:0/task:0/device:GPU:{}"


def _values(n, shape=(3, 5), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for _ in range(n)]


def _on_gpus(values):
    tensors = []
    for i, v in enumerate(values):
        with tf.device(f"/gpu:{i}"):
            tensors.append(tf.constant(v))
    return tensors


@pytest.mark.parametrize("runner", ["inline", "pool", "auto"])
@pytest.mark.parametrize("algorithm", ["ring", "tree", "recursive_halving_doubling", "reduce_to_one"])
def test_collective_op_gives_the_runtime_result_on_every_runner(runner, algorithm):
    values = _values(4)
    graph = tf.Graph()
    with graph.as_default():
        outs = collective_all_reduce(_on_gpus(values), algorithm=algorithm, reduction="mean")
    assert [o.op.type for o in outs] == ["CollectiveAllReduce"] * 4
    assert outs[2].op.get_attr("group_size") == 4 and outs[2].op.get_attr("rank") == 2
    want = all_reduce(values, algorithm=algorithm, reduction="mean").outputs
    with tf.Session(graph=graph, executor_runner=runner) as sess:
        for _ in range(2):  # a fresh instance meets every step
            got = sess.run(outs)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)


def test_traced_step_reports_collective_traces_and_transfers():
    graph = tf.Graph()
    with graph.as_default():
        outs = collective_all_reduce(_on_gpus(_values(3)), instance_key=77)
    metadata = tf.RunMetadata()
    with tf.Session(graph=graph) as sess:
        sess.run(outs, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
        (trace,) = tf.step_records(metadata).collective_traces
        assert trace.devices == tuple(GPU.format(i) for i in range(3))
        names = [r.tensor_name for r in tf.step_records(metadata).transfers]
        assert sum(n.startswith("collective/g1/i77/ring/") for n in names) == 2 * 2 * 3
        assert {n.node_name for d in tf.step_records(metadata).step_stats.dev_stats for n in d.node_stats} >= {
            o.op.name for o in outs}
        untraced = tf.RunMetadata()
        sess.run(outs, run_metadata=untraced)
        with pytest.raises(ValueError, match="no dfcore step records"):
            tf.step_records(untraced)
        sess.run(outs, run_metadata=metadata)  # reused for an untraced run: its records go, as its stats do
        assert not metadata.HasField("step_stats")
        with pytest.raises(ValueError, match="FULL_TRACE"):
            tf.step_records(metadata)


def test_builders_match_the_runtime_and_show_the_ring_as_send_recv_pairs():
    n = 4
    values = _values(n, (2, 9))
    graph = tf.Graph()
    with graph.as_default():
        inputs = _on_gpus(values)
        ring = build_ring_all_reduce(inputs, 1, 1, list(range(n)), tf.add)
        ring2 = build_ring_all_reduce(inputs, 2, 2, [1, 0], tf.add, lambda t: t / float(n))
        hd = build_recursive_hd_all_reduce(inputs, tf.add)
        shuffle = build_shuffle_all_reduce(inputs, ["/cpu:0", "/gpu:1"], tf.add_n)
    # the graph as built (TF's no-rewrite test config): the constant inputs would fold the rings away
    with tf.Session(graph=graph, config=no_rewrite_session_config()) as sess:
        for got, want in zip(sess.run(ring), all_reduce(values).outputs):
            np.testing.assert_array_equal(got, want)  # same chunks, same additions: bitwise equal
        for got in sess.run(ring2):
            np.testing.assert_allclose(got, np.mean(values, 0), rtol=1e-12)
        for got, want in zip(sess.run(hd), all_reduce(values, algorithm="recursive_halving_doubling").outputs):
            np.testing.assert_array_equal(got, want)
        for got in sess.run(shuffle):
            np.testing.assert_allclose(got, np.sum(values, 0), rtol=1e-12)
        assert [o.device for o in ring] == [f"/device:GPU:{i}" for i in range(n)]
        partitions = sess.partitions(ring)
        gpu_pairs = [node for p in partitions.values() for node in p.nodes if node.op == "_Send"
                     and "GPU" in node.get_attr("recv_device")]
        assert len(gpu_pairs) == 2 * (n - 1) * n  # one pair per chunk message


def test_bad_graph_input():
    graph = tf.Graph()
    with graph.as_default():
        a = tf.constant([1.0, 2.0])
        with pytest.raises(ValueError, match="empty list"):
            collective_all_reduce([])
        with pytest.raises(TypeError, match="one dtype"):
            collective_all_reduce([a, tf.constant([1.0, 2.0], tf.float64)])
        with pytest.raises(ValueError, match="one shape"):
            collective_all_reduce([a, tf.constant([1.0, 2.0, 3.0])])
        with pytest.raises(TypeError, match="not in list of allowed values"):
            collective_all_reduce([tf.constant([1, 2]), tf.constant([1, 2])])
        with pytest.raises(ValueError, match="both on"):
            with tf.device("/gpu:0"):
                collective_all_reduce([tf.constant([1.0]), tf.constant([2.0])])
        with pytest.raises(ValueError, match="Unknown all-reduce algorithm"):
            collective_all_reduce([a, a], algorithm="butterfly")


def _run_with_deadline(fn):
    """Run ``fn`` on a thread; fail the test instead of hanging."""
    outcome = []
    thread = threading.Thread(target=lambda: outcome.append(_capture(fn)), daemon=True)
    thread.start()
    thread.join(30)
    assert outcome, "the step hung"
    return outcome[0]


def _capture(fn):
    try:
        return fn()
    except Exception as error:  # returned to the test
        return error


@pytest.mark.parametrize("runner", ["inline", "pool"])
def test_failing_participant_aborts_the_collective_with_the_first_error(runner):
    graph = tf.Graph()
    with graph.as_default():
        inputs = []
        x = tf.placeholder(tf.float32, [4])
        for i in range(3):
            with tf.device(f"/gpu:{i}"):
                inputs.append(tf.check_numerics(x * float(i + 1), f"input {i}") if i == 1 else x + float(i))
        outs = collective_all_reduce(inputs)
    with tf.Session(graph=graph, executor_runner=runner) as sess:
        error = _run_with_deadline(lambda: sess.run(outs, {x: [1.0, np.nan, 0.0, 0.0]}))
        assert isinstance(error, errors.InvalidArgumentError) and "input 1" in str(error)
        np.testing.assert_allclose(sess.run(outs, {x: np.ones(4)})[0], [6.0] * 4)  # the next step works


def test_shape_mismatch_at_run_time_fails_every_participant():
    graph = tf.Graph()
    with graph.as_default():
        a = tf.placeholder(tf.float64, [None])
        b = tf.placeholder(tf.float64, [None])
        with tf.device("/gpu:0"):
            a1 = tf.identity(a)
        with tf.device("/gpu:1"):
            b1 = tf.identity(b)
        outs = collective_all_reduce([a1, b1])
    with tf.Session(graph=graph) as sess:
        error = _run_with_deadline(lambda: sess.run(outs, {a: [1.0, 2.0], b: [1.0]}))
        assert isinstance(error, errors.InvalidArgumentError) and "one shape" in str(error)


def test_participant_that_never_arrives_hits_the_step_deadline():
    graph = tf.Graph()
    with graph.as_default():
        outs = collective_all_reduce(_on_gpus(_values(3)))
    with tf.Session(graph=graph) as sess:
        options = tf.RunOptions(timeout_in_ms=300)
        error = _run_with_deadline(lambda: sess.run(outs[:2], options=options))  # rank 2 is pruned away
        assert isinstance(error, errors.DeadlineExceededError)
