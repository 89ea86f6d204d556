"""TF 1.x's queue-based input pipeline (tf.train.*_input_producer, batch, shuffle_batch, QueueRunner):
elements against their numpy source, num_epochs, errors reported through the Coordinator, clean shutdown."""

import threading
import time

import numpy as np
import pytest

import dfcore as tf

X = np.arange(10, dtype=np.float32)
Y = np.arange(10, dtype=np.int64) * 10


@pytest.fixture(autouse=True)
def no_thread_left():
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5
    while not set(threading.enumerate()) <= before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert set(threading.enumerate()) <= before


def _drain(sess, fetches):
    out = []
    while True:
        try:
            out.append(sess.run(fetches))
        except tf.errors.OutOfRangeError:
            return out


def _run_pipeline(build, local_init=True):
    """Build the pipeline, start its runners, take every batch until OutOfRangeError; returns the batches."""
    graph = tf.Graph()
    with graph.as_default():
        fetches = build()
        init = tf.local_variables_initializer()
    with tf.Session(graph=graph) as sess:
        if local_init:
            sess.run(init)
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            return _drain(sess, fetches)
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)


def test_slice_input_producer_and_batch_give_the_rows_in_order_for_num_epochs():
    def build():
        x, y = tf.train.slice_input_producer([X, Y], num_epochs=2, shuffle=False)
        return tf.train.batch([x, y], batch_size=6)

    batches = _run_pipeline(build)
    expected_x = np.concatenate([X, X])[:18].reshape(3, 6)  # 20 rows: 3 full batches, the 2 left never come
    np.testing.assert_array_equal([b[0] for b in batches], expected_x)
    np.testing.assert_array_equal([b[1] for b in batches], expected_x.astype(np.int64) * 10)


def test_allow_smaller_final_batch_gives_the_rest_and_a_dict_stays_a_dict():
    def build():
        x, y = tf.train.slice_input_producer([X, Y], num_epochs=1, shuffle=False)
        out = tf.train.batch({"x": x, "y": y}, batch_size=4, allow_smaller_final_batch=True)
        assert sorted(out) == ["x", "y"] and out["x"].shape.as_list() == [None]
        return out

    batches = _run_pipeline(build)
    assert [len(b["x"]) for b in batches] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([b["y"] for b in batches]), Y)


def test_shuffle_batch_keeps_rows_together_and_gives_each_row_once_per_epoch():
    def build():
        x, y = tf.train.slice_input_producer([X, Y], num_epochs=3, shuffle=True, seed=1)
        return tf.train.shuffle_batch([x, y], batch_size=5, capacity=12, min_after_dequeue=4, num_threads=2,
                                      seed=2, allow_smaller_final_batch=True)

    batches = _run_pipeline(build)
    xs, ys = np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches])
    np.testing.assert_array_equal(ys, xs.astype(np.int64) * 10)
    np.testing.assert_array_equal(np.sort(xs), np.repeat(X, 3))
    assert not np.array_equal(xs, np.tile(X, 3))


def test_batch_join_takes_from_every_list():
    def build():
        a = tf.train.slice_input_producer([X[:5]], num_epochs=1, shuffle=False)
        b = tf.train.slice_input_producer([X[5:]], num_epochs=1, shuffle=False)
        return tf.train.batch_join([a, b], batch_size=2, allow_smaller_final_batch=True)

    values = np.concatenate(_run_pipeline(build))
    np.testing.assert_array_equal(np.sort(values), X)


def test_string_and_range_input_producers_and_the_fill_summary():
    graph = tf.Graph()
    with graph.as_default():
        names = tf.train.string_input_producer(["a", "b", "c"], shuffle=False, capacity=8)
        name = names.dequeue()
        numbers = tf.train.range_input_producer(4, num_epochs=1, shuffle=False).dequeue()
        summary = tf.summary.merge_all()
        init = tf.local_variables_initializer()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        # dfcore fetches strings as str
        assert [sess.run(name) for _ in range(7)] == ["a", "b", "c", "a", "b", "c", "a"]
        assert [sess.run(numbers) for _ in range(4)] == [0, 1, 2, 3]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(numbers)
        deadline = time.monotonic() + 10
        while sess.run(names.size()) < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        values = {v.tag: v.simple_value for v in tf.Summary.FromString(sess.run(summary)).value}
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
    assert values["input_producer/fraction_of_8_full"] == 1.0
    assert values["input_producer_1/fraction_of_32_full"] == 0.0
    with pytest.raises(ValueError, match="string_input_producer requires a non-null input tensor"):
        tf.train.string_input_producer([])


