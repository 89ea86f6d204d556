"""tf.data sources and combinators against pure-Python references; element specs; bad inputs."""

import numpy as np
import pytest

import dfcore as tf
from tests.unit.data_helpers import as_lists, elements


def test_from_tensor_slices_tuple_and_dict():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.array([0, 1, 0, 1])
    ds = tf.data.Dataset.from_tensor_slices((x, {"label": y, "id": np.arange(4)}))
    assert ds.output_types == (tf.float32, {"label": tf.int64, "id": tf.int64})
    assert ds.output_shapes[0].as_list() == [3]
    assert ds.output_classes == (tf.Tensor, {"label": tf.Tensor, "id": tf.Tensor})
    got = as_lists(elements(ds))
    assert got == [[x[i].tolist(), {"label": int(y[i]), "id": i}] for i in range(4)]


def test_python_lists_are_components():
    ds = tf.data.Dataset.from_tensor_slices([[1.0, 2.0], [3.0, 4.0]])
    assert ds.output_types == tf.float32 and ds.output_shapes.as_list() == [2]
    assert as_lists(elements(ds)) == [[1.0, 2.0], [3.0, 4.0]]


def test_mismatched_first_dimensions_raise_tf_error():
    with pytest.raises(ValueError, match="Dimensions 3 and 4 are not compatible"):
        tf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))


def test_mismatched_fed_lengths_raise_at_initialization():
    a, b = tf.placeholder(tf.float32, [None]), tf.placeholder(tf.float32, [None])
    iterator = tf.data.Dataset.from_tensor_slices((a, b)).make_initializable_iterator()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="0th dimension"):
        sess.run(iterator.initializer, {a: np.zeros(3), b: np.zeros(4)})


def test_from_tensors_and_range():
    assert as_lists(elements(tf.data.Dataset.from_tensors(([1, 2], 3.0)))) == [[[1, 2], 3.0]]
    ds = tf.data.Dataset.range(2, 11, 3)
    assert ds.output_types == tf.int64 and ds.output_shapes.as_list() == []
    assert as_lists(elements(ds)) == list(range(2, 11, 3))
    assert as_lists(elements(tf.data.Dataset.range(5))) == list(range(5))


def test_from_generator_converts_and_checks():
    def gen():
        for i in range(4):
            yield i, [float(i)] * i

    ds = tf.data.Dataset.from_generator(gen, (tf.int64, tf.float32), (tf.TensorShape([]), tf.TensorShape([None])))
    got = as_lists(elements(ds))
    assert got == [[i, [float(i)] * i] for i in range(4)]

    def bad_shape():
        yield [1, 2, 3]

    tf.reset_default_graph()
    ds = tf.data.Dataset.from_generator(bad_shape, tf.int32, tf.TensorShape([2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad_shape.*shape"):
        elements(ds)


def test_from_generator_exception_names_generator(no_thread_leak):
    def broken():
        yield 1
        raise RuntimeError("disk on fire")

    ds = tf.data.Dataset.from_generator(broken, tf.int32).prefetch(2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="disk on fire.*broken"):
        elements(ds)


def test_zip_and_concatenate():
    a = tf.data.Dataset.range(5)
    b = tf.data.Dataset.from_tensor_slices(np.arange(3, dtype=np.float32) * 10)
    zipped = tf.data.Dataset.zip((a, {"b": b}))
    assert zipped.output_types == (tf.int64, {"b": tf.float32})
    assert as_lists(elements(zipped)) == [[i, {"b": i * 10.0}] for i in range(3)]
    tf.reset_default_graph()
    joined = tf.data.Dataset.range(3).concatenate(tf.data.Dataset.range(10, 12))
    assert as_lists(elements(joined)) == [0, 1, 2, 10, 11]
    with pytest.raises(TypeError, match="different types"):
        tf.data.Dataset.range(3).concatenate(b)


def test_concatenate_generalizes_shapes():
    a = tf.data.Dataset.from_tensor_slices(np.zeros((2, 3)))
    b = tf.data.Dataset.from_tensor_slices(np.zeros((2, 4)))
    assert a.concatenate(b).output_shapes.as_list() == [None]


def test_get_output_functions():
    ds = tf.data.Dataset.range(3)
    iterator = ds.make_one_shot_iterator()
    assert tf.data.get_output_types(ds) == tf.int64 == tf.data.get_output_types(iterator)
    assert tf.data.get_output_shapes(iterator).as_list() == [] and tf.data.get_output_classes(ds) is tf.Tensor
