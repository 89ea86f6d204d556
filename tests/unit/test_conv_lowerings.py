"""The two im2col layouts of dfcore.ops.conv_windows (tap-major columns for a one-channel input, window-major
for more) and col2im's row-by-row, batch-inner sums, against loops written from the definitions and finite
differences: both paddings, strides, dilations, partial taps, NCHW, a batch lowered in one chunk or in
chunks of one or two images, float32 within GEMM tolerance of a float64 loop."""

import threading

import numpy as np
import pytest
from test_conv_kernels import CASES, _geometry, naive_backprops
from test_nn_conv_pool import naive_conv

import dfcore as tf
from dfcore.ops import conv_windows


@pytest.fixture(params=[None, 1, 2], ids=["one-chunk", "image-by-image", "two-images"])
def chunked(request, monkeypatch):
    """Run with the plans' chunks as they are, then of one image, then of two (three images leave a partial
    last chunk)."""
    if request.param is not None:
        made = conv_windows.WindowPlan.__init__

        def init(plan, *args):
            made(plan, *args)
            plan.chunk = plan.col2im_chunk = request.param

        monkeypatch.setattr(conv_windows.WindowPlan, "__init__", init)
    return request.param


def _run_conv_and_backprops(x, f, dy, strides, dilations, padding, data_format="NHWC"):
    """``(conv, input gradient, filter gradient)`` from dfcore's three kernels, NHWC in and out."""
    def layout(a):
        return a.transpose(0, 3, 1, 2) if data_format == "NCHW" else a

    def back(a):
        return a.transpose(0, 2, 3, 1) if data_format == "NCHW" else a

    def window(values):
        return [1, 1, *values] if data_format == "NCHW" else [1, *values, 1]

    attrs = dict(strides=window(strides), padding=padding, dilations=window(dilations), data_format=data_format)
    dtype = tf.as_dtype(x.dtype)
    with tf.Graph().as_default():
        x_t, dy_t = tf.placeholder(dtype, layout(x).shape), tf.placeholder(dtype, layout(dy).shape)
        f_t = tf.constant(f)
        y = tf.nn.conv2d(x_t, f_t, **attrs)
        dx = tf.nn.conv2d_backprop_input(tf.constant(list(layout(x).shape)), f_t, dy_t, **attrs)
        df = tf.nn.conv2d_backprop_filter(x_t, tf.constant(list(f.shape)), dy_t, **attrs)
        with tf.Session() as sess:
            got_y, got_dx, got_df = sess.run([y, dx, df], {x_t: layout(x), dy_t: layout(dy)})
    return back(got_y), back(got_dx), got_df


@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("height, width, kernel, strides, dilations, padding", CASES)
def test_both_layouts_match_the_definitions_run_after_run(height, width, kernel, strides, dilations, padding,
                                                          channels, chunked):
    """Run twice, so that the second run reuses the first run's dirty scratch."""
    rng = np.random.default_rng(height * 17 + width + channels)
    f = rng.standard_normal((*kernel, channels, 4))
    oh, ow, _, _ = _geometry((3, height, width), kernel, strides, dilations, padding)
    for _ in range(2):
        x, dy = rng.standard_normal((3, height, width, channels)), rng.standard_normal((3, oh, ow, 4))
        got_y, got_dx, got_df = _run_conv_and_backprops(x, f, dy, strides, dilations, padding)
        want_dx, want_df = naive_backprops(x, f, dy, strides, dilations, padding)
        np.testing.assert_allclose(got_y, naive_conv(x, f, strides, dilations, padding), atol=1e-12)
        np.testing.assert_allclose(got_dx, want_dx, atol=1e-12)
        np.testing.assert_allclose(got_df, want_df, atol=1e-12)


