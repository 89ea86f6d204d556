"""Per-element errors in tf.data and argument validation, against TF 2.21's recorded behaviour.

Recorded with TF 2.21 (tensorflow-cpu, ``tf.compat.v1``, graph mode, one-shot or initializable iterator,
``sess.run(get_next)`` until OutOfRangeError): a map function (a raising ``py_func``) failing on element 2
of ``Dataset.range(n)``; "E" stands for the InvalidArgumentError of that element, "END" for OutOfRangeError.
"""

import numpy as np
import pytest

import dfcore as tf
from tests.unit.data_helpers import fails_on_two

E, END = "E", "END"


def _nan_on_two(x):
    value = tf.cast(x, tf.float32)
    return tf.check_numerics(tf.where(tf.equal(x, 2), value * np.nan, value), "element is NaN")


def _drain(dataset, initializable=False, limit=20):
    iterator = (tf.data.make_initializable_iterator(dataset) if initializable
                else tf.data.make_one_shot_iterator(dataset))
    get_next = iterator.get_next()
    out = []
    with tf.Session() as sess:
        if initializable:
            sess.run(iterator.initializer)
        for _ in range(limit):
            try:
                value = sess.run(get_next)
            except tf.errors.OutOfRangeError:
                out.append(END)
                break
            except tf.errors.InvalidArgumentError:
                out.append(E)
                continue
            out.append(value.tolist() if hasattr(value, "tolist") else tuple(v.tolist() for v in value))
    return out


def _raising_generator():
    for i in range(5):
        if i == 2:
            raise ValueError("the generator fails")
        yield i


def _range(n):
    return tf.data.Dataset.range(n)


# (pipeline, TF 2.21's sequence)
RECORDED = {
    "map": (lambda: _range(5).map(fails_on_two), [0, 1, E, 3, 4, END]),
    "batch": (lambda: _range(8).map(fails_on_two).batch(3), [E, [3, 4, 5], [6, 7], END]),
    "prefetch": (lambda: _range(8).map(fails_on_two).prefetch(2), [0, 1, E, 3, 4, 5, 6, 7, END]),
    "parallel": (lambda: _range(8).map(fails_on_two, num_parallel_calls=3), [0, 1, E, 3, 4, 5, 6, 7, END]),
    "parallel_batch": (lambda: _range(8).map(fails_on_two, num_parallel_calls=3).batch(3),
                       [E, [3, 4, 5], [6, 7], END]),
    "ignore_errors": (lambda: _range(5).map(fails_on_two).apply(tf.data.experimental.ignore_errors()),
                      [0, 1, 3, 4, END]),
    "batch_ignore_errors": (lambda: _range(8).map(fails_on_two).batch(3).apply(
        tf.data.experimental.ignore_errors()), [[3, 4, 5], [6, 7], END]),
    "take": (lambda: _range(6).map(fails_on_two).take(4), [0, 1, E, 3, 4, END]),
    "filter": (lambda: _range(6).map(fails_on_two).filter(lambda x: x >= 0), [0, 1, E, 3, 4, 5, END]),
    "repeat": (lambda: _range(6).map(fails_on_two).repeat(2), [0, 1, E, 3, 4, 5, 0, 1, E, 3, 4, 5, END]),
    "zip": (lambda: tf.data.Dataset.zip((_range(5).map(fails_on_two), _range(5))),
            [(0, 0), (1, 1), E, (3, 3), (4, 4), END]),
    "interleave": (lambda: _range(3).interleave(lambda x: _range(4).map(fails_on_two), cycle_length=2),
                   [0, 0, 1, 1, E, E, 3, 3, 0, 1, E, 3, END]),
    "padded_batch": (lambda: _range(6).map(fails_on_two).padded_batch(3, []), [E, [3, 4, 5], END]),
    "cache": (lambda: _range(6).map(fails_on_two).cache().repeat(2), [0, 1, E, 3, 4, 5, 0, 1, 3, 4, 5, END]),
    # a generator that raises ends there (Python cannot resume it): TF 2.21 gives the same
    "generator": (lambda: tf.data.Dataset.from_generator(_raising_generator, tf.int64, []), [0, 1, E, END]),
    "generator_map": (lambda: tf.data.Dataset.from_generator(_raising_generator, tf.int64, []).map(lambda x: x + 1),
                      [1, 2, E, END]),
}


@pytest.mark.parametrize("case", sorted(RECORDED))
def test_an_element_error_is_that_elements_alone(case):
    pipeline, expected = RECORDED[case]
    assert _drain(pipeline()) == expected


