"""The digits MLP fed three ways: a ``feed_dict`` loop, a Python generator feeding ``feed_dict``, and ``tf.data``.

Each image goes through a deliberately slow ``decode`` (``decode_s`` seconds of sleep in a ``tf.py_func``
or in Python) standing in for JPEG decoding, as in TF's input-pipeline performance guide
(https://www.tensorflow.org/guide/data_performance: "parallelizing data transformation", "prefetching").
Lesson 11 and ``tests/benchmarks/bench_input_pipeline.py`` use these builders.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import dfcore as tf
from dfcore.examples.digits import build_mlp
from dfcore.examples.digits_data import DigitsSplit


def decode(image: np.ndarray, decode_s: float) -> np.ndarray:
    """``image`` unchanged after ``decode_s`` seconds of sleep (the stand-in for a JPEG decoder)."""
    if decode_s > 0:
        time.sleep(decode_s)
    return np.asarray(image, dtype=np.float32)


@dataclasses.dataclass
class DigitsModel:
    """The MLP's graph: ``x`` [batch, 64] float32 and ``y`` [batch] int64 in, ``train_op`` and ``loss`` out."""

    graph: Any
    x: Any
    y: Any
    train_op: Any
    loss: Any
    init: Any


def build_model(x: Any, y: Any, hidden: int = 64, learning_rate: float = 0.003, seed: int = 0) -> DigitsModel:
    """The digits MLP of :mod:`dfcore.examples.digits` on ``x``/``y`` (placeholders or ``get_next()``),
    in the default graph."""
    logits = build_mlp(x, hidden, DigitsSplit.num_classes, seed)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss)
    return DigitsModel(tf.get_default_graph(), x, y, train_op, loss, tf.global_variables_initializer())


def feed_dict_model(seed: int = 0) -> DigitsModel:
    """The model on placeholders ``x``/``y``, in a new graph (use ``model.graph``)."""
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        x = tf.placeholder(tf.float32, [None, DigitsSplit.num_features], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        return build_model(x, y, seed=seed)


def feed_batches(data: DigitsSplit, batch_size: int, decode_s: float, seed: int = 0) -> Iterator[tuple]:
    """Forever: shuffled batches ``(x, y)`` of the training split, each image decoded in Python."""
    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(len(data.x_train))
        for start in range(0, len(order) - batch_size + 1, batch_size):
            index = order[start:start + batch_size]
            yield np.stack([decode(data.x_train[i], decode_s) for i in index]), data.y_train[index]


def feed_fn(model: DigitsModel, batches: Iterator[tuple]) -> Callable[[], dict]:
    """A function returning the next ``feed_dict`` of ``batches`` for ``model``'s placeholders."""
    def next_feed() -> dict:
        xb, yb = next(batches)
        return {model.x: xb, model.y: yb}
    return next_feed


def dataset(data: DigitsSplit, batch_size: int, decode_s: float, num_parallel_calls: int | None = None,
            prefetch: int = 0, shuffle_buffer: int = 0, seed: int = 0,
            simulated_decode_s: float | None = None) -> Any:
    """``from_tensor_slices`` of the training split → (``shuffle``) → ``repeat`` → ``map(decode)`` with
    ``num_parallel_calls`` → ``batch(drop_remainder=True)`` → (``prefetch``). ``simulated_decode_s`` is the
    map's simulated cost (default ``decode_s``)."""
    def decode_op(image, label):
        decoded = tf.py_func(lambda im: decode(im, decode_s), [image], tf.float32, stateful=False)
        decoded.set_shape([DigitsSplit.num_features])
        return decoded, label

    ds = tf.data.Dataset.from_tensor_slices((data.x_train, data.y_train))
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    ds = ds.repeat().map(decode_op, num_parallel_calls,
                         simulated_cost_s=decode_s if simulated_decode_s is None else simulated_decode_s)
    ds = ds.batch(batch_size, drop_remainder=True)
    return ds.prefetch(prefetch) if prefetch else ds


def dataset_model(ds: Any, seed: int = 0) -> DigitsModel:
    """The model reading ``ds`` through a one-shot iterator, in a new graph (build ``ds`` inside it)."""
    tf.set_random_seed(seed)
    x, y = ds.make_one_shot_iterator().get_next()
    return build_model(x, y, seed=seed)


def queue_model(data: DigitsSplit, batch_size: int, decode_s: float, num_threads: int = 2, capacity: int = 64,
                min_after_dequeue: int = 0, seed: int = 0) -> DigitsModel:
    """The model fed by TF 1.x queue runners, in a new graph: ``slice_input_producer`` → ``decode`` →
    ``shuffle_batch(num_threads, capacity, min_after_dequeue)``. Start the runners with
    ``tf.train.start_queue_runners(sess, coord)`` after ``model.init``."""
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        image, label = tf.train.slice_input_producer([data.x_train, data.y_train], seed=seed)
        decoded = tf.py_func(lambda im: decode(im, decode_s), [image], tf.float32, stateful=False)
        decoded.set_shape([DigitsSplit.num_features])
        x, y = tf.train.shuffle_batch([decoded, label], batch_size, capacity, min_after_dequeue,
                                      num_threads=num_threads, seed=seed)
        return build_model(x, y, seed=seed)
