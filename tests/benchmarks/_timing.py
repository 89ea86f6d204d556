"""Timing helpers shared by the benchmarks: warm-up, median of repeated runs, BLAS pinned to one thread.

Benchmarks print ratios measured side by side in one run; they never assert on time.
"""

import contextlib
import os
import statistics
import time


def median_time_s(fn, repeats, warmup=3, inner=1):
    """Median wall time in seconds of one call of ``fn`` over ``repeats`` samples.

    Args:
        fn: a callable with no arguments.
        repeats: number of timed samples.
        warmup: untimed calls made first (caches, lazy plans, allocator).
        inner: calls per sample; the sample is divided by it (for very short ``fn``).
    """
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def interleaved_samples_s(fns, repeats, warmup=3, inner=1):
    """Per-call wall times (s) of several callables measured in alternation.

    Each round times every callable once, in a rotating order, so slow phases of a
    shared, noisy machine hit all of them alike; ratios are then taken round by
    round (:func:`median_ratio`). Returns one list of ``repeats`` samples per callable.
    """
    for fn in fns:
        for _ in range(warmup):
            fn()
    samples = [[] for _ in fns]
    for r in range(repeats):
        for k in range(len(fns)):
            i = (r + k) % len(fns)
            start = time.perf_counter()
            for _ in range(inner):
                fns[i]()
            samples[i].append((time.perf_counter() - start) / inner)
    return samples


def median_ratio(numerator, denominator):
    """Median over rounds of ``numerator[r] / denominator[r]`` (paired samples)."""
    return statistics.median(a / b for a, b in zip(numerator, denominator))


@contextlib.contextmanager
def one_blas_thread():
    """Limit BLAS/OpenMP pools to one thread inside the block (threadpoolctl when installed)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # the Makefile also sets OMP/OPENBLAS/MKL_NUM_THREADS=1
        yield
        return
    with threadpool_limits(limits=1):
        yield


def blas_description():
    """One line naming the BLAS numpy runs on, its kernel and thread count (threadpoolctl when installed)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS: (install threadpoolctl to see which)"
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    return "; ".join(f"BLAS: {p.get('internal_api')} {p.get('version')} kernel={p.get('architecture')} "
                     f"threads={p.get('num_threads')}" for p in pools) or "BLAS: none found"


def machine_load():
    """``"load average 1.2 0.9 0.7 (1, 5, 15 min) on 2 CPUs"``: how busy the machine was (ratios drift with it)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min) on {os.cpu_count()} CPUs"


def target_row(label, ratio, target=None):
    """A :func:`report` row ``ratio <label> (target <= <target>; load <1-min>)`` for ``ratio`` (x)."""
    goal = f"target <= {target}; " if target is not None else ""
    return f"ratio {label} ({goal}load {os.getloadavg()[0]:.1f})", ratio, "x"


def report(rows):
    """Print ``(label, value, unit)`` rows as an aligned table."""
    width = max(len(label) for label, _, _ in rows)
    for label, value, unit in rows:
        print(f"  {label:<{width}}  {value:>10.3f} {unit}")


def checked_graph_step(v1, build_graph_step, numpy_step, params, inputs, labels, config=None, atol=1e-6):
    """Build a training step in ``v1`` (dfcore or ``tensorflow.compat.v1``) with ``build_graph_step(v1, params)``
    (returning graph, train_op, input and label placeholders, variables, init op), run it once and check it
    equals ``numpy_step`` on copies of ``params`` (same work, else the ratio means nothing); return a
    no-argument step callable and its session."""
    import numpy as np

    graph, train_op, inputs_ph, labels_ph, variables, init = build_graph_step(v1, params)
    sess = v1.Session(graph=graph, config=config)
    sess.run(init)
    feed = {inputs_ph: inputs, labels_ph: labels}
    sess.run(train_op, feed_dict=feed)
    expected = [p.copy() for p in params]
    numpy_step(expected, inputs, labels)
    for got, want in zip(sess.run(variables), expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=atol)
    return (lambda: sess.run(train_op, feed_dict=feed)), sess
