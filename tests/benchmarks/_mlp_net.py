"""The MLP 784-256-10 SGD step (batch 64, float32, relu, softmax cross-entropy) of ``bench_mlp_step.py``: its
problem, its TF1 graph and its numpy step. This module imports no dfcore: TensorFlow's side runs it in its
own process (:mod:`_tf_process`)."""

import numpy as np
from _timing import checked_graph_step

BATCH, N_IN, N_HIDDEN, N_OUT = 64, 784, 256, 10
LEARNING_RATE = 0.1
LEARNING_RATE_F32 = np.float32(LEARNING_RATE)  # the numpy baselines step in float32


def make_problem(seed=0):
    """Initial parameters (W1, b1, W2, b2), inputs [BATCH, N_IN] and int32 labels [BATCH], all float32."""
    rng = np.random.default_rng(seed)
    params = (
        (rng.standard_normal((N_IN, N_HIDDEN)) * np.sqrt(2.0 / N_IN)).astype(np.float32),
        np.zeros(N_HIDDEN, np.float32),
        (rng.standard_normal((N_HIDDEN, N_OUT)) * np.sqrt(2.0 / N_HIDDEN)).astype(np.float32),
        np.zeros(N_OUT, np.float32),
    )
    x = rng.random((BATCH, N_IN), dtype=np.float32)
    labels = rng.integers(0, N_OUT, BATCH).astype(np.int32)
    return params, x, labels


def build_graph_step(v1, params, batch=BATCH):
    """The step as a TF1 graph in namespace ``v1`` (``dfcore`` or ``tensorflow.compat.v1``) for ``batch`` rows.

    Returns (graph, train_op, x placeholder, labels placeholder, list of the four variables).
    """
    graph = v1.Graph()
    with graph.as_default():
        x = v1.placeholder(v1.float32, [batch, N_IN], name="x")
        labels = v1.placeholder(v1.int32, [batch], name="labels")
        w1, b1, w2, b2 = (v1.Variable(p, name=n) for p, n in zip(params, ("W1", "b1", "W2", "b2")))
        hidden = v1.nn.relu(v1.matmul(x, w1) + b1)
        logits = v1.matmul(hidden, w2) + b2
        loss = v1.reduce_mean(v1.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        train_op = v1.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss)
        init = v1.global_variables_initializer()
    return graph, train_op, x, labels, [w1, b1, w2, b2], init


def naive_numpy_step(params, x, labels, lr=LEARNING_RATE_F32, xp=np):
    """The step in numpy (or ``xp``, another array module with numpy's API: cupy) with fresh temporaries;
    updates ``params`` in place with ``W -= lr * dW`` and returns the loss."""
    w1, b1, w2, b2 = params
    z1 = x @ w1 + b1
    hidden = xp.maximum(z1, 0)
    logits = hidden @ w2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = xp.exp(shifted)
    total = exp.sum(axis=1, keepdims=True)
    rows = xp.arange(labels.shape[0])
    loss = xp.mean(xp.log(total[:, 0]) - shifted[rows, labels])
    dlogits = exp / total
    dlogits[rows, labels] -= 1
    dlogits /= np.float32(labels.shape[0])
    dw2 = hidden.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dz1 = (dlogits @ w2.T) * (z1 > 0)
    dw1 = x.T @ dz1
    db1 = dz1.sum(axis=0)
    for p, g in zip(params, (dw1, db1, dw2, db2)):
        p -= lr * g
    return loss


def tf_step():
    """TF's ``compat.v1`` Session step (one intra- and one inter-op thread), checked against
    :func:`naive_numpy_step`: ``{"tf step": callable}`` (for :mod:`_tf_process`)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    params, x, labels = make_problem()
    config = v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    step, _ = checked_graph_step(v1, build_graph_step, naive_numpy_step, params, x, labels, config=config)
    return {"tf step": step}
