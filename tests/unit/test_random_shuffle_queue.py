"""RandomShuffleQueue (TF's RandomShuffleQueueV2), dequeue_up_to and CountUpTo: TF's semantics and messages."""

import threading

import numpy as np
import pytest

import dfcore as tf

SHORT = tf.RunOptions(timeout_in_ms=100)


@pytest.fixture(autouse=True)
def no_thread_left():
    before = set(threading.enumerate())
    yield
    assert set(threading.enumerate()) <= before


def _shuffle_queue(capacity=10, min_after_dequeue=3, seed=None, shapes=((),)):
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(7)
        q = tf.RandomShuffleQueue(capacity, min_after_dequeue, [tf.int32], shapes=list(shapes), seed=seed)
        values = tf.placeholder(tf.int32, [None])
        ops = {"q": q, "values": values, "fill": q.enqueue_many([values]), "one": q.dequeue(),
               "size": q.size(), "close": q.close()}
    return graph, ops


def test_dequeue_leaves_min_after_dequeue_until_closed_then_drains():
    graph, ops = _shuffle_queue(min_after_dequeue=3)
    with tf.Session(graph=graph) as sess:
        sess.run(ops["fill"], {ops["values"]: np.arange(5)})
        taken = [sess.run(ops["one"]) for _ in range(2)]
        assert sess.run(ops["size"]) == 3
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(ops["one"], options=SHORT)  # a fourth would leave 2 < min_after_dequeue
        sess.run(ops["close"])
        taken += [sess.run(ops["one"]) for _ in range(3)]
        assert sorted(taken) == list(range(5))
        with pytest.raises(tf.errors.OutOfRangeError) as info:
            sess.run(ops["one"])
    name = ops["q"].queue_ref.op.name
    assert info.value.message.startswith(f"RandomShuffleQueue '{name}' is closed and has insufficient elements "
                                         "(requested 1, current size 0)")


def test_a_waiting_dequeue_is_served_by_the_enqueue_that_lifts_the_size_above_the_minimum():
    graph, ops = _shuffle_queue(min_after_dequeue=2)
    with tf.Session(graph=graph) as sess:
        sess.run(ops["fill"], {ops["values"]: [1, 2]})
        out = {}
        thread = threading.Thread(target=lambda: out.setdefault("v", sess.run(ops["one"])))
        thread.start()
        thread.join(0.2)
        assert thread.is_alive()  # 2 elements, min_after_dequeue 2: it waits
        sess.run(ops["fill"], {ops["values"]: [3]})
        thread.join(5)
        assert out["v"] in (1, 2, 3) and sess.run(ops["size"]) == 2


def test_a_seeded_queue_gives_the_same_permutation_in_every_session():
    orders = []
    for _ in range(2):
        graph, ops = _shuffle_queue(capacity=50, min_after_dequeue=0, seed=3)
        with tf.Session(graph=graph) as sess:
            sess.run(ops["fill"], {ops["values"]: np.arange(40)})
            orders.append([int(sess.run(ops["one"])) for _ in range(40)])
    assert orders[0] == orders[1]
    assert sorted(orders[0]) == list(range(40)) and orders[0] != list(range(40))


def test_capacity_and_shape_checks_use_tf_wording():
    graph, ops = _shuffle_queue(capacity=3, min_after_dequeue=3)
    with tf.Session(graph=graph) as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
        sess.run(ops["size"])
    assert "min_after_dequeue 3 must be < capacity 3" in info.value.message
    graph = tf.Graph()
    with graph.as_default():
        q = tf.queue.RandomShuffleQueue(5, 0, tf.float32)
        many = q.dequeue_many(2)
    with tf.Session(graph=graph) as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
        sess.run(many)
    assert info.value.message.startswith("RandomShuffleQueue's DequeueMany and DequeueUpTo require the components "
                                         "to have specified shapes.")


@pytest.mark.parametrize("shuffle", [False, True])
def test_dequeue_up_to_gives_the_rest_of_a_closed_queue_then_out_of_range(shuffle):
    graph = tf.Graph()
    with graph.as_default():
        q = tf.RandomShuffleQueue(10, 4, tf.int32, shapes=[[]]) if shuffle else tf.FIFOQueue(10, tf.int32, shapes=[[]])
        fill, close = q.enqueue_many([[1, 2, 3, 4, 5]]), q.close()
        up_to = q.dequeue_up_to(3)
    assert up_to.shape.as_list() == [None]
    with tf.Session(graph=graph) as sess:
        sess.run(fill)
        if not shuffle:
            np.testing.assert_array_equal(sess.run(up_to), [1, 2, 3])
        sess.run(close)
        rest = np.concatenate([sess.run(up_to) for _ in range(1 if not shuffle else 2)])
        assert sorted(rest) == ([4, 5] if not shuffle else [1, 2, 3, 4, 5])
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(up_to)


def test_a_blocked_dequeue_up_to_is_served_what_is_left_when_the_queue_closes():
    graph = tf.Graph()
    with graph.as_default():
        q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
        fill, close, up_to = q.enqueue_many([[7, 8]]), q.close(), q.dequeue_up_to(5)
    with tf.Session(graph=graph) as sess:
        sess.run(fill)
        out = {}
        thread = threading.Thread(target=lambda: out.setdefault("v", sess.run(up_to)))
        thread.start()
        thread.join(0.2)
        assert thread.is_alive()
        sess.run(close)
        thread.join(5)
        np.testing.assert_array_equal(out["v"], [7, 8])


def test_count_up_to_counts_then_raises_out_of_range_and_needs_initialization():
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(0, dtype=tf.int64)
        count = v.count_up_to(2)
    assert count.dtype == tf.int64 and count.shape.as_list() == []
    with tf.Session(graph=graph) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="Attempting to use uninitialized value Variable"):
            sess.run(count)
        sess.run(v.initializer)
        assert [sess.run(count), sess.run(count)] == [0, 1]
        with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 2"):
            sess.run(count)
        assert sess.run(v) == 2
    with graph.as_default(), pytest.raises(TypeError):
        tf.count_up_to(tf.Variable(0.0), 3)
