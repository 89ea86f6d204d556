"""Partition graphs as TF's (issue 26): the Send/Recv pairs of a step split over two devices, as TF makes them.

Reference: TF 2.21's ``tf.compat.v1`` (``disable_v2_behavior``, ``disable_resource_variables``), the same graphs
built in a separate process on ``device_count={"CPU": 2}`` with TF's no-rewrite test config, counting the
``_Send`` and ``_HostSend`` nodes of ``RunMetadata.partition_graphs`` by direction (recorded values in each test).
What makes them equal: gradients that need only an operand's *shape* use a constant or a ``Shape`` op beside it
(``Sum``/``Mean``: ``Tile`` by the shape; broadcasting ops: reduction axes from static shapes; ``grad_ys``:
``Fill``), and ``ExponentialMovingAverage`` computes its update on the caller's device, only its ``AssignSub``
beside the shadow.
"""

import collections

import numpy as np
import pytest

import dfcore as tf
from dfcore.runtime.grappler import no_rewrite_session_config

TWO_CPUS = no_rewrite_session_config(tf.ConfigProto(device_count={"CPU": 2, "GPU": 0}))


def sends(fetches, feed=None):
    """``{(from, to): count}`` of the step's Send/Recv pairs, by the last part of the devices' names."""
    with tf.Session(config=TWO_CPUS) as sess:
        sess.run(tf.global_variables_initializer())
        metadata = tf.RunMetadata()
        sess.run(fetches, feed, options=tf.RunOptions(output_partition_graphs=True), run_metadata=metadata)
    pairs = collections.Counter()
    for graph in metadata.partition_graphs:
        for node in graph.node:
            if node.op == "_Send":
                pairs[node.device[-5:], node.attr["recv_device"].s.decode()[-5:]] += 1
    return dict(pairs)


@pytest.mark.parametrize("batch, expected", [
    (None, {("CPU:0", "CPU:1"): 2, ("CPU:1", "CPU:0"): 5}),  # TF: 7 (the hidden layer, y; 2 shapes, w2, xent, loss)
    (5, {("CPU:0", "CPU:1"): 2, ("CPU:1", "CPU:0"): 3}),  # TF: 5 (static shapes: no shape crosses)
])
def test_an_mlps_loss_and_gradients_over_two_devices_cross_as_in_tf(batch, expected):
    rng = np.random.default_rng(0)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [batch, 4], name="x")
        y = tf.placeholder(tf.int64, [batch], name="y")
        with tf.device("/cpu:0"):
            w1 = tf.Variable(rng.standard_normal((4, 8)).astype(np.float32), name="w1")
            b1 = tf.Variable(tf.zeros([8]), name="b1")
            hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
        with tf.device("/cpu:1"):
            w2 = tf.Variable(rng.standard_normal((8, 3)).astype(np.float32), name="w2")
            b2 = tf.Variable(tf.zeros([3]), name="b2")
            logits = tf.matmul(hidden, w2) + b2
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tf.gradients(loss, [w1, b1, w2, b2])
        feed = {x: rng.standard_normal((5, 4)).astype(np.float32), y: [0, 1, 2, 0, 1]}
        assert sends([loss] + grads, feed) == expected


@pytest.mark.parametrize("num_updates", [False, True])
def test_an_exponential_moving_average_of_a_variable_on_another_device_crosses_as_in_tf(num_updates):
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step() if num_updates else None
        with tf.device("/cpu:1"):
            v = tf.Variable([1.0, 2.0], name="v")
        step = tf.train.ExponentialMovingAverage(0.9, num_updates=global_step).apply([v])
        # TF: 3 either way: the shadow's and the variable's values to CPU:0, (shadow - v) * (1 - decay) back
        assert sends(step) == {("CPU:1", "CPU:0"): 2, ("CPU:0", "CPU:1"): 1}
