"""A first ``Session.run`` (prune, place, optimize, partition, compile, run) does work linear in the graph's size.

Reference: TF's graph passes are O(nodes + edges) (``grappler``'s ``NodeMap``, the placer's union-find, the
partitioner's one walk over the edges). Nothing here is timed: the Python interpreter's trace hook counts the
calls and lines the engine executes for one first run, for a graph and the same graph four times larger. A
linear engine does at most four times the work (fixed costs make it a little less); one pass that touches
every node once per node would do sixteen times as much. The bound (4.4) leaves 10% for what grows
slowly (the per-size spread of ``sorted``).
"""

import sys

import numpy as np
import pytest

import dfcore as tf
from dfcore.runtime.grappler import no_rewrite_session_config

SMALL = 200  # ops (the larger graph has four times as many)
BOUND = 4.4


def _chain(num_ops):
    """``y = y * c + b`` on CPU:0, every 7th step on CPU:1 (a _Send/_Recv pair each way)."""
    graph = tf.Graph()
    with graph.as_default():
        c, b = tf.constant(np.float32(1.0001)), tf.constant(np.float32(0.5))
        x = tf.placeholder(tf.float32, [4], name="x")
        y = x
        for step in range(num_ops // 2):
            with tf.device("/cpu:1" if step % 7 == 6 else "/cpu:0"):
                y = y * c + b
    return graph, x, y, []


def _multiply_chain_gradient(num_ops):
    """``y = x * v * v * ...`` and its gradient with respect to ``v`` (every gradient op reads ``v``)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        v = tf.Variable(np.ones(4, np.float32))
        y = x * v
        for _ in range(num_ops // 8):
            y = y * v
        gradient = tf.gradients(tf.reduce_sum(y), [v])[0]
        init = tf.global_variables_initializer()
    return graph, x, gradient, [init]


def _traced_events(build, num_ops, config):
    """Python calls, lines and returns executed by the first run of the graph ``build(num_ops)`` makes."""
    graph, x, y, setup = build(num_ops)
    with tf.Session(graph=graph, config=config) as sess:
        for op in setup:
            sess.run(op)
        count = 0

        def tracer(frame, event, arg):
            nonlocal count
            count += 1
            return tracer

        sys.settrace(tracer)
        try:
            value = sess.run(y, {x: np.ones(4, np.float32)})
        finally:
            sys.settrace(None)
    assert value.shape == (4,)
    return count


@pytest.mark.parametrize("build", [_chain, _multiply_chain_gradient], ids=["chain", "gradient"])
@pytest.mark.parametrize("rewrites", [True, False], ids=["optimizer", "no-rewrites"])
def test_first_run_work_grows_linearly_with_the_graph(build, rewrites):
    config = tf.ConfigProto(device_count={"CPU": 2})
    if not rewrites:
        config = no_rewrite_session_config(config)
    small = _traced_events(build, SMALL, config)
    large = _traced_events(build, 4 * SMALL, config)
    assert large / small <= BOUND, (small, large)
