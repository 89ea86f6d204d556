"""tf.data iterators: end of data, initialization, restart, feeds, handles, threads, errors, placement."""

import threading
import time

import numpy as np
import pytest

import dfcore as tf
from tests.conftest import threads_left_running


def test_out_of_range_at_end_and_after():
    next_element = tf.data.Dataset.range(2).make_one_shot_iterator().get_next()
    assert next_element.op.type == "IteratorGetNext" and next_element.shape.as_list() == []
    with tf.Session() as sess:
        assert [sess.run(next_element) for _ in range(2)] == [0, 1]
        for _ in range(2):
            with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
                sess.run(next_element)


def test_compat_v1_make_one_shot_iterator_and_per_session_state():
    next_element = tf.compat.v1.data.make_one_shot_iterator(tf.data.Dataset.range(3)).get_next()
    with tf.Session() as first, tf.Session() as second:
        assert first.run(next_element) == 0 and first.run(next_element) == 1
        assert second.run(next_element) == 0  # one iterator per session


def test_get_next_is_one_op_with_static_shapes():
    ds = tf.data.Dataset.from_tensor_slices({"x": np.zeros((5, 3), np.float32), "y": np.zeros(5, np.int64)})
    element = tf.data.make_one_shot_iterator(ds.batch(2, drop_remainder=True)).get_next()
    assert element["x"].op is element["y"].op
    assert element["x"].shape.as_list() == [2, 3] and element["y"].dtype == tf.int64


def test_failed_precondition_before_initializer():
    iterator = tf.data.Dataset.range(3).make_initializable_iterator()
    message = ("GetNext\\(\\) failed because the iterator has not been initialized. Ensure that you have run the "
               "initializer operation")
    with tf.Session() as sess, pytest.raises(tf.errors.FailedPreconditionError, match=message):
        sess.run(iterator.get_next())


def test_reinitialize_restarts_and_feeds_parameterize():
    limit = tf.placeholder(tf.int64, [None])
    iterator = tf.data.Dataset.from_tensor_slices(limit).map(lambda x: x * 10).make_initializable_iterator()
    next_element = iterator.get_next()
    with tf.Session() as sess:
        sess.run(iterator.initializer, {limit: [1, 2, 3]})
        assert sess.run(next_element) == 10
        sess.run(iterator.initializer, {limit: [7, 8]})
        assert [sess.run(next_element) for _ in range(2)] == [70, 80]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(next_element)


def test_one_shot_rejects_placeholders():
    with pytest.raises(ValueError, match="Cannot capture a placeholder"):
        tf.data.Dataset.from_tensor_slices(tf.placeholder(tf.float32, [None])).make_one_shot_iterator()


def test_reinitializable_and_feedable_iterators():
    train, test = tf.data.Dataset.range(10, 13), tf.data.Dataset.range(3)
    iterator = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    next_element = iterator.get_next()
    handle = tf.placeholder(tf.string, [])
    feedable = tf.data.Iterator.from_string_handle(handle, train.output_types, train.output_shapes)
    one_shot = test.make_one_shot_iterator()
    with tf.Session() as sess:
        sess.run(iterator.make_initializer(train))
        assert sess.run(next_element) == 10
        sess.run(iterator.make_initializer(test))
        assert sess.run(next_element) == 0
        test_handle = sess.run(one_shot.string_handle())
        assert [sess.run(feedable.get_next(), {handle: test_handle}) for _ in range(2)] == [0, 1]
    with pytest.raises(TypeError, match="Expected output types"):
        iterator.make_initializer(tf.data.Dataset.from_tensors(1.0))


def test_iterator_ops_are_placed_on_the_cpu():
    config = tf.ConfigProto(device_count={"CPU": 1, "GPU": 1})
    with tf.device("/gpu:0"):
        next_element = tf.data.Dataset.range(2).make_one_shot_iterator().get_next()
    with tf.Session(config=config) as sess, pytest.raises(tf.errors.InvalidArgumentError):
        sess.run(next_element)
    tf.reset_default_graph()
    next_element = tf.data.Dataset.range(2).make_one_shot_iterator().get_next()
    with tf.Session(config=config) as sess:
        sess.run(next_element)
        devices = {r.node_name: r.assigned_device for r in sess.placement_records()}
    assert devices["IteratorGetNext"].endswith("CPU:0") and devices["OneShotIterator"].endswith("CPU:0")


def test_map_error_surfaces_at_get_next_naming_the_function(no_thread_leak):
    def reshape_to_three(x):
        return tf.reshape(x, [3])

    ds = tf.data.Dataset.from_generator(lambda: iter([[1, 2, 3], [1, 2]]), tf.int32, tf.TensorShape([None]))
    next_element = ds.map(reshape_to_three, num_parallel_calls=2).prefetch(1).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(next_element).tolist() == [1, 2, 3]
        with pytest.raises(tf.errors.InvalidArgumentError, match="reshape_to_three"):
            sess.run(next_element)



def test_threads_stop_on_reinitialize_and_close():
    before = threading.enumerate()
    iterator = (tf.data.Dataset.range(1000).map(lambda x: x + 1, num_parallel_calls=3).prefetch(4)
                .make_initializable_iterator())
    next_element = iterator.get_next()
    sess = tf.Session()
    sess.run(iterator.initializer)
    sess.run(next_element)
    running = [t for t in threading.enumerate() if t.name.startswith("tf_data")]
    assert running, "prefetch/map threads should be running mid-pass"
    sess.run(iterator.initializer)  # the first pass's threads stop
    assert sess.run(next_element) == 1
    sess.close()
    assert threads_left_running(before) == []


def test_monitored_training_session_stops_at_end_of_data():
    next_element = tf.data.Dataset.range(5).batch(2).make_one_shot_iterator().get_next()
    global_step = tf.train.get_or_create_global_step()
    step = tf.assign_add(global_step, 1)
    seen = []
    with tf.train.MonitoredTrainingSession() as sess:
        while not sess.should_stop():
            seen.append(sess.run([next_element, step])[0].tolist())
    assert seen == [[0, 1], [2, 3], [4]]


def test_a_waiting_get_next_ends_with_the_step_deadline_and_keeps_the_element(no_thread_leak):
    def slow():
        for i in range(3):
            time.sleep(0.5)
            yield i

    next_element = tf.data.Dataset.from_generator(slow, tf.int64).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(next_element, options=tf.RunOptions(timeout_in_ms=100))
        assert [sess.run(next_element) for _ in range(3)] == [0, 1, 2]  # the element fetched meanwhile is kept
