"""The im2col/col2im kernels (dfcore.ops.conv_windows) of Conv2D and its two backprop ops, and the tap-pass
pooling kernels, against loops written from the definitions: odd sizes, strides, dilations, both paddings,
a batch lowered in chunks, scratch reused across runs and threads; tie-breaking and NaN values as recorded
from TF 2.21 (tensorflow-cpu, compat.v1 graph mode)."""

import itertools
import threading

import numpy as np
import pytest
from test_nn_conv_pool import naive_conv

import dfcore as tf
from dfcore.ops import conv_windows
from dfcore.ops.nn_conv import output_size
from dfcore.ops.op_util import apply_op1

CASES = [  # (height, width, kernel, strides, dilations, padding)
    (7, 5, (3, 3), (1, 1), (1, 1), "SAME"),
    (9, 8, (3, 2), (3, 2), (1, 1), "SAME"),
    (9, 7, (2, 3), (2, 3), (1, 1), "VALID"),
    (7, 9, (3, 3), (1, 1), (2, 3), "VALID"),
    (6, 7, (1, 1), (1, 1), (1, 1), "SAME"),  # im2col is the input itself
    (6, 7, (1, 1), (2, 2), (1, 1), "VALID"),
    (7, 6, (3, 2), (1, 1), (2, 2), "SAME"),  # dilated windows in the padded input
]


def _geometry(shape, kernel, strides, dilations, padding):
    oh, top = output_size(shape[1], kernel[0], strides[0], dilations[0], padding)
    ow, left = output_size(shape[2], kernel[1], strides[1], dilations[1], padding)
    return oh, ow, top, left


def _positions(shape, kernel, strides, dilations, padding):
    """``(y, z, i, j, row, col)`` for every output position and tap that reads a real input."""
    oh, ow, top, left = _geometry(shape, kernel, strides, dilations, padding)
    for y, z, i, j in itertools.product(range(oh), range(ow), range(kernel[0]), range(kernel[1])):
        row, col = y * strides[0] + i * dilations[0] - top, z * strides[1] + j * dilations[1] - left
        if 0 <= row < shape[1] and 0 <= col < shape[2]:
            yield y, z, i, j, row, col


def naive_backprops(x, f, dy, strides, dilations, padding):
    """The gradients of sum(conv(x, f) * dy) w.r.t. x and f, summed tap by tap."""
    dx, df = np.zeros_like(x), np.zeros_like(f)
    for y, z, i, j, row, col in _positions(x.shape, f.shape[:2], strides, dilations, padding):
        dx[:, row, col] += dy[:, y, z] @ f[i, j].T
        df[i, j] += x[:, row, col].T @ dy[:, y, z]
    return dx, df


@pytest.fixture(params=[False, True], ids=["one-chunk", "image-by-image"])
def chunked(request, monkeypatch):
    """Run once as is and once with the im2col scratch limited so that each image is its own chunk."""
    if request.param:
        monkeypatch.setattr(conv_windows, "SCRATCH_BYTES", 1)
        monkeypatch.setattr(conv_windows, "COL2IM_BYTES", 1)
    return request.param


@pytest.mark.parametrize("height, width, kernel, strides, dilations, padding", CASES)
def test_im2col_of_a_partial_chunk_is_the_definition_run_after_run(height, width, kernel, strides, dilations,
                                                                     padding):
    """The columns of 3 images in a plan whose chunk holds 4 (the padded scratch is reused with new data)."""
    shape = (3, height, width, 2)
    oh, ow, top, left = _geometry(shape, kernel, strides, dilations, padding)
    plan = conv_windows.WindowPlan((4, height, width, 2), *kernel, strides, dilations, oh, ow, top, left)
    plan.chunk = 4
    rng = np.random.default_rng(height + 7 * width)
    for _ in range(2):
        x = rng.standard_normal(shape)
        want = np.zeros((3, oh, ow, *kernel, 2))
        for y, z, i, j, row, col in _positions(shape, kernel, strides, dilations, padding):
            want[:, y, z, i, j] = x[:, row, col]
        cols = np.full((4, oh, ow, *kernel, 2), np.nan)
        plan._fill(cols[:3], x)
        np.testing.assert_array_equal(cols[:3], want)


