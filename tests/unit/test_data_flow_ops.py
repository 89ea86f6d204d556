"""FIFOQueue, ConditionalAccumulator and Mutex: TF's semantics and messages, blocking without held threads."""

import threading
import time

import numpy as np
import pytest

import dfcore as tf
from dfcore.ops.data_flow_ops import Mutex, consume_mutex_lock

SHORT = tf.RunOptions(timeout_in_ms=100)


@pytest.fixture(autouse=True)
def no_thread_left():
    before = set(threading.enumerate())
    yield
    assert set(threading.enumerate()) <= before


def _in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as error:  # handed to the test
            out["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


# -- FIFOQueue ------------------------------------------------------------------------
def test_fifo_order_size_and_multi_component_elements():
    graph = tf.Graph()
    with graph.as_default():
        q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []])
        x, y = tf.placeholder(tf.float32, [2]), tf.placeholder(tf.int32, [])
        enq, deq, size = q.enqueue([x, y]), q.dequeue(), q.size()
        many = q.dequeue_many(2)
    assert enq.name == "fifo_queue_enqueue" and q.name == "fifo_queue"
    assert deq[0].shape.as_list() == [2] and many[0].shape.as_list() == [2, 2]
    with tf.Session(graph=graph) as sess:
        for i in range(3):
            sess.run(enq, {x: [i, i + 0.5], y: i})
        assert sess.run(size) == 3
        first = sess.run(deq)
        np.testing.assert_array_equal(first[0], [0.0, 0.5])
        assert first[1] == 0
        a, b = sess.run(many)
        np.testing.assert_array_equal(a, [[1.0, 1.5], [2.0, 2.5]])
        np.testing.assert_array_equal(b, [1, 2])
        assert sess.run(size) == 0


def test_enqueue_many_names_and_tf_queue_namespace():
    graph = tf.Graph()
    with graph.as_default():
        q = tf.queue.FIFOQueue(5, [tf.int64, tf.float32], shapes=[(), ()], names=["step", "loss"])
        enq = q.enqueue_many({"step": [1, 2, 3], "loss": [0.5, 0.25, 0.125]})
        out = q.dequeue()
    with tf.Session(graph=graph) as sess:
        sess.run(enq)
        got = sess.run(out)
        assert got == {"step": 1, "loss": 0.5}


def test_graph_construction_errors():
    graph = tf.Graph()
    with graph.as_default():
        with pytest.raises(ValueError, match="Queue shapes must have the same length as dtypes"):
            tf.FIFOQueue(1, [tf.float32, tf.int32], shapes=[[2]])
        with pytest.raises(ValueError, match="All shapes must be fully defined"):
            tf.FIFOQueue(1, tf.float32, shapes=[None])
        q = tf.FIFOQueue(1, tf.float32, shapes=[[2]])
        with pytest.raises(ValueError, match="incompatible"):
            q.enqueue(tf.zeros([3]))
        with pytest.raises(ValueError, match="Tensor conversion requested dtype float32"):
            q.enqueue(tf.constant([1, 2]))


def test_dequeue_blocks_without_holding_a_thread_until_an_enqueue_commits():
    graph = tf.Graph()
    with graph.as_default():
        q = tf.FIFOQueue(2, tf.float32, shapes=[[]])
        x = tf.placeholder(tf.float32, [])
        enq, deq = q.enqueue(x), q.dequeue()
    sess = tf.Session(graph=graph, config=tf.ConfigProto(inter_op_parallelism_threads=1))
    thread, out = _in_thread(lambda: sess.run(deq))
    time.sleep(0.05)
    assert thread.is_alive()
    sess.run(enq, {x: 7.0})
    thread.join(5)
    assert out["value"] == 7.0
    sess.close()


def test_enqueue_blocks_while_full_and_dequeue_frees_room():
    graph = tf.Graph()
    with graph.as_default():
        q = tf.FIFOQueue(1, tf.int32, shapes=[[]])
        x = tf.placeholder(tf.int32, [])
        enq, deq, size = q.enqueue(x), q.dequeue(), q.size()
    with tf.Session(graph=graph) as sess:
        sess.run(enq, {x: 1})
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(enq, {x: 2}, options=SHORT)
        assert sess.run(size) == 1  # the timed-out enqueue left nothing behind
        thread, out = _in_thread(lambda: sess.run(enq, {x: 3}))
        time.sleep(0.05)
        assert sess.run(deq) == 1
        thread.join(5)
        assert "error" not in out and sess.run(deq) == 3


def test_enqueue_many_beyond_the_capacity_streams_in_as_room_frees():
    graph = tf.Graph()
    with graph.as_default():
        q = tf.FIFOQueue(3, tf.int32, shapes=[[]])
        fill, one, size = q.enqueue_many([list(range(8))]), q.dequeue(), q.size()
        close = q.close(cancel_pending_enqueues=True)
    with tf.Session(graph=graph) as sess:
        thread, out = _in_thread(lambda: sess.run(fill))
        got = [sess.run(one) for _ in range(6)]  # the first elements are visible before the enqueue ends
        thread.join(5)
        assert got == list(range(6)) and "error" not in out and sess.run(size) == 2
        thread, out = _in_thread(lambda: sess.run(fill))
        time.sleep(0.1)
        assert sess.run(size) == 3  # full, the rest waiting
        sess.run(close)
        thread.join(5)
        assert isinstance(out["error"], tf.errors.CancelledError)
        assert out["error"].message.startswith("Enqueue operation was cancelled")


