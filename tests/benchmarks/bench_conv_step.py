"""One SGD step of the conv_digits net (batch 32, float32, 8×8×1 images) via ``Session.run`` vs the same step
hand-written in numpy (im2col convolutions, argmax max-pool routing), and vs TensorFlow's own ``compat.v1``
Session when ``tensorflow`` is importable (never a dependency).

The net is :mod:`dfcore.examples.conv_digits`' (conv 3×3 same → max-pool 2 → conv 3×3 same → max-pool 2 →
dense relu → dense) with dropout off, so all sides do the same work; one step of each is checked against
numpy before timing. Ratios are printed, never asserted.
"""

import os
import statistics
import warnings

import numpy as np
from _timing import checked_graph_step, interleaved_samples_s, median_ratio, one_blas_thread, report
from bench_mlp_step import tensorflow_v1

import dfcore
from dfcore.examples.conv_digits import FILTERS, HIDDEN, IMAGE_SIZE

BATCH, N_OUT, KERNEL = 32, 10, 3
LEARNING_RATE = 0.1
LEARNING_RATE_F32 = np.float32(LEARNING_RATE)  # the numpy baselines step in float32
REPEATS = 51


def make_problem(seed=0):
    """Initial parameters (conv kernels HWIO and biases, dense kernels and biases), images and int32 labels."""
    rng = np.random.default_rng(seed)
    params, channels = [], 1
    for filters in FILTERS:
        params += [rng.standard_normal((KERNEL, KERNEL, channels, filters)) * np.sqrt(2 / (9 * channels)),
                   np.full(filters, 0.01)]
        channels = filters
    flat = (IMAGE_SIZE // 2 ** len(FILTERS)) ** 2 * channels
    params += [rng.standard_normal((flat, HIDDEN)) * np.sqrt(2 / flat), np.full(HIDDEN, 0.01),
               rng.standard_normal((HIDDEN, N_OUT)) * np.sqrt(2 / HIDDEN), np.zeros(N_OUT)]
    images = rng.random((BATCH, IMAGE_SIZE, IMAGE_SIZE, 1))
    labels = rng.integers(0, N_OUT, BATCH).astype(np.int32)
    return [p.astype(np.float32) for p in params], images.astype(np.float32), labels


def build_graph_step(v1, params):
    """The step as a TF1 graph in namespace ``v1`` (``dfcore`` or ``tensorflow.compat.v1``), with ``v1.layers``.

    Returns (graph, train_op, images placeholder, labels placeholder, trainable variables, init op).
    """
    graph = v1.Graph()
    with graph.as_default():
        images = v1.placeholder(v1.float32, [BATCH, IMAGE_SIZE, IMAGE_SIZE, 1], name="images")
        labels = v1.placeholder(v1.int32, [BATCH], name="labels")
        values = iter(params)
        hidden = images
        for filters in FILTERS:
            hidden = v1.layers.conv2d(hidden, filters, KERNEL, padding="same", activation=v1.nn.relu,
                                      kernel_initializer=v1.constant_initializer(next(values)),
                                      bias_initializer=v1.constant_initializer(next(values)))
            hidden = v1.layers.max_pooling2d(hidden, 2, 2)
        hidden = v1.layers.flatten(hidden)
        for units, activation in ((HIDDEN, v1.nn.relu), (N_OUT, None)):
            hidden = v1.layers.dense(hidden, units, activation=activation,
                                     kernel_initializer=v1.constant_initializer(next(values)),
                                     bias_initializer=v1.constant_initializer(next(values)))
        loss = v1.reduce_mean(v1.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=hidden))
        train_op = v1.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss)
        init = v1.global_variables_initializer()
        variables = v1.trainable_variables()
    return graph, train_op, images, labels, variables, init


# -- the numpy step --------------------------------------------------------------------------------
def _columns(x):
    """im2col of a SAME 3×3 stride-1 convolution: ``[N·H·W, C·9]`` (channel-major, as the kernel matrix)."""
    n, h, w, c = x.shape
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (KERNEL, KERNEL), axis=(1, 2))
    return windows.reshape(n * h * w, c * KERNEL * KERNEL)


def _kernel_matrix(kernel):
    """HWIO kernel as ``[C·9, O]``, rows in the order of :func:`_columns`."""
    return kernel.transpose(2, 0, 1, 3).reshape(-1, kernel.shape[3])


def _conv_input_grad(dz, kernel, shape):
    """Gradient of a SAME 3×3 convolution with respect to its input ``shape`` (col2im of ``dz @ K^T``)."""
    n, h, w, c = shape
    dcols = (dz.reshape(-1, kernel.shape[3]) @ _kernel_matrix(kernel).T).reshape(n, h, w, c, KERNEL, KERNEL)
    dpadded = np.zeros((n, h + 2, w + 2, c), dz.dtype)
    for i in range(KERNEL):
        for j in range(KERNEL):
            dpadded[:, i:i + h, j:j + w] += dcols[..., i, j]
    return dpadded[:, 1:-1, 1:-1]


