"""PaddingFIFOQueue (TF's PaddingFIFOQueueV2): batches padded to their largest element, TF's shape checks."""

import numpy as np
import pytest

import dfcore as tf


def test_dequeue_many_pads_each_batch_to_its_largest_element_and_dequeue_does_not():
    graph = tf.Graph()
    with graph.as_default():
        q = tf.PaddingFIFOQueue(10, [tf.int32, tf.string], shapes=[[None], []])
        values, word = tf.placeholder(tf.int32, [None]), tf.placeholder(tf.string, [])
        enqueue = q.enqueue([values, word])
        many, one, up_to = q.dequeue_many(2), q.dequeue(), q.dequeue_up_to(5)
        close = q.close()
    assert many[0].shape.as_list() == [2, None] and up_to[0].shape.as_list() == [None, None]
    with tf.Session(graph=graph) as sess:
        for row, name in [([1], "a"), ([2, 3, 4], "b"), ([5, 6], "c"), ([], "d"), ([7], "e")]:
            sess.run(enqueue, {values: np.array(row, np.int32), word: name})
        padded, names = sess.run(many)
        np.testing.assert_array_equal(padded, [[1, 0, 0], [2, 3, 4]])
        assert list(names) == ["a", "b"]
        assert sess.run(one)[0].tolist() == [5, 6]  # one element: no padding
        sess.run(close)
        rest, _ = sess.run(up_to)
        np.testing.assert_array_equal(rest, [[0], [7]])  # the closed queue's last two, [] padded to [0]


def test_padding_queue_shape_checks_use_tf_wording():
    with pytest.raises(ValueError, match="Shapes must be provided for all components, but received 2 dtypes and 1 "
                                         "shapes."):
        tf.PaddingFIFOQueue(4, [tf.int32, tf.int32], shapes=[[None]])
    with pytest.raises(ValueError, match="All shapes must have a known rank"):
        tf.PaddingFIFOQueue(4, [tf.int32], shapes=[tf.TensorShape(None)])
    q = tf.PaddingFIFOQueue(4, tf.int32, shapes=[[None, 2]])
    with pytest.raises(ValueError):
        q.enqueue(tf.zeros([3, 3], tf.int32))  # the known dimension 2 does not match statically
    values = tf.placeholder(tf.int32)
    enqueue = q.enqueue(values)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
        sess.run(enqueue, {values: np.zeros([1, 3], np.int32)})
    assert info.value.message.startswith("Shape mismatch in tuple component 0. Expected [?,2], got [1,3]")