def test_closed_queue_out_of_range_and_cancelled_with_tf_wording():
    graph = tf.Graph()
    with graph.as_default():
        q = tf.FIFOQueue(3, tf.float32, shapes=[[]], name="q")
        enq, deq, close = q.enqueue(1.0), q.dequeue(), q.close()
    with tf.Session(graph=graph) as sess:
        sess.run(enq)
        thread, out = _in_thread(lambda: (sess.run(deq), sess.run(deq)))
        thread.join(0.1)
        sess.run(close)
        thread.join(5)
        assert isinstance(out["error"], tf.errors.OutOfRangeError)
        assert ("FIFOQueue 'q' is closed and has insufficient elements (requested 1, current size 0)"
                in str(out["error"]))
        with pytest.raises(tf.errors.CancelledError, match="FIFOQueue 'q' is closed."):
            sess.run(enq)


def test_an_enqueue_of_a_failed_step_is_not_published():
    graph = tf.Graph()
    with graph.as_default():
        q = tf.FIFOQueue(1, tf.float32, shapes=[[]])
        x = tf.placeholder(tf.float32, [])
        enq = q.enqueue(x)
        with tf.control_dependencies([enq]):
            fail = tf.debugging.check_numerics(x, "bad value")
        size = q.size()
    with tf.Session(graph=graph) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad value"):
            sess.run(fail, {x: np.nan})
        assert sess.run(size) == 0
        sess.run(enq, {x: 1.0})  # the room reserved by the failed step was given back
        assert sess.run(size) == 1


def test_dequeue_many_needs_shapes_and_a_non_negative_count():
    graph = tf.Graph()
    with graph.as_default():
        q = tf.FIFOQueue(3, tf.float32)
        n = tf.placeholder(tf.int32, [])
        many = q.dequeue_many(n)
        shaped = tf.FIFOQueue(3, tf.float32, shapes=[[]])
        empty = shaped.dequeue_many(0)
    with tf.Session(graph=graph) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="require the components to have specified shapes"):
            sess.run(many, {n: 1})
        assert sess.run(empty).shape == (0,)


# -- ConditionalAccumulator ------------------------------------------------------------
def test_accumulator_averages_drops_stale_and_advances_its_step():
    graph = tf.Graph()
    with graph.as_default():
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="g")
        g = tf.placeholder(tf.float32, [2])
        step = tf.placeholder(tf.int64, [])
        apply_op = acc.apply_grad(g, local_step=step)
        take, count = acc.take_grad(2), acc.num_accumulated()
        set_step = acc.set_global_step(5)
    with tf.Session(graph=graph) as sess:
        sess.run(apply_op, {g: [1, 2], step: 0})
        sess.run(apply_op, {g: [3, 6], step: 0})
        assert sess.run(count) == 2
        np.testing.assert_array_equal(sess.run(take), [2.0, 4.0])
        assert sess.run(count) == 0
        sess.run(apply_op, {g: [9, 9], step: 0})  # stale: the take moved the step to 1
        assert sess.run(count) == 0
        sess.run(set_step)
        sess.run(apply_op, {g: [1, 1], step: 4})
        assert sess.run(count) == 0
        sess.run(apply_op, {g: [1, 1], step: 5})
        assert sess.run(count) == 1


def test_take_grad_blocks_until_enough_gradients_and_checks_its_argument():
    graph = tf.Graph()
    with graph.as_default():
        acc = tf.ConditionalAccumulator(tf.float64, shape=[])
        g = tf.placeholder(tf.float64, [])
        apply_op, take, bad = acc.apply_grad(g), acc.take_grad(2), acc.take_grad(0)
    with tf.Session(graph=graph) as sess:
        thread, out = _in_thread(lambda: sess.run(take))
        sess.run(apply_op, {g: 1.0})
        thread.join(0.05)
        assert thread.is_alive()
        sess.run(apply_op, {g: 2.0})
        thread.join(5)
        assert out["value"] == 1.5
        with pytest.raises(tf.errors.InvalidArgumentError, match="Argument num_required must be positive, but was 0"):
            sess.run(bad)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(take, options=SHORT)


def test_accumulator_shape_checks():
    graph = tf.Graph()
    with graph.as_default():
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
        with pytest.raises(ValueError, match="incompatible"):
            acc.apply_grad(tf.zeros([3]))
        loose = tf.ConditionalAccumulator(tf.float32)
        g = tf.placeholder(tf.float32, None)
        apply_loose = loose.apply_grad(g)
        with pytest.raises(ValueError, match="reduction_type"):
            tf.ConditionalAccumulator(tf.float32, reduction_type="MAX")
    with tf.Session(graph=graph) as sess:
        sess.run(apply_loose, {g: [1.0, 2.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Shape mismatch: expected \[2\], got \[3\]"):
            sess.run(apply_loose, {g: [1.0, 2.0, 3.0]})


# -- Mutex ---------------------------------------------------------------------------------
def test_mutex_excludes_a_second_holder_until_the_lock_is_consumed_or_the_step_ends():
    graph = tf.Graph()
    with graph.as_default():
        mutex = Mutex(shared_name="m")
        lock = mutex.lock()
        gate = tf.FIFOQueue(1, tf.int32, shapes=[[]])
        with tf.control_dependencies([lock]):
            hold = gate.dequeue()  # holds the lock until something is enqueued
        with tf.control_dependencies([hold]):
            done = tf.identity(lock)
        second = mutex.lock()
        with tf.control_dependencies([second]):
            after_second = tf.constant(1)
        release = consume_mutex_lock(mutex.lock())
        open_gate = gate.enqueue(0)
    with tf.Session(graph=graph) as sess:
        holder, out = _in_thread(lambda: sess.run(done))
        time.sleep(0.05)
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(after_second, options=SHORT)
        sess.run(open_gate)
        holder.join(5)
        assert "error" not in out
        assert sess.run(after_second) == 1  # released at the end of the holder's step
        sess.run(release)
        assert sess.run(after_second) == 1
