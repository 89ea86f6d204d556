"""The conv net of issue 32's table and its kernels, for dfcore's, numpy's and TensorFlow's side of
``bench_conv_step.py``. This module imports no dfcore: TensorFlow's side runs it in its own process
(:mod:`_tf_process`).

The net: images [32, 16, 16, 1] float32 → conv 3×3×16 SAME + bias + relu → max-pool 2×2/2 → conv 3×3×32 SAME +
bias + relu → max-pool 2×2/2 → dense 10 → sparse softmax cross-entropy, one SGD step (learning rate 0.1).
The numpy step is hand-written with one GEMM per convolution (im2col) and is the floor dfcore is held to.
"""

from __future__ import annotations

import numpy as np
from _timing import checked_graph_step

BATCH, SIZE, KERNEL, FILTERS, N_OUT = 32, 16, 3, (16, 32), 10
LEARNING_RATE = 0.1
POOLED = SIZE // 2 ** len(FILTERS)
LEARNING_RATE_F32 = np.float32(LEARNING_RATE)  # the numpy step runs in float32


def make_problem(seed=0):
    """Initial parameters (conv kernels HWIO and biases, dense kernel and bias), images and int32 labels."""
    rng = np.random.default_rng(seed)
    params, channels = [], 1
    for filters in FILTERS:
        params += [rng.standard_normal((KERNEL, KERNEL, channels, filters)) * np.sqrt(2 / (9 * channels)),
                   np.full(filters, 0.01)]
        channels = filters
    flat = POOLED * POOLED * channels
    params += [rng.standard_normal((flat, N_OUT)) * np.sqrt(2 / flat), np.zeros(N_OUT)]
    images = rng.random((BATCH, SIZE, SIZE, 1))
    labels = rng.integers(0, N_OUT, BATCH).astype(np.int32)
    return [p.astype(np.float32) for p in params], images.astype(np.float32), labels


def build_graph_step(v1, params):
    """The step as a TF1 graph in namespace ``v1`` (``dfcore`` or ``tensorflow.compat.v1``) with ``v1.layers``.

    Returns (graph, train_op, images placeholder, labels placeholder, trainable variables, init op).
    """
    graph = v1.Graph()
    with graph.as_default():
        images = v1.placeholder(v1.float32, [BATCH, SIZE, SIZE, 1], name="images")
        labels = v1.placeholder(v1.int32, [BATCH], name="labels")
        values = iter(params)
        hidden = images
        for filters in FILTERS:
            hidden = v1.layers.conv2d(hidden, filters, KERNEL, padding="same", activation=v1.nn.relu,
                                      kernel_initializer=v1.constant_initializer(next(values)),
                                      bias_initializer=v1.constant_initializer(next(values)))
            hidden = v1.layers.max_pooling2d(hidden, 2, 2)
        logits = v1.layers.dense(v1.layers.flatten(hidden), N_OUT,
                                 kernel_initializer=v1.constant_initializer(next(values)),
                                 bias_initializer=v1.constant_initializer(next(values)))
        loss = v1.reduce_mean(v1.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        train_op = v1.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss)
        init = v1.global_variables_initializer()
        variables = v1.trainable_variables()
    return graph, train_op, images, labels, variables, init


# -- numpy: the step, and a plain reference per kernel -----------------------------------------------------
def columns(x):
    """im2col of a SAME 3×3 stride-1 convolution: ``[N·H·W, 9·C]`` (tap-major, as an HWIO kernel reshaped)."""
    n, h, w, c = x.shape
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    cols = np.empty((n, h, w, KERNEL, KERNEL, c), x.dtype)
    for i in range(KERNEL):
        for j in range(KERNEL):
            cols[:, :, :, i, j] = padded[:, i:i + h, j:j + w]
    return cols.reshape(n * h * w, -1)


def col2im(dcols, shape):
    """The adjoint of :func:`columns`: ``[N·H·W, 9·C]`` summed back into ``shape`` ``[N, H, W, C]``."""
    n, h, w, c = shape
    dcols = dcols.reshape(n, h, w, KERNEL, KERNEL, c)
    dpadded = np.zeros((n, h + 2, w + 2, c), dcols.dtype)
    for i in range(KERNEL):
        for j in range(KERNEL):
            dpadded[:, i:i + h, j:j + w] += dcols[:, :, :, i, j]
    return dpadded[:, 1:-1, 1:-1]


