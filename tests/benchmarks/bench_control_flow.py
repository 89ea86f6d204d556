"""Dynamic control flow: a ``tf.while_loop`` of 10,000 scalar iterations vs the same loop driven from Python
(one ``Session.run`` per iteration) vs a plain numpy loop. Prints µs per iteration and ratios (never asserts).

The loop is ``i, x = i + 1, x * 0.999 + 1.0`` while ``i < N``: each iteration runs the loop machinery
(Merge, Less, LoopCond, Switch, Identity, NextIteration per variable) and two arithmetic ops.
"""

import statistics

import numpy as np
from _timing import interleaved_samples_s, one_blas_thread, report

import dfcore as tf

ITERATIONS = 10_000
PYTHON_ITERATIONS = 1_000  # the Session.run-per-iteration loop is timed on fewer iterations, per iteration
REPEATS = 5


def build_loop(n=ITERATIONS):
    """A graph with the whole loop as one while_loop; returns (graph, final x)."""
    graph = tf.Graph()
    with graph.as_default():
        _, x = tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * 0.999 + 1.0),
                             (tf.constant(0), tf.constant(0.0, tf.float64)))
    return graph, x


def build_step():
    """A graph with one iteration's arithmetic: x fed, x * 0.999 + 1.0 fetched; returns (graph, x, next)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [], name="x")
        nxt = x * 0.999 + 1.0
    return graph, x, nxt


def numpy_loop(n=ITERATIONS):
    x = np.float64(0.0)
    i = 0
    while i < n:
        i, x = i + 1, x * 0.999 + 1.0
    return x


def main():
    """Measure the three loops side by side and print per-iteration microseconds and ratios."""
    loop_graph, loop_x = build_loop()
    step_graph, step_x, step_next = build_step()
    with tf.Session(graph=loop_graph) as loop_sess, tf.Session(graph=step_graph) as step_sess:
        def python_loop(n=PYTHON_ITERATIONS):
            x = 0.0
            for _ in range(n):
                x = step_sess.run(step_next, {step_x: x})
            return x

        np.testing.assert_allclose(loop_sess.run(loop_x), numpy_loop())  # same work, else ratios mean nothing
        np.testing.assert_allclose(python_loop(), numpy_loop(PYTHON_ITERATIONS))
        while_t, python_t, numpy_t = interleaved_samples_s(
            [lambda: loop_sess.run(loop_x), python_loop, numpy_loop], REPEATS, warmup=1)
    while_us = statistics.median(while_t) / ITERATIONS * 1e6
    python_us = statistics.median(python_t) / PYTHON_ITERATIONS * 1e6
    numpy_us = statistics.median(numpy_t) / ITERATIONS * 1e6
    print(f"while_loop of {ITERATIONS} scalar iterations (Session.run loop: {PYTHON_ITERATIONS} iterations), "
          f"median of {REPEATS} interleaved rounds")
    report([("tf.while_loop, per iteration", while_us, "us"),
            ("Python loop of Session.run, per iteration", python_us, "us"),
            ("plain numpy loop, per iteration", numpy_us, "us"),
            ("ratio while_loop / numpy", while_us / numpy_us, "x"),
            ("ratio Session.run loop / while_loop", python_us / while_us, "x")])


if __name__ == "__main__":
    with one_blas_thread():
        main()
