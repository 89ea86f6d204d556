"""The between-graph models of tests/unit/test_grpc_*.py, built the same way in a task process and in the test's
in-process reference: weights on the ps, the model and its training step on the worker. ``MODELS`` names them
(a task's ``model`` mode takes the name): ``sgd``, a linear model and its SGD step; ``adam``, an MNIST-sized MLP
(784x100 hidden layer, 10 classes) and its Adam step (its slots' initializers are ``Fill`` s, folded to ``Const`` s
by the graph optimizer)."""

import numpy as np

import dfcore as tf


def feed_values(step, shape=(4, 3)):
    """The inputs of step ``step`` (deterministic)."""
    return np.random.default_rng(step).standard_normal(shape).astype(np.float32)


def build_model():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.arange(3, dtype=np.float32).reshape(3, 1) / 10, name="w")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [4, 3], name="x")
        y = tf.matmul(x, w)
        loss = tf.reduce_mean(tf.square(y - 1.0))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return {"w": w, "x": x, "loss": loss, "train": train, "init": tf.global_variables_initializer(),
            "shape": (4, 3)}


def build_adam_model():
    rng = np.random.default_rng(0)
    with tf.device("/job:ps/task:0"):
        hid_w = tf.Variable(rng.standard_normal((784, 100)).astype(np.float32) / 28, name="hid_w")
        hid_b = tf.Variable(tf.zeros([100]), name="hid_b")
        sm_w = tf.Variable(rng.standard_normal((100, 10)).astype(np.float32) / 10, name="sm_w")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [32, 784], name="x")
        labels = tf.constant(np.arange(32) % 10, dtype=tf.int64)
        hidden = tf.nn.relu(tf.matmul(x, hid_w) + hid_b)
        logits = tf.matmul(hidden, sm_w)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        train = tf.train.AdamOptimizer(0.01).minimize(loss)
    return {"w": hid_w, "x": x, "loss": loss, "train": train, "init": tf.global_variables_initializer(),
            "shape": (32, 784)}


MODELS = {"sgd": build_model, "adam": build_adam_model}
