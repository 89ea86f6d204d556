"""Helpers of the tf.data tests: run a dataset to its end and compare with a pure-Python reference."""

import numpy as np

import dfcore as tf


def elements(dataset, feed_dict=None, session=None):
    """Every element of ``dataset`` (one-shot or, with feeds, initializable iterator), as numpy values."""
    if feed_dict:
        iterator = dataset.make_initializable_iterator()
    else:
        iterator = dataset.make_one_shot_iterator()
    next_element = iterator.get_next()
    own = session is None
    session = session or tf.Session()
    try:
        if feed_dict:
            session.run(iterator.initializer, feed_dict)
        out = []
        while True:
            try:
                out.append(session.run(next_element))
            except tf.errors.OutOfRangeError:
                return out
    finally:
        if own:
            session.close()


def as_lists(values):
    """Nested numpy values as plain Python lists (for equality with a reference)."""
    if isinstance(values, dict):
        return {k: as_lists(v) for k, v in values.items()}
    if isinstance(values, (tuple, list)):
        return [as_lists(v) for v in values]
    return np.asarray(values).tolist()


def fails_on_two(x):
    """A map function (a ``py_func``) that raises ValueError on element 2 and returns the others unchanged."""
    def bad(value):
        if value == 2:
            raise ValueError("boom")
        return value
    return tf.py_func(bad, [x], tf.int64)
