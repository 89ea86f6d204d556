"""Per-op executor overhead: ``Session.run`` of 1,000 chained scalar adds vs the same ``np.add`` calls in a loop.

Target (printed, never asserted): dfcore's per-op time at most 2.5x the plain loop's. The session runs the graph
as built (TF's no-rewrite test config): with the default optimizations the chain collapses to one add, which
``bench_graph_optimizer.py`` measures.
"""

import statistics

import numpy as np
from _tf_cases import CHAIN_LENGTH, build_chain as build_chain_in
from _timing import interleaved_samples_s, median_ratio, one_blas_thread, report

import dfcore as tf
from dfcore.runtime.grappler import no_rewrite_session_config

REPEATS = 31
TARGET_RATIO = 2.5


def build_chain(length=CHAIN_LENGTH):
    """A graph: placeholder float32 [1] followed by ``length`` ``tf.add(y, 1.0)``; returns (graph, x, y)."""
    return build_chain_in(tf, length)


def numpy_chain(x0, one, length=CHAIN_LENGTH):
    """The same computation as a plain Python loop of ``np.add`` calls."""
    y = x0
    for _ in range(length):
        y = np.add(y, one)
    return y


def main():
    """Measure both chains side by side and print per-op microseconds and their ratio."""
    x0 = np.zeros([1], dtype=np.float32)
    one = np.array(1.0, dtype=np.float32)
    graph, x, y = build_chain()
    with tf.Session(graph=graph, config=no_rewrite_session_config()) as sess:
        got = sess.run(y, feed_dict={x: x0})
        np.testing.assert_array_equal(got, numpy_chain(x0, one))  # same work, else the ratio means nothing
        dfcore_t, numpy_t = interleaved_samples_s(
            [lambda: sess.run(y, feed_dict={x: x0}), lambda: numpy_chain(x0, one)], REPEATS)
    dfcore_s, numpy_s = statistics.median(dfcore_t), statistics.median(numpy_t)
    ratio = median_ratio(dfcore_t, numpy_t)
    print(f"chain of {CHAIN_LENGTH} scalar adds, median of {REPEATS} interleaved rounds after warm-up")
    report([("dfcore Session.run per op", dfcore_s / CHAIN_LENGTH * 1e6, "us"),
            ("plain np.add loop per op", numpy_s / CHAIN_LENGTH * 1e6, "us"),
            (f"ratio dfcore / numpy (paired; target <= {TARGET_RATIO})", ratio, "x")])


if __name__ == "__main__":
    with one_blas_thread():
        main()