@pytest.mark.parametrize("channels", [1, 3])
def test_float32_nchw_is_the_float64_loop_within_gemm_tolerance(channels, chunked):
    """NCHW runs the NHWC kernels between transposes; float32 products agree with a float64 loop to the
    rounding of a float32 GEMM over ``kh·kw·C`` (or ``N·out_h·out_w``) terms."""
    rng = np.random.default_rng(channels)
    x = rng.standard_normal((5, 9, 8, channels)).astype(np.float32)
    f = rng.standard_normal((3, 3, channels, 6)).astype(np.float32)
    strides, dilations = (2, 1), (1, 2)
    oh, ow, _, _ = _geometry(x.shape, (3, 3), strides, dilations, "SAME")
    dy = rng.standard_normal((5, oh, ow, 6)).astype(np.float32)
    got = _run_conv_and_backprops(x, f, dy, strides, dilations, "SAME", "NCHW")
    x64, f64, dy64 = x.astype(np.float64), f.astype(np.float64), dy.astype(np.float64)
    want = (naive_conv(x64, f64, strides, dilations, "SAME"),
            *naive_backprops(x64, f64, dy64, strides, dilations, "SAME"))
    for g, w in zip(got, want):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("strides, dilations, padding", [((1, 1), (1, 1), "SAME"), ((2, 1), (1, 1), "VALID"),
                                                         ((1, 2), (2, 1), "SAME")])
def test_one_channel_gradients_match_finite_differences(strides, dilations, padding):
    rng = np.random.default_rng(sum(strides) + 3 * sum(dilations))
    x, f = rng.standard_normal((2, 7, 6, 1)), rng.standard_normal((3, 2, 1, 3))
    with tf.Graph().as_default():
        x_t, f_t = tf.constant(x), tf.constant(f)
        y = tf.nn.conv2d(x_t, f_t, [1, *strides, 1], padding, dilations=[1, *dilations, 1])
        with tf.Session() as sess:
            shape = sess.run(y).shape
            assert tf.test.compute_gradient_error(x_t, x.shape, y, shape, x_init_value=x) < 1e-6
            assert tf.test.compute_gradient_error(f_t, f.shape, y, shape, x_init_value=f) < 1e-6


def test_a_one_channel_plan_keeps_its_columns_tap_major():
    """The columns of a one-channel input are laid out ``[kh, kw, images, out_h, out_w]``, and their matrix is
    the transpose of that buffer (no copy)."""
    plan = conv_windows.WindowPlan((3, 5, 4, 1), 2, 3, (1, 1), (1, 1), 5, 4, 0, 1)
    assert plan.tap_major and not conv_windows.WindowPlan((3, 5, 4, 2), 2, 3, (1, 1), (1, 1), 5, 4, 0, 1).tap_major
    x = np.arange(60.0).reshape(3, 5, 4, 1)
    cols = plan._take(x.dtype, "columns")
    part = plan._images(cols, 2)
    plan._fill(part, x[:2])
    matrix = plan._matrix(part)
    assert cols.shape == (2, 3, 3, 5, 4) and matrix.shape == (40, 6) and np.shares_memory(matrix, cols)
    padded = np.pad(x[:2, :, :, 0], ((0, 0), (0, 1), (1, 1)))  # SAME 2x3: 0 rows before, 1 column before
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(matrix[:, i * 3 + j], padded[:, i:i + 5, j:j + 4].reshape(-1))