@pytest.mark.parametrize("height, width, kernel, strides, dilations, padding", CASES)
def test_conv2d_and_backprops_match_the_definitions_run_after_run(height, width, kernel, strides, dilations,
                                                                  padding, chunked):
    rng = np.random.default_rng(height * 31 + width)
    f = rng.standard_normal((*kernel, 3, 4))
    oh, ow, _, _ = _geometry((3, height, width), kernel, strides, dilations, padding)
    attrs = dict(strides=[1, *strides, 1], padding=padding, dilations=[1, *dilations, 1])
    with tf.Graph().as_default():
        x_t, dy_t = tf.placeholder(tf.float64, [3, height, width, 3]), tf.placeholder(tf.float64, [3, oh, ow, 4])
        y = tf.nn.conv2d(x_t, tf.constant(f), **attrs)
        dx = tf.nn.conv2d_backprop_input(tf.constant([3, height, width, 3]), tf.constant(f), dy_t, **attrs)
        df = tf.nn.conv2d_backprop_filter(x_t, tf.constant(list(f.shape)), dy_t, **attrs)
        with tf.Session() as sess:
            for _ in range(2):  # the second run reuses the scratch buffers of the first
                x, dy = rng.standard_normal((3, height, width, 3)), rng.standard_normal((3, oh, ow, 4))
                got_y, got_dx, got_df = sess.run([y, dx, df], {x_t: x, dy_t: dy})
                want_dx, want_df = naive_backprops(x, f, dy, strides, dilations, padding)
                np.testing.assert_allclose(got_y, naive_conv(x, f, strides, dilations, padding), atol=1e-12)
                np.testing.assert_allclose(got_dx, want_dx, atol=1e-12)
                np.testing.assert_allclose(got_df, want_df, atol=1e-12)


def test_conv2d_float32_gives_float32_and_threads_get_their_own_scratch():
    rng = np.random.default_rng(5)
    f = rng.standard_normal((3, 3, 2, 5)).astype(np.float32)
    with tf.Graph().as_default():
        x_t = tf.placeholder(tf.float32, [2, 6, 5, 2])
        y = tf.nn.conv2d(x_t, tf.constant(f), [1, 2, 1, 1], "SAME")
        with tf.Session() as sess:
            failures = []

            def worker(seed):
                local = np.random.default_rng(seed)
                for _ in range(20):
                    x = local.standard_normal((2, 6, 5, 2)).astype(np.float32)
                    got = sess.run(y, {x_t: x})
                    if got.dtype != np.float32 or not np.allclose(got, naive_conv(x, f, (2, 1), (1, 1), "SAME"),
                                                                  atol=1e-4):
                        failures.append(seed)

            threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(3)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    assert failures == []


def test_backprop_shapes_that_disagree_raise_naming_the_op():
    with tf.Graph().as_default():
        dx = tf.nn.conv2d_backprop_input(tf.constant([1, 4, 4, 2]), tf.zeros([3, 3, 2, 5]), tf.zeros([1, 4, 4, 3]),
                                         [1, 1, 1, 1], "SAME")
        df = tf.nn.conv2d_backprop_filter(tf.zeros([1, 4, 4, 2]), tf.constant([3, 3, 2, 5]), tf.zeros([1, 2, 2, 5]),
                                          [1, 1, 1, 1], "SAME")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"out_backprop must be \[1, 4, 4, 5\]"):
                sess.run(dx)
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"out_backprop must be \[1, 4, 4, 5\]"):
                sess.run(df)