def _pool_windows(a):
    """2×2 stride-2 windows of ``a`` ``[N, H, W, C]`` as ``[N, H/2, W/2, C, 4]``."""
    n, h, w, c = a.shape
    return a.reshape(n, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 5, 2, 4).reshape(n, h // 2, w // 2, c, 4)


def _pool_grad(a, dpooled):
    """Max-pool gradient: each window's gradient to its first maximum, as TF's MaxPoolGrad."""
    n, h, w, c = a.shape
    windows = np.zeros((n, h // 2, w // 2, c, 4), a.dtype)
    np.put_along_axis(windows, _pool_windows(a).argmax(-1)[..., None], dpooled[..., None], axis=-1)
    return windows.reshape(n, h // 2, w // 2, c, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(a.shape)


def numpy_step(params, images, labels, lr=LEARNING_RATE_F32):
    """Forward, backward and ``p -= lr * grad`` for every parameter, in place; returns the mean loss."""
    grads, layers, x = [None] * len(params), [], images
    for k in range(len(FILTERS)):
        kernel, bias = params[2 * k], params[2 * k + 1]
        cols = _columns(x)
        z = (cols @ _kernel_matrix(kernel)).reshape(*x.shape[:3], -1) + bias
        a = np.maximum(z, 0)
        layers.append((x, cols, z, a))
        x = _pool_windows(a).max(-1)
    pooled_shape, flat = x.shape, x.reshape(len(x), -1)
    w3, b3, w4, b4 = params[-4:]
    z3 = flat @ w3 + b3
    h3 = np.maximum(z3, 0)
    logits = h3 @ w4 + b4
    shifted = logits - logits.max(1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(1, keepdims=True)
    rows = np.arange(len(labels))
    loss = np.mean(np.log(total[:, 0]) - shifted[rows, labels])
    dlogits = exp / total
    dlogits[rows, labels] -= 1
    dlogits /= np.float32(len(labels))
    grads[-2], grads[-1] = h3.T @ dlogits, dlogits.sum(0)
    dz3 = (dlogits @ w4.T) * (z3 > 0)
    grads[-4], grads[-3] = flat.T @ dz3, dz3.sum(0)
    dpooled = (dz3 @ w3.T).reshape(pooled_shape)
    for k in reversed(range(len(FILTERS))):
        x, cols, z, a = layers[k]
        dz = _pool_grad(a, dpooled) * (z > 0)
        dz_matrix = dz.reshape(-1, dz.shape[3])
        kernel = params[2 * k]
        grads[2 * k] = (cols.T @ dz_matrix).reshape(kernel.shape[2], KERNEL, KERNEL, -1).transpose(1, 2, 0, 3)
        grads[2 * k + 1] = dz_matrix.sum(0)
        if k:
            dpooled = _conv_input_grad(dz, kernel, x.shape)
    for p, g in zip(params, grads):
        p -= lr * g
    return loss


def tensorflow_layers_v1():
    """``tensorflow.compat.v1`` when TensorFlow and its v1 layers are importable, else None.

    TF ≥ 2.16 serves ``compat.v1.layers`` from the ``tf_keras`` package, and only with ``TF_USE_LEGACY_KERAS=1``
    set before TensorFlow is imported; TF's deprecation warnings are silenced so they stay out of the table.
    """
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    v1 = tensorflow_v1()
    if v1 is None:
        return None
    v1.logging.set_verbosity(v1.logging.ERROR)
    warnings.filterwarnings("ignore", message=r"`tf\.layers\.\w+` is deprecated")
    try:
        v1.layers.dense  # noqa: B018 - raises AttributeError under Keras 3 without tf_keras
    except AttributeError:
        return None
    return v1


def main():
    """Measure the steps in alternation (paired rounds) and print their times and ratios."""
    params, images, labels = make_problem()
    numpy_params = [p.copy() for p in params]
    check = dict(build_graph_step=build_graph_step, numpy_step=numpy_step, params=params, inputs=images,
                 labels=labels, atol=1e-5)
    steps = {"dfcore Session.run step": checked_graph_step(dfcore, **check),
             "numpy hand-written step": (lambda: numpy_step(numpy_params, images, labels), None)}
    v1 = tensorflow_layers_v1()
    if v1 is not None:
        config = v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
        steps["TensorFlow compat.v1 Session.run step (1 thread)"] = checked_graph_step(v1, config=config, **check)
    samples = dict(zip(steps, interleaved_samples_s([step for step, _ in steps.values()], REPEATS)))
    for _, sess in steps.values():
        if sess is not None:
            sess.close()
    rows = [(label, statistics.median(times) * 1e3, "ms") for label, times in samples.items()]
    dfcore_t, *others = samples.values()
    for name, times in zip(("numpy", "TensorFlow"), others):
        rows.append((f"ratio dfcore / {name} (paired)", median_ratio(dfcore_t, times), "x"))
    print(f"conv net {FILTERS} filters + dense {HIDDEN}, batch {BATCH}, {IMAGE_SIZE}x{IMAGE_SIZE}x1 float32, one SGD "
          f"step; median of {REPEATS} interleaved rounds after warm-up"
          + ("" if v1 else "; tensorflow (with its v1 layers) not importable"))
    report(rows)


if __name__ == "__main__":
    with one_blas_thread():
        main()
