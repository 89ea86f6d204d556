"""Per-op dispatch cost of eager execution, and the MLP 784-256-10 SGD step eager vs tf.function vs Session.run.

Issue 14 item 4 (printed, never asserted). Eager ops pay Python dispatch one by one (build the op, run its
shape function, place it, instantiate its kernel); a graph pays per op only the executor's loop, and a
``tf.function`` is a graph. The chain of scalar adds shows the per-op cost four ways: eager, ``Session.run``
with TF's no-rewrite config (the executor's per-op cost), a ``tf.function`` of the chain with the default
optimizer (which folds it), and a plain ``np.add`` loop. Source of the comparison: Agrawal et al., "TensorFlow
Eager" (SysML 2019), §6 (eager's per-op overhead vs staged graphs).
"""

import statistics

import numpy as np
from _timing import checked_graph_step, interleaved_samples_s, median_ratio, one_blas_thread, report
from bench_executor_overhead import numpy_chain
from bench_mlp_step import LEARNING_RATE, build_graph_step, make_problem, naive_numpy_step

import dfcore as tf
from dfcore.eager import eager_mode
from dfcore.runtime.grappler import no_rewrite_session_config

CHAIN_LENGTH = 200
REPEATS = 15


def eager_chain(x, one, length=CHAIN_LENGTH):
    y = x
    for _ in range(length):
        y = tf.add(y, one)
    return y


def chain_rows():
    """Per-op microseconds of the chain: eager, no-rewrite Session.run, tf.function (default optimizer), numpy."""
    x0 = np.zeros([1], np.float32)
    one_np = np.array(1.0, np.float32)
    graph = tf.Graph()
    with graph.as_default():
        gx = tf.placeholder(tf.float32, [1])
        gy = eager_chain(gx, one_np)
    sess = tf.Session(graph=graph, config=no_rewrite_session_config())  # not `with`: that makes graph the default
    with eager_mode():
        x, one = tf.constant(x0), tf.constant(one_np)
        compiled = tf.function(lambda x: eager_chain(x, one))  # `one` captured: a constant the optimizer can fold
        expected = numpy_chain(x0, one_np, CHAIN_LENGTH)
        for got in (eager_chain(x, one).numpy(), sess.run(gy, {gx: x0}), compiled(x).numpy()):
            np.testing.assert_array_equal(got, expected)  # same work, else the ratios mean nothing
        eager_t, graph_t, function_t, numpy_t = interleaved_samples_s(
            [lambda: eager_chain(x, one), lambda: sess.run(gy, {gx: x0}), lambda: compiled(x),
             lambda: numpy_chain(x0, one_np, CHAIN_LENGTH)], REPEATS)
    sess.close()
    per_op = [statistics.median(t) / CHAIN_LENGTH * 1e6 for t in (eager_t, graph_t, function_t, numpy_t)]
    return [(f"eager, per op (chain of {CHAIN_LENGTH} scalar adds)", per_op[0], "us"),
            ("Session.run, no-rewrite config, per op", per_op[1], "us"),
            ("tf.function, default optimizer, per op of the Python chain", per_op[2], "us"),
            ("plain np.add loop, per op", per_op[3], "us"),
            ("ratio eager / Session.run no-rewrite (paired)", median_ratio(eager_t, graph_t), "x"),
            ("ratio eager / numpy loop (paired)", median_ratio(eager_t, numpy_t), "x")]


def mlp_loss(params, x, labels):
    w1, b1, w2, b2 = params
    hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
    logits = tf.matmul(hidden, w2) + b2
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def eager_step(params, optimizer, x, labels):
    """One SGD step written the eager way: a tape, its gradients, apply_gradients."""
    with tf.GradientTape() as tape:
        loss = mlp_loss(params, x, labels)
    optimizer.apply_gradients(zip(tape.gradient(loss, params), params))
    return loss


def mlp_rows():
    """The MLP step: eager, tf.function (default optimizer), Session.run (default optimizer)."""
    init, x_np, labels_np = make_problem()
    session_step, sess = checked_graph_step(tf, build_graph_step, naive_numpy_step, init, x_np, labels_np)
    with eager_mode():
        x, labels = tf.constant(x_np), tf.constant(labels_np)
        runs = {}
        for name in ("eager", "function"):
            params = [tf.Variable(p) for p in init]
            optimizer = tf.train.GradientDescentOptimizer(LEARNING_RATE)
            if name == "function":
                step = tf.function(eager_step)
                runs[name] = lambda step=step, params=params, optimizer=optimizer: step(params, optimizer, x, labels)
            else:
                runs[name] = lambda params=params, optimizer=optimizer: eager_step(params, optimizer, x, labels)
            runs[name]()
            expected = [p.copy() for p in init]
            naive_numpy_step(expected, x_np, labels_np)
            for got, want in zip(params, expected):
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-6)  # the same step
        eager_t, function_t, session_t = interleaved_samples_s([runs["eager"], runs["function"], session_step],
                                                               REPEATS)
    sess.close()
    eager_s, function_s, session_s = (statistics.median(t) for t in (eager_t, function_t, session_t))
    return [("MLP 784-256-10 step, eager (GradientTape)", eager_s * 1e3, "ms"),
            ("MLP step, tf.function", function_s * 1e3, "ms"),
            ("MLP step, Session.run", session_s * 1e3, "ms"),
            ("ratio eager / tf.function (paired)", median_ratio(eager_t, function_t), "x"),
            ("ratio tf.function / Session.run (paired)", median_ratio(function_t, session_t), "x")]


def main():
    print(f"median of {REPEATS} interleaved rounds after warm-up; wall time on this machine")
    report(chain_rows() + mlp_rows())


if __name__ == "__main__":
    with one_blas_thread():
        main()