def test_plan_cache_keeps_at_most_max_plans():
    made = []
    cache = conv_windows.PlanCache(lambda key: made.append(key) or key)
    for key in range(conv_windows.MAX_PLANS + 5):
        assert cache.get(key) == key
    assert cache.get(conv_windows.MAX_PLANS + 4) == conv_windows.MAX_PLANS + 4
    assert len(made) == conv_windows.MAX_PLANS + 5  # the last key was cached, not made again
    assert len(cache._plans) == conv_windows.MAX_PLANS
    assert 0 not in cache._plans  # the oldest went first


# -- pooling: the first maximum of a window takes its gradient ----------------------------------------------
def naive_max_pool_grad(x, grad, kernel, strides, padding):
    dx = np.zeros_like(x)
    oh, ow, _, _ = _geometry(x.shape, kernel, strides, (1, 1), padding)
    for b, c in itertools.product(range(x.shape[0]), range(x.shape[3])):
        best: dict = {}
        for y, z, _, _, row, col in _positions(x.shape, kernel, strides, (1, 1), padding):
            if (y, z) not in best or x[b, row, col, c] > x[(b, *best[y, z], c)]:
                best[y, z] = (row, col)  # taps come in row-major order: the first maximum stays
        for (y, z), (row, col) in best.items():
            dx[b, row, col, c] += grad[b, y, z, c]
    return dx


@pytest.mark.parametrize("kernel, strides, padding", [((2, 2), (2, 2), "VALID"), ((3, 3), (1, 1), "SAME"),
                                                      ((3, 2), (2, 1), "SAME"), ((2, 3), (3, 2), "VALID")])
def test_max_pool_grad_goes_to_the_first_maximum_with_ties_and_overlaps(kernel, strides, padding):
    rng = np.random.default_rng(sum(kernel) + sum(strides))
    x = rng.integers(0, 3, (2, 7, 6, 2)).astype(np.float64)  # many ties
    oh, ow, _, _ = _geometry(x.shape, kernel, strides, (1, 1), padding)
    grad = rng.standard_normal((2, oh, ow, 2))
    with tf.Graph().as_default():
        x_t = tf.constant(x)
        y = tf.nn.max_pool(x_t, [1, *kernel, 1], [1, *strides, 1], padding)
        (dx,) = tf.gradients(y, [x_t], grad_ys=tf.constant(grad))
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(dx), naive_max_pool_grad(x, grad, kernel, strides, padding),
                                       atol=1e-12)


TIES = np.array([[1, 3, 3, 0], [3, 3, 2, 3], [0, 1, 5, 5], [1, 5, 5, 5]], np.float32).reshape(1, 4, 4, 1)
# Recorded with TF 2.21 (tensorflow-cpu): tf.gradients(max_pool(TIES, k, s, padding), TIES, grad_ys=ones) in a
# compat.v1 Session, for (k, s, padding) = (2, 2, VALID), (2, 1, VALID), (3, 1, SAME), (3, 2, SAME).
TF_TIES = {
    (2, 2, "VALID"): [[0, 1, 1, 0], [0, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]],
    (2, 1, "VALID"): [[0, 2, 1, 0], [1, 0, 0, 0], [0, 0, 4, 0], [0, 1, 0, 0]],
    (3, 1, "SAME"): [[0, 4, 1, 0], [0, 0, 0, 0], [0, 0, 9, 0], [0, 2, 0, 0]],
    (3, 2, "SAME"): [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 4, 0], [0, 0, 0, 0]],
}


@pytest.mark.parametrize("k, s, padding", list(TF_TIES))
def test_max_pool_grad_ties_as_recorded_from_tensorflow(k, s, padding):
    with tf.Graph().as_default():
        x = tf.constant(TIES)
        y = tf.nn.max_pool(x, [1, k, k, 1], [1, s, s, 1], padding)
        (dx,) = tf.gradients(y, [x], grad_ys=tf.ones_like(y))
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(dx).reshape(4, 4), TF_TIES[k, s, padding])