def pool_windows(a):
    """2×2 stride-2 windows of ``a`` ``[N, H, W, C]`` as a view ``[N, H/2, 2, W/2, 2, C]``."""
    n, h, w, c = a.shape
    return a.reshape(n, h // 2, 2, w // 2, 2, c)


def max_pool(a):
    """2×2 stride-2 max-pool of ``a`` (the maximum of its four strided quarters)."""
    return np.maximum(np.maximum(a[:, ::2, ::2], a[:, ::2, 1::2]), np.maximum(a[:, 1::2, ::2], a[:, 1::2, 1::2]))


def avg_pool(a):
    """2×2 stride-2 average-pool of ``a``."""
    return (a[:, ::2, ::2] + a[:, ::2, 1::2] + a[:, 1::2, ::2] + a[:, 1::2, 1::2]) * np.float32(0.25)


def pool_grad(a, pooled, dpooled):
    """Max-pool gradient: each window's gradient to its first maximum (TF's rule), tap by tap."""
    windows, dx = pool_windows(a), np.empty_like(a)
    dwindows, taken = pool_windows(dx), np.zeros(pooled.shape, bool)
    for i in range(2):
        for j in range(2):
            first = (windows[:, :, i, :, j] == pooled) & ~taken
            taken |= first
            np.multiply(dpooled, first, out=dwindows[:, :, i, :, j])
    return dx


def numpy_step(params, images, labels, lr=LEARNING_RATE_F32):
    """Forward, backward and ``p -= lr * grad`` for every parameter, in place; returns the mean loss."""
    grads, layers, x = [None] * len(params), [], images
    for k in range(len(FILTERS)):
        kernel, bias = params[2 * k], params[2 * k + 1]
        cols = columns(x)
        z = (cols @ kernel.reshape(-1, kernel.shape[3])).reshape(*x.shape[:3], -1) + bias
        a = np.maximum(z, 0)
        x = max_pool(a)
        layers.append((cols, z, a, x))
    pooled_shape, flat = x.shape, x.reshape(len(x), -1)
    w, b = params[-2:]
    logits = flat @ w + b
    shifted = logits - logits.max(1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(1, keepdims=True)
    rows = np.arange(len(labels))
    loss = np.mean(np.log(total[:, 0]) - shifted[rows, labels])
    dlogits = exp / total
    dlogits[rows, labels] -= 1
    dlogits /= np.float32(len(labels))
    grads[-2], grads[-1] = flat.T @ dlogits, dlogits.sum(0)
    dpooled = (dlogits @ w.T).reshape(pooled_shape)
    for k in reversed(range(len(FILTERS))):
        cols, z, a, pooled = layers[k]
        dz = pool_grad(a, pooled, dpooled) * (z > 0)
        dz_matrix = dz.reshape(-1, dz.shape[3])
        kernel = params[2 * k]
        grads[2 * k] = (cols.T @ dz_matrix).reshape(kernel.shape)
        grads[2 * k + 1] = dz_matrix.sum(0)
        if k:
            dpooled = col2im(dz_matrix @ kernel.reshape(-1, kernel.shape[3]).T, layers[k - 1][3].shape)
    for p, g in zip(params, grads):
        p -= lr * g
    return loss


# -- the kernels of the step, at its shapes ---------------------------------------------------------------
CONV = {"strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NHWC", "dilations": [1, 1, 1, 1]}
POOL = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID", "data_format": "NHWC"}
NHWC = {"data_format": "NHWC"}


def _sizes(a):
    return np.array(a.shape, np.int32)


def kernel_cases(seed=1):
    """``[(label, op type, attrs, TF argument names, inputs, numpy reference, GEMM floor or None)]``: each kernel
    of the step at its shapes; the reference is plain numpy (im2col + one GEMM, a reshape for the pools), the
    floor a callable timing the bare GEMM of the same size (convolutions only)."""
    rng = np.random.default_rng(seed)

    def rand(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    x1, f1, x2, f2 = rand(BATCH, SIZE, SIZE, 1), rand(3, 3, 1, 16), rand(BATCH, 8, 8, 16), rand(3, 3, 16, 32)
    dy1, dy2, a1, dp1, b16 = rand(BATCH, SIZE, SIZE, 16), rand(BATCH, 8, 8, 32), rand(BATCH, SIZE, SIZE, 16), \
        rand(BATCH, 8, 8, 16), rand(16)
    p1 = max_pool(a1)

    def conv(x, f):
        return (columns(x) @ f.reshape(-1, f.shape[3])).reshape(*x.shape[:3], -1)

    def gemm(m, k, n):
        a, b = rand(m, k), rand(k, n)
        return lambda: a @ b

    input_grad = ("input_sizes", "filter", "out_backprop")
    filter_grad = ("input", "filter_sizes", "out_backprop")
    return [
        ("Conv2D conv1", "Conv2D", CONV, ("input", "filter"), [x1, f1], conv, gemm(BATCH * 256, 9, 16)),
        ("Conv2D conv2", "Conv2D", CONV, ("input", "filter"), [x2, f2], conv, gemm(BATCH * 64, 144, 32)),
        ("Conv2DBackpropInput conv2", "Conv2DBackpropInput", CONV, input_grad, [_sizes(x2), f2, dy2],
         lambda s, f, dy: col2im(dy.reshape(-1, 32) @ f.reshape(-1, 32).T, tuple(s)), gemm(BATCH * 64, 32, 144)),
        ("Conv2DBackpropFilter conv1", "Conv2DBackpropFilter", CONV, filter_grad, [x1, _sizes(f1), dy1],
         lambda x, s, dy: (columns(x).T @ dy.reshape(-1, 16)).reshape(tuple(s)), gemm(9, BATCH * 256, 16)),
        ("Conv2DBackpropFilter conv2", "Conv2DBackpropFilter", CONV, filter_grad, [x2, _sizes(f2), dy2],
         lambda x, s, dy: (columns(x).T @ dy.reshape(-1, 32)).reshape(tuple(s)), gemm(144, BATCH * 64, 32)),
        ("MaxPool 2x2/2", "MaxPool", POOL, ("input",), [a1], max_pool, None),
        ("MaxPoolGrad 2x2/2", "MaxPoolGrad", POOL, ("orig_input", "orig_output", "grad"), [a1, p1, dp1],
         pool_grad, None),
        ("AvgPool 2x2/2", "AvgPool", POOL, ("value",), [a1], avg_pool, None),
        ("AvgPoolGrad 2x2/2", "AvgPoolGrad", POOL, ("orig_input_shape", "grad"), [_sizes(a1), dp1],
         lambda s, g: np.repeat(np.repeat(g / 4, 2, axis=1), 2, axis=2), None),
        ("BiasAdd", "BiasAdd", NHWC, ("value", "bias"), [a1, b16], np.add, None),
        ("BiasAddGrad", "BiasAddGrad", NHWC, ("out_backprop",), [a1], lambda g: g.sum((0, 1, 2)), None),
        ("Relu", "Relu", {}, ("features",), [a1], lambda a: np.maximum(a, 0), None),
        ("ReluGrad", "ReluGrad", {}, ("gradients", "features"), [dy1, a1], lambda g, a: g * (a > 0), None),
    ]


# -- TensorFlow's side (run in its own process by _tf_process) ----------------------------------------------
def _tensorflow():
    """``tensorflow`` with one intra-op and one inter-op thread (as dfcore's BLAS runs on one)."""
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # already set by an earlier setup in this process
        pass
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    return tf


def tf_step():
    """TF's ``compat.v1`` Session step, checked against :func:`numpy_step`: ``{"tf step": callable}``."""
    import warnings

    v1 = _tensorflow().compat.v1
    warnings.filterwarnings("ignore", message=r"`tf\.layers\.\w+` is deprecated")
    params, images, labels = make_problem()
    config = v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    step, _ = checked_graph_step(v1, build_graph_step, numpy_step, params, images, labels, config=config,
                                 atol=1e-5)
    return {"tf step": step}


def tf_kernels():
    """TF's kernels (eager ``tf.raw_ops`` calls on CPU tensors), each checked against its numpy reference."""
    tf = _tensorflow()
    made = {}
    for label, op_type, attrs, names, inputs, reference, _ in kernel_cases():
        tensors = dict(zip(names, (tf.constant(a) for a in inputs)))
        op = getattr(tf.raw_ops, op_type)

        def call(op=op, tensors=tensors, attrs=attrs):
            return op(**tensors, **attrs)

        np.testing.assert_allclose(call().numpy(), reference(*inputs), rtol=1e-4, atol=1e-4, err_msg=label)
        made[label] = call
    return made
