"""Each tf.data transformation against a pure-Python reference (equal element sequences)."""

import numpy as np
import pytest

import dfcore as tf
from tests.unit.data_helpers import as_lists, elements


def _range(n):
    return tf.data.Dataset.range(n)


def test_map_traced_once_and_matches_reference():
    calls = []

    def fn(x):
        calls.append(x)
        return {"double": x * 2, "square": tf.square(tf.cast(x, tf.float32))}

    ds = _range(6).map(fn)
    assert len(calls) == 1 and isinstance(calls[0], tf.Tensor)  # traced once, on a placeholder-like tensor
    assert ds.output_types == {"double": tf.int64, "square": tf.float32}
    assert as_lists(elements(ds)) == [{"double": 2 * i, "square": float(i * i)} for i in range(6)]
    assert len(calls) == 1


def test_map_unpacks_tuples():
    ds = tf.data.Dataset.from_tensor_slices((np.arange(4), np.arange(4) * 10)).map(lambda a, b: a + b)
    assert as_lists(elements(ds)) == [11 * i for i in range(4)]


def test_parallel_map_and_prefetch_keep_serial_order(no_thread_leak):
    def fn(x):
        return tf.reduce_sum(tf.cast(tf.range(x + 1), tf.int64))

    serial = as_lists(elements(_range(50).map(fn)))
    parallel = as_lists(elements(_range(50).map(fn, num_parallel_calls=4)))
    prefetched = as_lists(elements(_range(50).map(fn, num_parallel_calls=tf.data.experimental.AUTOTUNE)
                                   .prefetch(tf.data.experimental.AUTOTUNE)))
    assert serial == [sum(range(i + 1)) for i in range(50)] == parallel == prefetched


def test_filter():
    ds = _range(20).filter(lambda x: tf.equal(x % 3, 0))
    assert as_lists(elements(ds)) == [i for i in range(20) if i % 3 == 0]
    with pytest.raises(ValueError, match="scalar boolean"):
        _range(3).filter(lambda x: x)


@pytest.mark.parametrize("drop", [False, True])
def test_batch(drop):
    ds = _range(10).batch(4, drop_remainder=drop)
    assert ds.output_shapes.as_list() == [4 if drop else None]
    reference = [list(range(i, min(i + 4, 10))) for i in range(0, 10, 4)]
    assert as_lists(elements(ds)) == (reference[:-1] if drop else reference)


def test_batch_zero_raises_tf_error():
    iterator = _range(3).batch(0).make_initializable_iterator()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match="Batch size must be greater than zero"):
        sess.run(iterator.initializer)


