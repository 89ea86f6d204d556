"""Two rows of issue 32's table as TF1 graphs in any ``v1`` namespace (dfcore or ``tensorflow.compat.v1``), for
``bench_vs_tensorflow.py``: the 1,000-add chain run with every rewrite off, and the MLP 784-256-10 step split
over 4 CPU devices (towers) with the gradients averaged on CPU:0. This module imports no dfcore: TensorFlow's
side runs it in its own process (:mod:`_tf_process`).
"""

import numpy as np
from _mlp_net import BATCH, LEARNING_RATE, make_problem, naive_numpy_step
from _timing import checked_graph_step

CHAIN_LENGTH = 1000
TOWERS = 4


def build_chain(v1, length=CHAIN_LENGTH):
    """A graph: placeholder float32 [1] followed by ``length`` ``add(y, 1.0)``; returns (graph, x, y)."""
    graph = v1.Graph()
    with graph.as_default():
        x = v1.placeholder(v1.float32, shape=[1], name="x")
        y = x
        for _ in range(length):
            y = v1.add(y, 1.0)
    return graph, x, y


def build_towers(v1, params, towers=TOWERS):
    """The MLP step with the batch split over ``towers`` CPU devices, variables and the averaged update on CPU:0.

    Returns (graph, train_op, x placeholder, labels placeholder, variables, init op), as
    ``_timing.checked_graph_step`` expects.
    """
    graph = v1.Graph()
    with graph.as_default():
        x = v1.placeholder(v1.float32, [BATCH, params[0].shape[0]], name="x")
        labels = v1.placeholder(v1.int32, [BATCH], name="labels")
        with v1.device("/cpu:0"):
            variables = [v1.Variable(p, name=n) for p, n in zip(params, ("W1", "b1", "W2", "b2"))]
        w1, b1, w2, b2 = variables
        optimizer = v1.train.GradientDescentOptimizer(LEARNING_RATE)
        tower_grads = []
        for i, (xs, ys) in enumerate(zip(v1.split(x, towers), v1.split(labels, towers))):
            with v1.device(f"/cpu:{i}"):
                logits = v1.matmul(v1.nn.relu(v1.matmul(xs, w1) + b1), w2) + b2
                loss = v1.reduce_mean(v1.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=logits))
                tower_grads.append([g for g, _ in optimizer.compute_gradients(loss, variables)])
        with v1.device("/cpu:0"):
            averaged = [(v1.add_n(list(grads)) / float(towers), var) for grads, var in zip(zip(*tower_grads),
                                                                                          variables)]
            train_op = optimizer.apply_gradients(averaged)
        init = v1.global_variables_initializer()
    return graph, train_op, x, labels, variables, init


def chain_config(v1):
    """One intra- and one inter-op thread in the session's own pool (``use_per_session_threads``), as the tower
    step's. Without a pool of its own a session runs on the process-global inter-op pool, which the process's
    first session sizes (TF's rule, and dfcore's): under ``run_all.py`` that is another bench's session, and
    dfcore's tower step then ran three towers on a 2-thread pool while TF's ran on one thread (2.49 against
    1.89 ms a step, measured)."""
    return v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1,
                          use_per_session_threads=True)


def tower_config(v1):
    """4 CPU devices, one intra- and one inter-op thread in the session's own pool (see :func:`chain_config`)."""
    return v1.ConfigProto(device_count={"CPU": TOWERS}, intra_op_parallelism_threads=1, inter_op_parallelism_threads=1,
                          use_per_session_threads=True)


def checked_towers(v1):
    """The tower step in ``v1``, checked against the numpy step on the whole batch: a no-argument callable and
    its session."""
    params, x, labels = make_problem()
    return checked_graph_step(v1, build_towers, naive_numpy_step, [p.copy() for p in params], x, labels,
                              config=tower_config(v1))


def chain_feed():
    """The chain's input, float32 [1]."""
    return np.zeros([1], np.float32)


# -- TensorFlow's side (run in its own process by _tf_process) ----------------------------------------------
def tf_cases():
    """TF's chain (every grappler rewrite off, graph optimizer level L0: TF's no-rewrite test config) and tower
    step: ``{"tf chain": callable, "tf towers": callable}``."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph, x, y = build_chain(v1)
    config = chain_config(v1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = v1.OptimizerOptions.L0
    sess = v1.Session(graph=graph, config=config)
    feed = {x: chain_feed()}
    assert sess.run(y, feed)[0] == CHAIN_LENGTH
    towers, _ = checked_towers(v1)
    return {"tf chain": lambda: sess.run(y, feed), "tf towers": towers}