@pytest.mark.parametrize("strides, dilations", [((1, 1), (1, 1)), ((2, 1), (1, 2))])
def test_col2im_writes_every_element_of_a_dirty_buffer(strides, dilations, chunked):
    """col2im sums into zeroed blocks of its own and copies them out: NaNs left in the output buffer are gone,
    also where no window reads an input (VALID, a 3-row window at stride 2 leaves the last of 8 rows unread),
    and the result is the loop's."""
    rng = np.random.default_rng(7)
    for padding, x_shape in (("SAME", (3, 7, 5, 2)), ("VALID", (3, 8, 6, 2))):
        f = rng.standard_normal((3, 3, 2, 4))
        oh, ow, top, left = _geometry(x_shape, (3, 3), strides, dilations, padding)
        plan = conv_windows.WindowPlan(x_shape, 3, 3, strides, dilations, oh, ow, top, left)
        dy = rng.standard_normal((3, oh, ow, 4))
        got = plan.col2im_matmul(dy.reshape(-1, 4), f, np.full(x_shape, np.nan))
        want, _ = naive_backprops(np.zeros(x_shape), f, dy, strides, dilations, padding)
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_the_batch_is_split_into_even_chunks_within_the_scratch_bounds(monkeypatch):
    """50 images whose columns allow at most 28 a chunk go as 25 + 25; col2im's blocks (at most 20 images of
    one output row's products) as 17 + 17 + 16, or of 5 where a row of a 64-channel ``dy`` allows only 5. The
    scratch sizes count 8 bytes a value."""
    columns_per_image, row_products_per_image = 6 * 6 * 9 * 2 * 8, 6 * 9 * 2 * 8
    monkeypatch.setattr(conv_windows, "SCRATCH_BYTES", 28 * columns_per_image + 5)
    monkeypatch.setattr(conv_windows, "COL2IM_BYTES", 20 * row_products_per_image)
    plan = conv_windows.WindowPlan((50, 6, 6, 2), 3, 3, (1, 1), (1, 1), 6, 6, 1, 1)
    assert plan.chunks() == [(0, 25), (25, 50)]
    assert plan.chunks(plan.col2im_chunk) == [(0, 17), (17, 34), (34, 50)]
    assert plan._take(np.dtype(np.float64), "columns").nbytes <= conv_windows.SCRATCH_BYTES
    assert plan.col2im_block(4) == 17 and plan.col2im_block(64) == 5
    for kind, depth in (("taps", 0), ("target", 0), ("rows", 4), ("rows", 64)):
        assert plan._take(np.dtype(np.float64), kind, depth).nbytes <= conv_windows.COL2IM_BYTES, (kind, depth)


@pytest.mark.parametrize("channels", [1, 3])
def test_an_empty_batch_gives_empty_gradients_and_a_zero_filter_gradient(channels):
    """Recorded with TF 2.21 (tensorflow-cpu, compat.v1 Session): conv2d of a [0, 5, 5, 3] feed with a 3x3x3x4
    filter, SAME, gives a [0, 5, 5, 4] output, a [0, 5, 5, 3] input gradient and an all-zero filter gradient."""
    f = np.ones((3, 3, channels, 4), np.float32)
    got_y, got_dx, got_df = _run_conv_and_backprops(np.zeros((0, 5, 5, channels), np.float32), f,
                                                    np.zeros((0, 5, 5, 4), np.float32), (1, 1), (1, 1), "SAME")
    assert got_y.shape == (0, 5, 5, 4) and got_dx.shape == (0, 5, 5, channels)
    np.testing.assert_array_equal(got_df, np.zeros_like(f))


def test_threads_running_one_input_gradient_get_scratch_of_their_own():
    """col2im takes three scratch buffers a call from the plan's free lists (numpy lets go of the GIL inside
    its products and copies): four threads calling one plan at once each get the loop's result."""
    rng = np.random.default_rng(12)
    shape, f = (6, 10, 9, 8), rng.standard_normal((3, 3, 8, 12))
    plan = conv_windows.WindowPlan(shape, 3, 3, (1, 1), (1, 1), 10, 9, 1, 1)
    cases = [rng.standard_normal((6, 10, 9, 12)) for _ in range(4)]
    wants = [naive_backprops(np.zeros(shape), f, dy, (1, 1), (1, 1), "SAME")[0] for dy in cases]
    start, failures = threading.Barrier(len(cases)), []

    def worker(k):
        start.wait()
        for _ in range(100):
            got = plan.col2im_matmul(cases[k].reshape(-1, 12), f, np.empty(shape))
            if not np.allclose(got, wants[k], atol=1e-12):
                failures.append(k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
