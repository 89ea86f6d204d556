"""On a real GPU: one SGD step of the MLP of ``bench_mlp_step`` (784-256-10, float32, relu, softmax
cross-entropy) through dfcore's ``Session.run`` with every op on ``GPU:0`` vs the same step written in plain
cupy; at batch 64 (launch-bound) and batch 4096 (compute-bound). Then the ring all-reduce vs NCCL table
(``python -m dfcore.bench.all_reduce --backend cupy``) with the device-to-device copy bandwidth as the limit.

Targets (printed, never asserted; issue 20): dfcore's step at most 1.3x the cupy step; ring busbw at least
0.8x NCCL's for large messages (where NCCL can run: two or more GPUs). Both steps feed the batch from the host
and end with the GPU synchronised, so each time is the whole step. Skipped (with the reason) without cupy or
without a visible GPU.
"""

import statistics

import numpy as np
from _timing import interleaved_samples_s, median_ratio, report
from bench_mlp_step import LEARNING_RATE_F32, build_graph_step, make_problem, naive_numpy_step

import dfcore
from dfcore.runtime import real_gpus

REPEATS = 31
TARGET_RATIO = 1.3
BATCHES = (64, 4096)


def cupy_step(cupy, params, x_host, labels_host, lr=LEARNING_RATE_F32):
    """The step in plain cupy (batch copied from the host, as a feed); updates the cupy ``params`` in place."""
    return naive_numpy_step(params, cupy.asarray(x_host), cupy.asarray(labels_host), lr, xp=cupy)


def _problem(batch):
    params, x, labels = make_problem()
    rng = np.random.default_rng(1)
    x = rng.random((batch, x.shape[1]), dtype=np.float32)
    labels = rng.integers(0, 10, batch).astype(np.int32)
    return params, x, labels


def _graph_step_on_gpu(params, x, labels):
    """dfcore's step with every op on GPU:0 (soft placement for what has no GPU kernel), checked once against
    numpy; returns (step callable, session, placement of the MatMuls)."""
    graph, train_op, x_ph, labels_ph, variables, init = build_graph_step(dfcore, params, x.shape[0])
    config = dfcore.ConfigProto(allow_soft_placement=True, device_count={"GPU": 1})
    sess = dfcore.Session(graph=graph, config=config)
    sess.run(init)
    feed = {x_ph: x, labels_ph: labels}
    sess.run(train_op, feed_dict=feed)
    expected = [p.copy() for p in params]
    naive_numpy_step(expected, x, labels)
    for got, want in zip(sess.run(variables), expected):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)
    return (lambda: sess.run(train_op, feed_dict=feed)), sess


def mlp_rows(cupy, batch):
    params, x, labels = _problem(batch)
    gpu_params = [cupy.asarray(p) for p in params]
    step, sess = _graph_step_on_gpu(params, x, labels)
    device = cupy.cuda.Device(0)

    def ours():
        step()
        device.synchronize()

    def theirs():
        cupy_step(cupy, gpu_params, x, labels)
        device.synchronize()

    with sess:
        ours_t, theirs_t = interleaved_samples_s([ours, theirs], REPEATS)
    return [(f"batch {batch}: dfcore Session.run step on GPU:0", statistics.median(ours_t) * 1e3, "ms"),
            (f"batch {batch}: plain cupy step", statistics.median(theirs_t) * 1e3, "ms"),
            (f"batch {batch}: ratio dfcore / cupy (paired; target <= {TARGET_RATIO})",
             median_ratio(ours_t, theirs_t), "x")]


def main():
    try:
        import cupy
    except Exception as error:  # not installed, or its CUDA libraries are missing
        print(f"skipped: cupy is not importable ({type(error).__name__}: {error})")
        return
    gpus = real_gpus.detect_gpus()
    if not gpus:
        print("skipped: no CUDA GPU is visible (or DFCORE_SIMULATED_GPUS is set)")
        return
    print(f"GPUs: {'; '.join(g.desc for g in gpus)}; cupy {cupy.__version__}, CUDA runtime "
          f"{cupy.cuda.runtime.runtimeGetVersion()}")
    rows = []
    for batch in BATCHES:
        try:
            rows += mlp_rows(cupy, batch)
        except Exception as error:  # print the diagnosis and go on to the all-reduce table
            print(f"MLP step at batch {batch} failed: {type(error).__name__}: {error}")
    print(f"MLP 784-256-10, float32, one SGD step; median of {REPEATS} interleaved rounds after warm-up")
    report(rows)
    from dfcore.bench.gpu_all_reduce import run_gpu

    print()
    run_gpu(1 << 20, 256 << 20, 4, iters=10, warmup=2)


if __name__ == "__main__":
    main()
