"""Many devices in one process: inter-op parallelism and the cost of towers.

(a) Two independent 2000×2000 float32 matmuls on ``GPU:0`` and ``GPU:1`` (simulated
devices, numpy kernels), ``inter_op_parallelism_threads=2`` vs ``1``, BLAS pinned to
one thread: the speed-up of running the two partitions on two threads (target ≥ 1.8×). Each session has its
own pool (``use_per_session_threads``): TF's global pool would take the first session's size for both.
(b) One training step of the digits MLP (batch 64) on 4 towers (4 simulated GPUs,
variables on the CPU, gradients averaged) vs the same step on one device.
Ratios of paired, interleaved samples; never a pass/fail on time.
"""

import statistics

import numpy as np
from _timing import interleaved_samples_s, median_ratio, one_blas_thread, report

import dfcore as tf
from dfcore.examples import multi_tower

REPEATS = 15
TARGET_SPEEDUP = 1.8


def two_matmuls_step(threads):
    """A no-argument callable running the two-matmul step on a session with ``threads`` inter-op threads."""
    graph = tf.Graph()
    rng = np.random.default_rng(0)
    with graph.as_default():
        products = []
        for i in range(2):
            with tf.device(f"/gpu:{i}"):
                a = tf.constant(rng.standard_normal((2000, 2000)).astype(np.float32))
                products.append(tf.matmul(a, a).op)
        step = tf.group(*products)
    # its own pool: without use_per_session_threads the first session of the process sizes one global pool that
    # every later session shares (TF's rule), so the 2-thread session would run on the 1-thread session's pool
    config = tf.ConfigProto(inter_op_parallelism_threads=threads, use_per_session_threads=True)
    sess = tf.Session(graph=graph, config=config)
    sess.run(step)
    return (lambda: sess.run(step)), sess


def tower_step(num_towers):
    """A no-argument callable running one multi-tower SGD step (1 tower = the single-device step)."""
    graph = tf.Graph()
    rng = np.random.default_rng(0)
    with graph.as_default():
        model = multi_tower.build_multi_tower(num_towers, 64, 64, 10, hidden=64)
        init = tf.global_variables_initializer()
    config = tf.ConfigProto(device_count={"CPU": 1, "GPU": max(num_towers, 1)})
    sess = tf.Session(graph=graph, config=config)
    sess.run(init)
    feed = {model["x"]: rng.random((64, 64)).astype(np.float32), model["y"]: rng.integers(0, 10, 64)}
    sess.run(model["train_op"], feed)
    return (lambda: sess.run(model["train_op"], feed)), sess


def main():
    """Print the parallel speed-up and the tower overhead."""
    serial, s1 = two_matmuls_step(1)
    parallel, s2 = two_matmuls_step(2)
    with s1, s2:
        serial_t, parallel_t = interleaved_samples_s([serial, parallel], REPEATS, warmup=1)
    print(f"two independent 2000x2000 float32 matmuls on GPU:0 and GPU:1; median of {REPEATS} interleaved rounds")
    report([("inter_op_parallelism_threads=1", statistics.median(serial_t) * 1e3, "ms"),
            ("inter_op_parallelism_threads=2", statistics.median(parallel_t) * 1e3, "ms"),
            (f"speed-up (paired; target >= {TARGET_SPEEDUP})", median_ratio(serial_t, parallel_t), "x")])

    single, s3 = tower_step(1)
    towers, s4 = tower_step(4)
    with s3, s4:
        single_t, towers_t = interleaved_samples_s([single, towers], 101)
    print("\ndigits MLP 64-64-10, batch 64, one SGD step")
    report([("single device", statistics.median(single_t) * 1e3, "ms"),
            ("4 towers on 4 simulated GPUs", statistics.median(towers_t) * 1e3, "ms"),
            ("ratio 4 towers / single device (paired)", median_ratio(towers_t, single_t), "x")])


if __name__ == "__main__":
    with one_blas_thread():
        main()
