"""One SGD step of an MLP 784-256-10 (batch 64, float32, relu, softmax cross-entropy) via ``Session.run``
vs the same step in plain numpy, written (i) naively and (ii) with every buffer preallocated.

Targets (printed, never asserted; issue 14): dfcore's step at most 1.1x the preallocated numpy step and
no slower than TF's; 0 new buffers per step after warm-up, as counted by the device allocators
(:mod:`dfcore.runtime.allocator`). When ``tensorflow`` is importable (never a dependency), TF's own
``compat.v1`` Session step is printed too.
"""

import os
import statistics

import numpy as np
from _timing import checked_graph_step, interleaved_samples_s, median_ratio, median_time_s, one_blas_thread, report

import dfcore

BATCH, N_IN, N_HIDDEN, N_OUT = 64, 784, 256, 10
LEARNING_RATE = 0.1
LEARNING_RATE_F32 = np.float32(LEARNING_RATE)  # the numpy baselines step in float32
REPEATS = 51
TARGET_RATIO = 1.1
ALLOCATION_STEPS = 20


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


def naive_numpy_step(params, x, labels, lr=LEARNING_RATE_F32):
    """The step in numpy with fresh temporaries; updates ``params`` in place with ``W -= lr * dW``."""
    w1, b1, w2, b2 = params
    z1 = x @ w1 + b1
    hidden = np.maximum(z1, 0)
    logits = hidden @ w2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(axis=1, keepdims=True)
    rows = np.arange(len(labels))
    loss = np.mean(np.log(total[:, 0]) - shifted[rows, labels])
    dlogits = exp / total
    dlogits[rows, labels] -= 1
    dlogits /= np.float32(len(labels))
    dw2 = hidden.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dz1 = (dlogits @ w2.T) * (z1 > 0)
    dw1 = x.T @ dz1
    db1 = dz1.sum(axis=0)
    for p, g in zip(params, (dw1, db1, dw2, db2)):
        p -= lr * g
    return loss


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
    """Measure the four steps side by side and print their times and ratios."""
    params, x, labels = make_problem()
    naive_params = [p.copy() for p in params]
    prealloc_params = [p.copy() for p in params]
    prealloc = PreallocatedNumpyStep(prealloc_params, x, labels)
    reference = [p.copy() for p in params]
    naive_numpy_step(reference, x, labels)
    prealloc()
    for got, want in zip(prealloc_params, reference):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)

    dfcore_step, dfcore_sess = checked_graph_step(dfcore, build_graph_step, naive_numpy_step, params, x, labels)
    with dfcore_sess:
        dfcore_t, naive_t, prealloc_t = interleaved_samples_s(
            [dfcore_step, lambda: naive_numpy_step(naive_params, x, labels), prealloc], REPEATS)
        new_buffers, small_allocs = allocations_per_step(dfcore_step, dfcore_sess)
    dfcore_s, naive_s, prealloc_s = (statistics.median(t) for t in (dfcore_t, naive_t, prealloc_t))

    rows = [("dfcore Session.run step", dfcore_s * 1e3, "ms"),
            ("numpy naive step", naive_s * 1e3, "ms"),
            ("numpy preallocated step", prealloc_s * 1e3, "ms"),
            ("ratio dfcore / numpy naive (paired)", median_ratio(dfcore_t, naive_t), "x"),
            (f"ratio dfcore / numpy preallocated (paired; target <= {TARGET_RATIO})",
             median_ratio(dfcore_t, prealloc_t), "x"),
            (f"dfcore new pooled buffers per step after warm-up (mean of {ALLOCATION_STEPS}; target 0)", new_buffers,
             ""),
            ("dfcore small allocations per step, not pooled (np.empty)", small_allocs, "")]
    v1 = tensorflow_v1()
    if v1 is not None:
        config = v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
        tf_step, tf_sess = checked_graph_step(v1, build_graph_step, naive_numpy_step, params, x, labels, config=config)
        with tf_sess:
            tf_s = median_time_s(tf_step, REPEATS)
        rows[3:3] = [("TensorFlow compat.v1 Session.run step (1 thread)", tf_s * 1e3, "ms")]
        rows.append(("ratio dfcore / TensorFlow", dfcore_s / tf_s, "x"))
    print(f"MLP {N_IN}-{N_HIDDEN}-{N_OUT}, batch {BATCH}, float32, one SGD step; "
          f"median of {REPEATS} interleaved rounds after warm-up" + ("" if v1 else "; tensorflow not installed"))
    report(rows)


if __name__ == "__main__":
    with one_blas_thread():
        main()
