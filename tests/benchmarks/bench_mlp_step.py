"""One SGD step of an MLP 784-256-10 (batch 64, float32, relu, softmax cross-entropy) via ``Session.run``
vs the same step in plain numpy, written (i) naively and (ii) with every buffer preallocated.

Targets (printed, never asserted; issues 14 and 32): dfcore's step at most 1.1x the preallocated numpy step and
no slower than TF's; 0 new buffers per step after warm-up, as counted by the device allocators
(:mod:`dfcore.runtime.allocator`). TF's own ``compat.v1`` Session step (one intra- and one inter-op thread) runs
in a process of its own (:mod:`_tf_process`: ``$DFCORE_TF_PYTHON``, or this interpreter when it can import
``tensorflow``, never a dependency), its samples interleaved with dfcore's.
"""

import os
import statistics

import numpy as np
from _mlp_net import (
    BATCH,
    LEARNING_RATE,
    LEARNING_RATE_F32,
    N_HIDDEN,
    N_IN,
    N_OUT,
    build_graph_step,
    make_problem,
    naive_numpy_step,
)
from _tf_process import TFProcess, interleaved_timers, timer
from _timing import checked_graph_step, machine_load, median_ratio, one_blas_thread, report, target_row

import dfcore

__all__ = ["LEARNING_RATE", "LEARNING_RATE_F32", "build_graph_step", "make_problem", "naive_numpy_step",
           "tensorflow_v1"]  # what the other benchmarks take from here

REPEATS = 51
TARGET_RATIO = 1.1
TARGET_VS_TF = 1.0  # issue 32
ALLOCATION_STEPS = 20


class PreallocatedNumpyStep:
    """The step in numpy with every buffer allocated once and written with ``out=``; updates params in place."""

    def __init__(self, params, x, labels, lr=LEARNING_RATE):
        self.params, self.x, self.labels = params, x, labels
        self.lr = np.float32(lr)
        self.inv_batch = np.float32(1.0 / len(labels))
        self.rows = np.arange(len(labels))
        f32 = np.float32
        self.z1 = np.empty((BATCH, N_HIDDEN), f32)
        self.hidden = np.empty_like(self.z1)
        self.mask = np.empty(self.z1.shape, bool)
        self.dz1 = np.empty_like(self.z1)
        self.logits = np.empty((BATCH, N_OUT), f32)
        self.probs = np.empty_like(self.logits)
        self.row_max = np.empty((BATCH, 1), f32)
        self.row_sum = np.empty((BATCH, 1), f32)
        self.grads = tuple(np.empty_like(p) for p in params)

    def __call__(self):
        """Run one step; returns the mean loss."""
        (w1, b1, w2, b2), x = self.params, self.x
        dw1, db1, dw2, db2 = self.grads
        np.matmul(x, w1, out=self.z1)
        np.add(self.z1, b1, out=self.z1)
        np.maximum(self.z1, 0, out=self.hidden)
        np.matmul(self.hidden, w2, out=self.logits)
        np.add(self.logits, b2, out=self.logits)
        np.max(self.logits, axis=1, keepdims=True, out=self.row_max)
        np.subtract(self.logits, self.row_max, out=self.logits)  # logits now shifted
        np.exp(self.logits, out=self.probs)
        np.sum(self.probs, axis=1, keepdims=True, out=self.row_sum)
        np.divide(self.probs, self.row_sum, out=self.probs)
        np.log(self.row_sum, out=self.row_sum)
        loss = np.mean(self.row_sum[:, 0] - self.logits[self.rows, self.labels])
        self.probs[self.rows, self.labels] -= 1  # probs now d(loss_i)/d(logits)
        np.multiply(self.probs, self.inv_batch, out=self.probs)
        np.matmul(self.hidden.T, self.probs, out=dw2)
        np.sum(self.probs, axis=0, out=db2)
        np.matmul(self.probs, w2.T, out=self.dz1)
        np.greater(self.z1, 0, out=self.mask)
        np.multiply(self.dz1, self.mask, out=self.dz1)
        np.matmul(x.T, self.dz1, out=dw1)
        np.sum(self.dz1, axis=0, out=db1)
        for p, g in zip(self.params, self.grads):
            np.multiply(g, self.lr, out=g)
            np.subtract(p, g, out=p)
        return loss