def test_nan_in_max_pool_and_relu_grad_as_recorded_from_tensorflow():
    """Recorded with TF 2.21 (tensorflow-cpu): MaxPool 2x2/2 of [nan, 1, 2, nan] gives 2 (NaN is skipped);
    ReluGrad(gradients=[inf, nan, 2, -inf, 3], features=[-1, -1, 0, 1, nan]) gives [nan, nan, 0, -inf, 0]
    (TF multiplies by ``features > 0``)."""
    with tf.Graph().as_default():
        pooled = tf.nn.max_pool(tf.constant(np.array([np.nan, 1, 2, np.nan], np.float32).reshape(1, 2, 2, 1)),
                                [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        relu_grad = apply_op1("ReluGrad", [tf.constant([np.inf, np.nan, 2, -np.inf, 3], tf.float32),
                                           tf.constant([-1, -1, 0, 1, np.nan], tf.float32)])
        with tf.Session() as sess:
            got_pool, got_relu = sess.run([pooled, relu_grad])
    assert got_pool.reshape(-1).tolist() == [2.0]
    np.testing.assert_array_equal(got_relu, np.array([np.nan, np.nan, 0, -np.inf, 0], np.float32))


@pytest.mark.parametrize("data_format, axes", [("NHWC", (0, 1, 2)), ("NCHW", (0, 2, 3))])
def test_bias_add_grad_sums_all_but_the_channel_axis(data_format, axes):
    g = np.random.default_rng(3).standard_normal((4, 5, 6, 3)).astype(np.float32)
    with tf.Graph().as_default():
        grad = apply_op1("BiasAddGrad", [tf.constant(g)], {"data_format": data_format})
        with tf.Session() as sess:
            got = sess.run(grad)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, g.sum(axes, dtype=np.float64), rtol=1e-5, atol=1e-5)


# -- _FusedConv2D: the remapper's conv + bias add (+ relu) ---------------------------------------------------
@pytest.mark.parametrize("activation, use_bias_add, device, fused",
                         [(True, True, "/gpu:0", True), (False, True, "/gpu:0", False), (False, True, "/cpu:0", True),
                          (True, False, "/cpu:0", False)])
def test_fused_conv2d_keeps_forward_values_and_training_steps_bit_for_bit(activation, use_bias_add, device, fused):
    """The graph optimizer fuses ``Conv2D`` + ``BiasAdd`` (+ ``Relu``) into ``_FusedConv2D`` where TF's
    remapper.cc does (on a CPU; on a GPU only with a Relu; never a plain ``Add``): the values and every variable
    after training steps equal those of the unrewritten graph, bit for bit."""
    from dfcore.runtime.grappler import no_rewrite_session_config

    rng = np.random.default_rng(11)
    with tf.Graph().as_default(), tf.device(device):
        x = tf.placeholder(tf.float32, [4, 7, 6, 2])
        f = tf.Variable(rng.standard_normal((3, 3, 2, 5)).astype(np.float32))
        b = tf.Variable(rng.standard_normal(5).astype(np.float32))
        conv = tf.nn.conv2d(x, f, [1, 2, 1, 1], "SAME")
        hidden = tf.nn.bias_add(conv, b) if use_bias_add else conv + b
        hidden = tf.nn.relu(hidden) if activation else hidden
        loss = tf.reduce_sum(tf.square(hidden))
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        feed = {x: rng.standard_normal((4, 7, 6, 2)).astype(np.float32)}
        results = {}
        for name, config in (("optimized", None), ("reference", no_rewrite_session_config())):
            with tf.Session(config=config) as sess:
                sess.run(tf.global_variables_initializer())
                trace = [sess.run([hidden, train], feed)[0] for _ in range(3)]
                results[name] = [*trace, *sess.run([f, b])]
                if name == "optimized":
                    ops = {n.op for p in sess.partitions([hidden, train], feed).values() for n in p.nodes}
    assert ("_FusedConv2D" in ops, "Conv2D" in ops) == (fused, not fused)
    for got, want in zip(results["optimized"], results["reference"]):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_fused_conv2d_kernel_reports_a_wrong_bias_length():
    from dfcore.framework import registry
    from dfcore.framework.tensor_shape import TensorShape
    from dfcore.runtime.grappler.graph_item import Node

    node = Node("f", "_FusedConv2D", {"T": tf.float32, "strides": [1, 1, 1, 1], "padding": "VALID",
                                      "dilations": [1, 1, 1, 1], "data_format": "NHWC", "num_args": 1,
                                      "fused_ops": ["BiasAdd", "Relu"], "epsilon": 0.0}, "", 0,
                [(tf.float32, TensorShape([1, 1, 1, 2]))])
    compute = registry.kernel("_FusedConv2D").build(node)
    x, f = np.ones((1, 1, 1, 1), np.float32), np.array([[[[1, -3]]]], np.float32)
    np.testing.assert_array_equal(compute(x, f, np.array([1, 1], np.float32)), [[[[2, 0]]]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"as many biases .*\[3\] vs. \[1,1,1,2\]"):
        compute(x, f, np.ones(3, np.float32))


# -- NCHW, which TF 2.x's CPU kernels accept -----------------------------------------------------------------
NCHW_X = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)


def test_nchw_conv_and_pools_as_recorded_from_tensorflow():
    """Recorded with TF 2.21 (tensorflow-cpu, compat.v1 Session): on NCHW_X, conv2d with a ones [2, 2, 3, 4]
    filter, SAME, gives [2, 4, 4, 5] with out[0, 0, 0] = [276, 288, 300, 312, 159]; max_pool and avg_pool
    [1, 1, 2, 2]/[1, 1, 2, 2] VALID give [[6, 8], [16, 18]] and [[3, 5], [13, 15]] for image 0, channel 0."""
    with tf.Graph().as_default():
        x = tf.constant(NCHW_X)
        conv = tf.nn.conv2d(x, tf.ones([2, 2, 3, 4]), [1, 1, 1, 1], "SAME", data_format="NCHW")
        pools = [pool(x, [1, 1, 2, 2], [1, 1, 2, 2], "VALID", data_format="NCHW")
                 for pool in (tf.nn.max_pool, tf.nn.avg_pool)]
        assert conv.shape.as_list() == [2, 4, 4, 5] and pools[0].shape.as_list() == [2, 3, 2, 2]
        with tf.Session() as sess:
            got_conv, got_max, got_avg = sess.run([conv, *pools])
    np.testing.assert_array_equal(got_conv[0, 0, 0], [276, 288, 300, 312, 159])
    np.testing.assert_array_equal(got_max[0, 0], [[6, 8], [16, 18]])
    np.testing.assert_array_equal(got_avg[0, 0], [[3, 5], [13, 15]])


def test_nchw_gradients_are_the_nhwc_ones_transposed():
    rng = np.random.default_rng(9)
    x, f = rng.standard_normal((2, 7, 6, 3)), rng.standard_normal((3, 2, 3, 4))
    values = {}
    for data_format, strides, ksize in (("NHWC", [1, 2, 1, 1], [1, 3, 2, 1]), ("NCHW", [1, 1, 2, 1], [1, 1, 3, 2])):
        with tf.Graph().as_default():
            x_t = tf.constant(x if data_format == "NHWC" else x.transpose(0, 3, 1, 2))
            f_t = tf.constant(f)
            conv = tf.nn.conv2d(x_t, f_t, strides, "SAME", data_format=data_format)
            pooled = tf.nn.max_pool(conv, ksize, strides, "SAME", data_format=data_format)
            loss = tf.reduce_sum(tf.square(pooled)) + tf.reduce_sum(
                tf.nn.avg_pool(x_t, ksize, strides, "VALID", data_format=data_format))
            with tf.Session() as sess:
                got = sess.run([pooled, *tf.gradients(loss, [x_t, f_t])])
        if data_format == "NCHW":
            got = [got[0].transpose(0, 2, 3, 1), got[1].transpose(0, 2, 3, 1), got[2]]
        values[data_format] = got
    for a, b in zip(values["NHWC"], values["NCHW"]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_nchw_windows_must_leave_batch_and_channels_alone():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"strides must be 4 positive ints \[1, 1, h, w\]"):
            tf.nn.conv2d(tf.zeros([1, 2, 4, 4]), tf.zeros([2, 2, 2, 1]), [1, 2, 1, 1], "SAME", data_format="NCHW")
        with pytest.raises(ValueError, match="data_format must be 'NHWC' or 'NCHW', got 'NCWH'"):
            tf.nn.max_pool(tf.zeros([1, 2, 4, 4]), [1, 1, 2, 2], [1, 1, 2, 2], "SAME", data_format="NCWH")


# -- out= variants: the same results in buffers of the device's allocator -----------------------------------
def test_out_kernels_give_the_plain_kernels_bits_in_dirty_pooled_buffers(monkeypatch):
    from dfcore.framework import registry
    from dfcore.runtime import allocator as allocator_module

    monkeypatch.setattr(allocator_module, "POOL_MIN_BYTES", 0)  # pool every buffer
    rng = np.random.default_rng(4)
    x, f = rng.standard_normal((2, 7, 6, 3)).astype(np.float32), rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    with tf.Graph().as_default():
        conv = tf.nn.conv2d(tf.constant(x), tf.constant(f), [1, 2, 1, 1], "SAME")
        dy = rng.standard_normal(conv.shape.as_list()).astype(np.float32)
        dx = tf.nn.conv2d_backprop_input(tf.constant(list(x.shape)), tf.constant(f), tf.constant(dy), [1, 2, 1, 1],
                                         "SAME")
        pool = tf.nn.max_pool(tf.constant(x), [1, 3, 2, 1], [1, 2, 2, 1], "SAME")
        pool_grad = tf.gradients(pool, [x_t := pool.op.inputs[0]], grad_ys=tf.ones_like(pool))[0]
        ops = [(conv.op, [x, f]), (dx.op, [np.array(x.shape, np.int32), f, dy]), (pool.op, [x])]
        with tf.Session() as sess:
            ops.append((pool_grad.op, [x, sess.run(pool), np.ones(pool.shape.as_list(), np.float32)]))
    assert x_t.op.type == "Const"
    for op, inputs in ops:
        plain = registry.kernel(op.type).build(op)(*inputs)
        allocator = allocator_module.Allocator("cpu")
        shape = (plain.size // plain.shape[-1], plain.shape[-1]) if op.type == "Conv2D" else plain.shape  # as asked
        dirty = allocator.allocate(shape, plain.dtype)
        dirty.fill(np.nan)
        allocator.deallocate(dirty)
        got = registry.out_kernel(op.type).factory(op)(allocator, *inputs)
        assert allocator.stats().reuse_hits == 1, op.type  # the dirty buffer came back, and was overwritten
        np.testing.assert_array_equal(got.view(np.uint32), plain.view(np.uint32), err_msg=op.type)


def test_a_training_step_through_the_out_kernels_keeps_its_bits(monkeypatch):
    """With every buffer pooled, the executor runs the out= variants (``_FusedConv2D``, ``MaxPool`` and their
    gradients' ops): the trained variables equal those of the plain kernels bit for bit."""
    from dfcore.runtime import allocator as allocator_module

    rng = np.random.default_rng(8)
    x0 = rng.standard_normal((3, 8, 7, 2)).astype(np.float32)
    results = []
    for pool_min in (allocator_module.POOL_MIN_BYTES, 0):
        monkeypatch.setattr(allocator_module, "POOL_MIN_BYTES", pool_min)
        with tf.Graph().as_default():
            tf.set_random_seed(1)
            x = tf.placeholder(tf.float32, [3, 8, 7, 2])
            hidden = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
            hidden = tf.nn.max_pool(hidden, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
            hidden = tf.layers.conv2d(hidden, 3, 2, strides=2, activation=tf.nn.relu)
            train = tf.train.GradientDescentOptimizer(0.01).minimize(tf.reduce_sum(tf.square(hidden)))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(3):
                    sess.run(train, {x: x0})
                results.append(sess.run(tf.trainable_variables()))
    for got, want in zip(*results):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
