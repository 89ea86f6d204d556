"""The graph optimizer's effect: the 1,000 scalar-add chain and the MLP 784-256-10 SGD step, optimized or not.

Targets (issue 14; printed, never asserted): the chain with dfcore's default optimizations at most TensorFlow's
default ``compat.v1`` run (printed only when TensorFlow is importable, never a dependency), and with
optimizations off (TF's no-rewrite test config) at most 2x a plain ``np.add`` loop. The MLP step is printed
with and without the optimizer (``_FusedMatMul`` replaces MatMul + bias add + Relu).
"""

import statistics

import numpy as np
from _timing import checked_graph_step, interleaved_samples_s, median_ratio, median_time_s, one_blas_thread, report
from bench_executor_overhead import CHAIN_LENGTH, build_chain, numpy_chain
from bench_mlp_step import build_graph_step, make_problem, naive_numpy_step, tensorflow_v1

import dfcore as tf
from dfcore.runtime.grappler import no_rewrite_session_config

REPEATS = 31
CHAIN_TARGET_OFF = 2.0


def chain_rows():
    """Chain: default vs no-rewrite vs the numpy loop, interleaved; TF's default run when importable."""
    x0 = np.zeros([1], dtype=np.float32)
    one = np.array(1.0, dtype=np.float32)
    graph, x, y = build_chain()
    expected = numpy_chain(x0, one)
    with tf.Session(graph=graph) as fast, tf.Session(graph=graph, config=no_rewrite_session_config()) as slow:
        for sess in (fast, slow):
            np.testing.assert_array_equal(sess.run(y, {x: x0}), expected)  # same result, else no comparison
        removed = len(graph.get_operations()) - sum(len(p.nodes) for p in fast.partitions(y, {x: x0}).values())
        on_t, off_t, numpy_t = interleaved_samples_s(
            [lambda: fast.run(y, {x: x0}), lambda: slow.run(y, {x: x0}), lambda: numpy_chain(x0, one)], REPEATS)
    on_s, off_s, numpy_s = (statistics.median(t) for t in (on_t, off_t, numpy_t))
    rows = [(f"dfcore default optimizations, whole chain ({removed} nodes fewer)", on_s * 1e6, "us"),
            ("dfcore no-rewrite config, whole chain", off_s * 1e6, "us"),
            ("plain np.add loop, whole chain", numpy_s * 1e6, "us"),
            ("ratio optimized / numpy loop (paired)", median_ratio(on_t, numpy_t), "x"),
            (f"ratio no-rewrite / numpy loop (paired; target <= {CHAIN_TARGET_OFF})", median_ratio(off_t, numpy_t),
             "x")]
    v1 = tensorflow_v1()
    if v1 is not None:
        tf_graph = v1.Graph()
        with tf_graph.as_default():
            tx = v1.placeholder(v1.float32, shape=[1])
            ty = tx
            for _ in range(CHAIN_LENGTH):
                ty = v1.add(ty, 1.0)
        with v1.Session(graph=tf_graph) as sess:
            tf_s = median_time_s(lambda: sess.run(ty, {tx: x0}), REPEATS)
        rows.append(("TensorFlow compat.v1 default, whole chain", tf_s * 1e6, "us"))
        rows.append(("ratio dfcore optimized / TensorFlow default (target <= 1)", on_s / tf_s, "x"))
    return rows


def mlp_rows():
    """MLP step with the default optimizer vs the no-rewrite config, interleaved."""
    params, x, labels = make_problem()
    on_step, on_sess = checked_graph_step(tf, build_graph_step, naive_numpy_step, params, x, labels)
    off_step, off_sess = checked_graph_step(tf, build_graph_step, naive_numpy_step, params, x, labels,
                                            config=no_rewrite_session_config())
    with on_sess, off_sess:
        on_t, off_t = interleaved_samples_s([on_step, off_step], REPEATS)
    return [("MLP step, default optimizations", statistics.median(on_t) * 1e3, "ms"),
            ("MLP step, no-rewrite config", statistics.median(off_t) * 1e3, "ms"),
            ("ratio optimized / no-rewrite (paired)", median_ratio(on_t, off_t), "x")]


def main():
    """Print both tables."""
    print(f"chain of {CHAIN_LENGTH} scalar adds, median of {REPEATS} interleaved rounds after warm-up"
          + ("" if tensorflow_v1() else "; tensorflow not installed"))
    report(chain_rows())
    print("MLP 784-256-10, batch 64, one SGD step")
    report(mlp_rows())


if __name__ == "__main__":
    with one_blas_thread():
        main()