def test_check_numerics_in_map_fails_one_element():
    # TF 2.21: [0.0, 1.0, InvalidArgumentError, 3.0, 4.0, OutOfRangeError] (initializable iterator)
    assert _drain(_range(5).map(_nan_on_two), initializable=True) == [0.0, 1.0, E, 3.0, 4.0, END]


def test_shuffle_hands_a_failed_element_on_and_keeps_the_rest():
    # TF 2.21, shuffle(3, seed=1): the error first (raised while filling), then the five good elements
    out = _drain(_range(6).map(fails_on_two).shuffle(3, seed=1))
    assert out[0] == E and sorted(out[1:-1]) == [0, 1, 3, 4, 5] and out[-1] == END


def test_dataset_ignore_errors_method():
    assert _drain(_range(5).map(fails_on_two).ignore_errors()) == [0, 1, 3, 4, END]


def test_map_returning_none_is_rejected_when_traced():
    # TF 2.21: ValueError "Attr 'output_types' of 'MapDataset' Op passed list of length 0 less than minimum 1."
    with pytest.raises(ValueError, match="'output_types' of 'MapDataset' Op passed list of length 0"):
        _range(3).map(lambda x: None)


_INTERLEAVE = lambda x: tf.data.Dataset.range(2)  # noqa: E731
# (transformation, value, TF 2.21's message or None when accepted); all raised at initialization (run) time
SIZES = [
    (lambda d, v: d.prefetch(v), 0, None),
    (lambda d, v: d.prefetch(v), -1, None),
    (lambda d, v: d.prefetch(v), -2, "buffer_size must be >= 0 or set buffer_size to be -1 for auto-tuning"),
    (lambda d, v: d.prefetch(v), -5, "buffer_size must be >= 0 or set buffer_size to be -1 for auto-tuning"),
    (lambda d, v: d.batch(v), 0, "Batch size must be greater than zero."),
    (lambda d, v: d.batch(v), -5, "Batch size must be greater than zero."),
    (lambda d, v: d.padded_batch(v, []), -1, "Batch size must be greater than zero."),
    (lambda d, v: d.shuffle(v), 0, "buffer_size must be greater than zero or UNKNOWN_CARDINALITY"),
    (lambda d, v: d.shuffle(v), -1, "buffer_size must be greater than zero or UNKNOWN_CARDINALITY"),
    (lambda d, v: d.shuffle(v), -2, None),
    (lambda d, v: d.map(lambda x: x, num_parallel_calls=v), 0, "num_parallel_calls must be greater than zero."),
    (lambda d, v: d.map(lambda x: x, num_parallel_calls=v), -1, None),
    (lambda d, v: d.map(lambda x: x, num_parallel_calls=v), -2, "num_parallel_calls must be greater than zero."),
    (lambda d, v: d.interleave(_INTERLEAVE, cycle_length=v), 0, "cycle_length must be greater than zero."),
    (lambda d, v: d.interleave(_INTERLEAVE, cycle_length=v), -1, None),
    (lambda d, v: d.interleave(_INTERLEAVE, cycle_length=v), -5, "cycle_length must be greater than zero."),
    (lambda d, v: d.interleave(_INTERLEAVE, 2, block_length=v), -1, "block_length must be greater than zero."),
    (lambda d, v: d.interleave(_INTERLEAVE, 2, num_parallel_calls=v), 0,
     "num_parallel_calls must be greater than zero."),
    (lambda d, v: d.interleave(_INTERLEAVE, 2, num_parallel_calls=v), -1, None),
]


@pytest.mark.parametrize("index", range(len(SIZES)))
def test_size_arguments_are_validated_as_tf_at_initialization(index):
    transform, value, message = SIZES[index]
    dataset = transform(_range(10), value)  # TF builds all of these; its kernels check them
    iterator = tf.data.make_initializable_iterator(dataset)
    get_next = iterator.get_next()
    with tf.Session() as sess:
        if message is None:
            sess.run(iterator.initializer)
            assert sess.run(get_next) is not None
        else:
            with pytest.raises(tf.errors.InvalidArgumentError, match=message.replace("(", r"\(")):
                sess.run(iterator.initializer)


def test_a_fed_size_is_validated_at_initialization():
    # TF 2.21: prefetch(placeholder) fed -5 -> the same message at initializer run time; fed 0 is fine
    size = tf.placeholder(tf.int64, [])
    iterator = tf.data.make_initializable_iterator(_range(10).prefetch(size))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="buffer_size must be >= 0"):
            sess.run(iterator.initializer, {size: -5})
        sess.run(iterator.initializer, {size: 0})
        assert sess.run(iterator.get_next()) == 0
