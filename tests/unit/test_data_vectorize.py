"""``map`` then ``batch`` run once per batch (vectorized) where the function allows it, per element otherwise:
both paths give the same elements and the same errors. The reference is the per-element path (the same
function with a ``Shape`` round trip, which has no batch rule) and numpy."""

import numpy as np
import pytest

import dfcore as tf
from tests.unit.data_helpers import fails_on_two

E = "E"


def _scale(image, label):
    scaled = tf.reshape(tf.cast(image, tf.float32) / 255.0 - 0.5, [-1])
    scaled = tf.where(label > 10, scaled, -scaled)  # a scalar condition picks the whole element
    return tf.where(scaled > 0.25, scaled * 2.0, scaled), label + 1


def _scale_unvectorizable(image, label):
    image = tf.reshape(image, tf.shape(image))  # Shape has no batch rule: the function runs per element
    return _scale(image, label)


def _drain(dataset, limit=50):
    get_next = tf.data.make_one_shot_iterator(dataset).get_next()
    out = []
    with tf.Session() as sess:
        for _ in range(limit):
            try:
                out.append(sess.run(get_next))
            except tf.errors.OutOfRangeError:
                return out
            except tf.errors.InvalidArgumentError:
                out.append(E)
    return out


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, str) or isinstance(y, str):
            assert x == y
        else:
            for u, v in zip(x, y):
                assert u.dtype == v.dtype and u.shape == v.shape
                np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_vectorized_and_per_element_batches_are_identical(drop_remainder):
    rng = np.random.RandomState(0)
    images, labels = rng.randint(0, 256, (23, 4, 3)).astype(np.uint8), np.arange(23, dtype=np.int64)
    source = tf.data.Dataset.from_tensor_slices((images, labels))
    fast = source.map(_scale)
    slow = source.map(_scale_unvectorizable)
    assert fast.vectorized and not slow.vectorized
    got = _drain(fast.repeat(2).batch(5, drop_remainder))
    _same(got, _drain(slow.repeat(2).batch(5, drop_remainder)))
    flat = (images.astype(np.float32) / np.float32(255.0) - np.float32(0.5)).reshape(23, 12)
    flat = np.where((labels > 10)[:, None], flat, -flat)
    want = np.where(flat > 0.25, flat * np.float32(2.0), flat)
    np.testing.assert_array_equal(np.concatenate([b[0] for b in got])[:23], want)
    assert len(got) == (9 if drop_remainder else 10)


def test_error_elements_are_the_same_on_both_paths():
    # TF 2.21 (recorded, tf.compat.v1): range(8).map(fails on 2).batch(3) -> [error, [3, 4, 5], [6, 7]]
    def pipeline(fn):
        return tf.data.Dataset.range(8).map(fails_on_two).map(lambda x: (x * 2, x)).map(fn).batch(3)

    fast = _drain(pipeline(lambda a, b: (a + 1, b)))
    slow = _drain(pipeline(lambda a, b: (tf.reshape(a, tf.shape(a)) + 1, b)))
    _same(fast, slow)
    assert fast[0] == E and [b[1].tolist() for b in fast[1:]] == [[3, 4, 5], [6, 7]]


def test_elements_of_different_shapes_fall_back_and_fail_as_their_batch():
    def gen():
        yield from ([1, 2], [3, 4], [5, 6, 7], [8, 9], [10, 11])
    dataset = tf.data.Dataset.from_generator(gen, tf.int64, [None]).map(lambda x: x * 2).batch(2)
    out = _drain(dataset)
    assert [o if isinstance(o, str) else o.tolist() for o in out] == [[[2, 4], [6, 8]], E, [[20, 22]]]


def test_a_function_that_needs_a_step_runs_in_a_session():
    dataset = tf.data.Dataset.range(6).map(lambda x: tf.cast(x, tf.float32) + tf.random_uniform([]))
    assert not dataset.vectorized
    values = np.concatenate(_drain(dataset.batch(4)))
    assert values.shape == (6,) and np.all((values >= np.arange(6)) & (values < np.arange(6) + 1))


def test_a_function_with_control_flow_runs_in_a_session():
    dataset = tf.data.Dataset.range(6).map(lambda x: tf.cond(x > 2, lambda: x * 10, lambda: x - 1))
    assert not dataset.vectorized
    assert np.concatenate(_drain(dataset.batch(4))).tolist() == [-1, 0, 1, 30, 40, 50]