def test_batch_of_ragged_elements_fails_like_tf():
    ds = _range(4).map(lambda x: tf.fill(tf.expand_dims(tf.cast(x, tf.int32), 0), 1)).batch(2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot batch tensors with different shapes"):
        elements(ds)


def test_padded_batch_shapes_and_values():
    ds = _range(5).map(lambda x: tf.fill(tf.expand_dims(tf.cast(x, tf.int32), 0), tf.cast(x, tf.int32)))
    batched = ds.padded_batch(2, padded_shapes=[None])
    assert batched.output_shapes.as_list() == [None, None]
    got = as_lists(elements(batched))
    assert got == [[[0], [1]], [[2, 2, 0], [3, 3, 3]], [[4, 4, 4, 4]]]
    tf.reset_default_graph()
    ds = _range(3).map(lambda x: tf.fill(tf.expand_dims(tf.cast(x, tf.int32), 0), 7))
    fixed = ds.padded_batch(3, padded_shapes=[5], padding_values=-1)
    assert fixed.output_shapes.as_list() == [None, 5]
    assert as_lists(elements(fixed)) == [[[-1] * 5, [7, -1, -1, -1, -1], [7, 7, -1, -1, -1]]]


def _shuffled(seed, n=100, buffer_size=100):
    tf.reset_default_graph()
    return as_lists(elements(_range(n).shuffle(buffer_size, seed=seed)))


def test_shuffle_seeded_is_deterministic_and_seed_dependent():
    first, again, other = _shuffled(7), _shuffled(7), _shuffled(8)
    assert sorted(first) == list(range(100))
    assert first == again and first != other and first != list(range(100))


def test_shuffle_graph_seed_rules():
    tf.reset_default_graph()
    tf.set_random_seed(3)
    a = as_lists(elements(_range(30).shuffle(30)))
    tf.reset_default_graph()
    tf.set_random_seed(3)
    assert as_lists(elements(_range(30).shuffle(30))) == a


def test_small_buffer_keeps_order_nearly():
    """With a buffer of b, the element at position p entered the buffer by then: it is at most p + b - 1.
    Printed statistic: the mean |value - position| (about b for a small buffer, about n/3 for a full one)."""
    shuffled = _shuffled(1, n=1000, buffer_size=10)
    displacement = np.abs(np.array(shuffled) - np.arange(1000))
    full = np.abs(np.array(_shuffled(1, n=1000, buffer_size=1000)) - np.arange(1000))
    assert sorted(shuffled) == list(range(1000))
    assert np.all(np.array(shuffled) - np.arange(1000) <= 9)
    print(f"mean displacement: buffer 10: {displacement.mean():.1f}, buffer 1000: {full.mean():.1f}")
    assert displacement.mean() < 15
    assert full.mean() > 200


def test_reshuffle_each_iteration():
    tf.reset_default_graph()
    two = as_lists(elements(_range(20).shuffle(20, seed=5).repeat(2)))
    assert sorted(two[:20]) == sorted(two[20:]) == list(range(20)) and two[:20] != two[20:]
    tf.reset_default_graph()
    same = as_lists(elements(_range(20).shuffle(20, seed=5, reshuffle_each_iteration=False).repeat(2)))
    assert same[:20] == same[20:]


def test_repeat_take_skip():
    assert as_lists(elements(_range(3).repeat(3))) == [0, 1, 2] * 3
    assert as_lists(elements(_range(3).repeat().take(7))) == ([0, 1, 2] * 3)[:7]
    assert as_lists(elements(_range(10).skip(7))) == [7, 8, 9]
    assert as_lists(elements(_range(10).take(-1))) == list(range(10))
    assert as_lists(elements(_range(10).skip(-1))) == []


def test_shard_then_repeat():
    got = as_lists(elements(_range(10).shard(3, 1).repeat(2)))
    assert got == list(range(10))[1::3] * 2
    iterator = _range(3).shard(2, 2).make_initializable_iterator()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="Index must be between 0 and 1"):
        sess.run(iterator.initializer)


def test_cache_replays_the_first_pass():
    calls = []

    def gen():
        calls.append(1)
        yield from range(4)

    got = as_lists(elements(tf.data.Dataset.from_generator(gen, tf.int64).cache().repeat(3)))
    assert got == list(range(4)) * 3 and len(calls) == 1


def test_interleave_cycle_and_block():
    ds = tf.data.Dataset.range(1, 4).interleave(lambda x: tf.data.Dataset.from_tensors(x).repeat(x + 1), cycle_length=2,
                                 block_length=2)

    def reference(inputs, cycle, block):
        pending, slots, out, index = list(inputs), [None] * cycle, [], 0
        while pending or any(s is not None for s in slots):
            if slots[index] is None and pending:
                value = pending.pop(0)
                slots[index] = iter([value] * (value + 1))
            if slots[index] is not None:
                taken = [v for _, v in zip(range(block), slots[index])]
                out += taken
                if len(taken) < block:
                    slots[index] = None
            index = (index + 1) % cycle
        return out

    assert as_lists(elements(ds)) == reference([1, 2, 3], 2, 2)


def test_flat_map_and_apply():
    ds = tf.data.Dataset.range(1, 4).flat_map(lambda x: tf.data.Dataset.range(x)).apply(lambda d: d.skip(1))
    assert as_lists(elements(ds)) == [v for x in range(1, 4) for v in range(x)][1:]


def test_random_ops_in_map_follow_the_graph_seed():
    def noisy():
        tf.reset_default_graph()
        tf.set_random_seed(11)
        return as_lists(elements(_range(5).map(lambda x: tf.cast(x, tf.float32) + tf.random_uniform([]))))

    first = noisy()
    assert first == noisy() and [int(v) for v in first] == list(range(5))
