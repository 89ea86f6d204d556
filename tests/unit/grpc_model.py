"""The small between-graph model of tests/unit/test_grpc_*.py: weights on the ps, a linear model and its SGD
step on the worker (built the same way in a task process and in the test's in-process reference)."""

import numpy as np

import dfcore as tf


def feed_values(step):
    """The inputs of step ``step`` (deterministic)."""
    return np.random.default_rng(step).standard_normal((4, 3)).astype(np.float32)


def build_model():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.arange(3, dtype=np.float32).reshape(3, 1) / 10, name="w")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [4, 3], name="x")
        y = tf.matmul(x, w)
        loss = tf.reduce_mean(tf.square(y - 1.0))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return {"w": w, "x": x, "loss": loss, "train": train, "init": tf.global_variables_initializer()}