def test_num_epochs_without_local_init_reports_tf_failed_precondition_through_the_coordinator():
    graph = tf.Graph()
    with graph.as_default():
        x, = tf.train.slice_input_producer([X], num_epochs=1, shuffle=False)
        batch = tf.train.batch([x], batch_size=2)
    with tf.Session(graph=graph) as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        with pytest.raises(tf.errors.OutOfRangeError):  # the runner's failure closes the queues: no hang
            sess.run(batch)
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match="Attempting to use uninitialized value input_producer/input_producer/limit_epochs/"
                                 "epochs"):
            coord.join(threads, stop_grace_period_secs=5)


def test_closing_the_session_mid_epoch_leaves_no_thread_and_stop_unblocks_full_queues():
    graph = tf.Graph()
    with graph.as_default():
        x, = tf.train.slice_input_producer([X], shuffle=False, capacity=4)
        batch = tf.train.batch([x], batch_size=2, num_threads=3, capacity=4)
    sess = tf.Session(graph=graph)
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)
    assert len(threads) == 2 + 4  # one thread per enqueue op plus one closer per runner
    np.testing.assert_array_equal(sess.run(batch), [0, 1])
    time.sleep(0.1)  # the runners fill both queues and block
    sess.close()
    for thread in threads:
        thread.join(5)
    assert not any(t.is_alive() for t in threads)

    sess = tf.Session(graph=graph)
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)
    sess.run(batch)
    coord.request_stop()
    coord.join(threads, stop_grace_period_secs=5)  # cancel_op ends the blocked enqueues
    sess.close()


def test_monitored_training_session_starts_the_runners_and_stops_at_the_end_of_the_input():
    graph = tf.Graph()
    with graph.as_default():
        x, y = tf.train.slice_input_producer([X, Y], num_epochs=1, shuffle=False)
        bx, by = tf.train.batch([x, y], batch_size=5)
        total = tf.Variable(0.0)
        step = tf.assign_add(total, tf.reduce_sum(bx))
        seen = []
        with tf.train.MonitoredTrainingSession() as sess:
            while not sess.should_stop():
                seen.append(sess.run([step, by])[1])
    np.testing.assert_array_equal(np.concatenate(seen), Y)


def test_queue_runner_api_checks():
    graph = tf.Graph()
    with graph.as_default():
        q = tf.FIFOQueue(2, tf.int32)
        enqueue = q.enqueue(1)
        with pytest.raises(ValueError, match="Must provide queue and enqueue_ops."):
            tf.train.QueueRunner(q, [])
        runner = tf.train.QueueRunner(q, [enqueue])
        tf.train.add_queue_runner(runner)
        assert graph.get_collection(tf.GraphKeys.QUEUE_RUNNERS) == [runner]
        assert tf.train.queue_runner.QueueRunner is tf.train.QueueRunner
        with pytest.raises(ValueError, match="Cannot start queue runners: No default session is registered"):
            tf.train.start_queue_runners()
        with pytest.raises(ValueError, match="capacity 4 must be bigger than min_after_dequeue 4."):
            tf.train.shuffle_batch([tf.constant(1)], 2, capacity=4, min_after_dequeue=4)
        with pytest.raises(ValueError, match="num_epochs must be > 0 not 0."):
            tf.train.limit_epochs(tf.constant(1), 0)
    with tf.Session(graph=graph) as sess:
        coord = tf.train.Coordinator()
        threads = runner.create_threads(sess, coord=coord, start=True)
        assert runner.create_threads(sess, coord=coord) == []  # already running in this session
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)