def tensorflow_v1():
    """``tensorflow.compat.v1`` when TensorFlow is importable, else None (it is never a dependency)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's start-up log out of the table
    try:
        import tensorflow
    except ImportError:
        return None
    return tensorflow.compat.v1


def allocations_per_step(step, sess, steps=ALLOCATION_STEPS):
    """Per step, over ``steps`` steps: buffers dfcore's device allocators made for their pools (not taken from
    a pool), and small allocations they made without pooling (see :mod:`dfcore.runtime.allocator`)."""
    allocators = list(sess._resources.allocators().values())  # dfcore's allocators (no TF API reads them)
    before = [sum(a.stats().new_buffers for a in allocators), sum(a.stats().small_allocs for a in allocators)]
    for _ in range(steps):
        step()
    allocators = list(sess._resources.allocators().values())
    after = [sum(a.stats().new_buffers for a in allocators), sum(a.stats().small_allocs for a in allocators)]
    return (after[0] - before[0]) / steps, (after[1] - before[1]) / steps


def main():
    """Measure the steps side by side and print their times and ratios."""
    params, x, labels = make_problem()
    naive_params = [p.copy() for p in params]
    prealloc_params = [p.copy() for p in params]
    prealloc = PreallocatedNumpyStep(prealloc_params, x, labels)
    reference = [p.copy() for p in params]
    naive_numpy_step(reference, x, labels)
    prealloc()
    for got, want in zip(prealloc_params, reference):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)

    tf = TFProcess.start()
    dfcore_step, dfcore_sess = checked_graph_step(dfcore, build_graph_step, naive_numpy_step, params, x, labels)
    timers = [timer(dfcore_step), timer(lambda: naive_numpy_step(naive_params, x, labels)), timer(prealloc)]
    try:
        if tf is not None:
            tf.setup("_mlp_net:tf_step")
            timers.append(tf.timer("tf step"))
        with dfcore_sess:
            dfcore_t, naive_t, prealloc_t, *tf_t = interleaved_timers(timers, REPEATS)
            new_buffers, small_allocs = allocations_per_step(dfcore_step, dfcore_sess)
            if tf is not None:  # CPU time (all threads of each process): what a shared machine's load disturbs less
                cpu_t = interleaved_timers([timer(dfcore_step, clock="cpu"), tf.timer("tf step", clock="cpu")], REPEATS)
    finally:
        if tf is not None:
            tf.close()
    dfcore_s, naive_s, prealloc_s = (statistics.median(t) for t in (dfcore_t, naive_t, prealloc_t))

    rows = [("dfcore Session.run step", dfcore_s * 1e3, "ms"),
            ("numpy naive step", naive_s * 1e3, "ms"),
            ("numpy preallocated step", prealloc_s * 1e3, "ms"),
            target_row("dfcore / numpy naive (paired)", median_ratio(dfcore_t, naive_t)),
            target_row("dfcore / numpy preallocated (paired)", median_ratio(dfcore_t, prealloc_t), TARGET_RATIO),
            (f"dfcore new pooled buffers per step after warm-up (mean of {ALLOCATION_STEPS}; target 0)", new_buffers,
             ""),
            ("dfcore small allocations per step, not pooled (np.empty)", small_allocs, "")]
    if tf_t:
        rows[3:3] = [("TensorFlow compat.v1 Session.run step (1 thread, own process)",
                      statistics.median(tf_t[0]) * 1e3, "ms")]
        rows.append(target_row("dfcore / TensorFlow (paired)", median_ratio(dfcore_t, tf_t[0]), TARGET_VS_TF))
        rows.append(target_row("dfcore / TensorFlow, CPU time (paired)", median_ratio(*cpu_t), TARGET_VS_TF))
    print(f"MLP {N_IN}-{N_HIDDEN}-{N_OUT}, batch {BATCH}, float32, one SGD step; median of {REPEATS} interleaved "
          f"rounds after warm-up; {machine_load()}" + ("" if tf else f"; no TensorFlow column: {TFProcess.why}"))
    report(rows)


if __name__ == "__main__":
    with one_blas_thread():
        main()
