"""tf.image and tf.random_crop against TF's recorded outputs on known images.

Every expected array below was recorded with TensorFlow 2.21 (``tf.compat.v1``, graph mode, TF 1.x defaults:
``align_corners=False``, no half-pixel centres) on the images ``IMG`` and ``U8`` defined here. The random ops
are checked by their properties and seed rules (TF's own generator gives other numbers).
"""

import numpy as np
import pytest

import dfcore as tf

IMG = np.arange(24, dtype=np.float32).reshape(3, 4, 2) * np.float32(1.5) - 7
U8 = (np.arange(24).reshape(3, 4, 2) * 11 % 256).astype(np.uint8)
WEIGHTS = np.arange(30, dtype=np.float32).reshape(1, 5, 3, 2)


def run(tensor):
    with tf.Session() as sess:
        return sess.run(tensor)


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def test_resize_bilinear_and_nearest():
    bilinear = run(tf.image.resize_images(IMG, [5, 3]))
    assert bilinear.dtype == np.float32
    np.testing.assert_allclose(bilinear[..., 0], [[-7, -3, 1], [0.2, 4.2, 8.2], [7.4, 11.4, 15.4],
                                                  [14.6, 18.6, 22.6], [17, 21, 25]], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bilinear[..., 1] - bilinear[..., 0], 1.5, atol=1e-5)
    u8 = run(tf.image.resize_images(U8, [2, 6]))  # uint8 in, float32 out
    np.testing.assert_allclose(u8[..., 0], [[0, 14.666667, 29.333334, 44, 58.666668, 66],
                                            [132, 146.66667, 161.33333, 176, 190.66667, 198]], rtol=1e-6)
    nearest = run(tf.image.resize_images(IMG, [5, 3], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR))
    np.testing.assert_array_equal(nearest[..., 0], [[-7, -4, -1], [-7, -4, -1], [5, 8, 11], [5, 8, 11],
                                                    [17, 20, 23]])
    near_u8 = run(tf.image.resize_images(U8[None], [2, 2], method=1))
    assert near_u8.dtype == np.uint8
    np.testing.assert_array_equal(near_u8[0], [[[0, 11], [44, 55]], [[88, 99], [132, 143]]])
    aligned = run(tf.image.resize_images(IMG, [5, 3], align_corners=True))
    np.testing.assert_allclose(aligned[..., 0], [[-7, -2.5, 2], [-1, 3.5, 8], [5, 9.5, 14], [11, 15.5, 20],
                                                 [17, 21.5, 26]], atol=1e-5)
    assert tf.image.resize is tf.image.resize_images


def test_resize_shapes_and_errors():
    assert tf.image.resize_images(tf.placeholder(tf.uint8, [None, 4, 3]), [7, 8]).shape.as_list() == [7, 8, 3]
    assert tf.image.resize_images(tf.placeholder(tf.uint8, [None, 4, 3]), [7, 8], method=1).dtype == tf.uint8
    assert tf.image.resize_images(tf.placeholder(tf.float64, [2, 4, 3]), [7, 8]).dtype == tf.float32
    with pytest.raises(ValueError, match="'images' must have either 3 or 4 dimensions."):
        tf.image.resize_images(tf.placeholder(tf.float64, [4, 3]), [7, 8])


def test_resize_gradients():
    x = tf.constant(IMG[None])
    bilinear = tf.gradients(tf.reduce_sum(tf.image.resize_bilinear(x, [5, 3]) * WEIGHTS), x)[0]
    nearest = tf.gradients(tf.reduce_sum(tf.image.resize_nearest_neighbor(x, [5, 3]) * WEIGHTS), x)[0]
    got_bilinear, got_nearest = run([bilinear, nearest])
    np.testing.assert_allclose(got_bilinear[0, ..., 0], [[2.4, 3.466666, 4.4, 5.333334],
                                                         [16.8, 13.33333, 14.399998, 15.466667],
                                                         [40.800003, 29.866665, 31.2, 32.53334]], rtol=1e-5)
    np.testing.assert_array_equal(got_nearest[0, ..., 0], [[6, 10, 14, 0], [30, 34, 38, 0], [24, 26, 28, 0]])


def test_standardization_brightness_contrast():
    expected = np.linspace(-1.661325, 1.661325, 24).reshape(3, 4, 2)  # recorded: evenly spaced, float32
    np.testing.assert_allclose(run(tf.image.per_image_standardization(IMG)), expected, atol=2e-6)
    np.testing.assert_allclose(run(tf.image.per_image_standardization(U8)), expected, atol=2e-6)
    np.testing.assert_array_equal(run(tf.image.per_image_standardization(np.ones((2, 2, 1), np.float32))), 0)
    assert tf.image.per_image_standardization(tf.placeholder(tf.float16, [2, 4, 3])).dtype == tf.float32
    np.testing.assert_allclose(run(tf.image.adjust_contrast(IMG, 1.7))[0, :, 0], [-18.55, -13.45, -8.35, -3.25],
                               rtol=1e-5)
    np.testing.assert_array_equal(run(tf.image.adjust_contrast(U8, 1.7))[..., 1],
                                  [[0, 0, 1, 38], [76, 113, 150, 188], [225, 255, 255, 255]])
    np.testing.assert_allclose(run(tf.image.adjust_brightness(IMG, 0.25)), IMG + 0.25)
    np.testing.assert_array_equal(run(tf.image.adjust_brightness(U8, 0.25))[..., 0],
                                  [[63, 85, 107, 130], [152, 174, 196, 218], [240, 255, 255, 255]])


def test_crops_pads_flips():
    np.testing.assert_array_equal(run(tf.image.resize_image_with_crop_or_pad(IMG, 2, 6))[..., 0],
                                  [[0, -7, -4, -1, 2, 0], [0, 5, 8, 11, 14, 0]])
    np.testing.assert_array_equal(run(tf.image.resize_image_with_crop_or_pad(IMG, 5, 1))[:, 0, 0],
                                  [0, -4, 8, 20, 0])
    with pytest.raises(ValueError, match="target_height must be > 0."):
        tf.image.resize_image_with_crop_or_pad(IMG, 0, 1)
    big = np.arange(7 * 9, dtype=np.float32).reshape(7, 9, 1)
    half = run(tf.image.central_crop(big, 0.5))[..., 0]
    np.testing.assert_array_equal(half, big[1:6, 2:7, 0])  # recorded: rows 11..15 to 47..51
    np.testing.assert_array_equal(run(tf.image.central_crop(big, 0.33))[..., 0], [[21, 22, 23], [30, 31, 32],
                                                                                  [39, 40, 41]])
    with pytest.raises(ValueError, match=r"central_fraction must be within \(0, 1\]"):
        tf.image.central_crop(big, 0.0)
    np.testing.assert_array_equal(run(tf.image.flip_left_right(U8))[..., 0],
                                  [[66, 44, 22, 0], [154, 132, 110, 88], [242, 220, 198, 176]])
    np.testing.assert_array_equal(run(tf.image.flip_up_down(U8[None]))[0, ..., 0],
                                  [[176, 198, 220, 242], [88, 110, 132, 154], [0, 22, 44, 66]])
    with pytest.raises(ValueError, match=r"'image' \(shape \(4, 3\)\) must be at least three-dimensional."):
        tf.image.flip_left_right(tf.placeholder(tf.float64, [4, 3]))


def test_convert_image_dtype():
    cases = [(np.uint8([0, 1, 128, 255]), tf.float32, False, [0, 0.003922, 0.501961, 1]),
             (np.float32([0, 0.5, 0.999, 1.0, 1.2, -0.1]), tf.uint8, False, [0, 127, 255, 255, 50, 231]),
             (np.float32([0, 0.5, 1.2, -0.1]), tf.uint8, True, [0, 127, 255, 0]),
             (np.uint8([0, 1, 255]), tf.int32, False, [0, 8388608, 2139095040]),
             (np.int32([0, 2**24, 2**31 - 1]), tf.uint8, False, [0, 2, 255]),
             (np.int32([0, 2**30, 2**31 - 1]), tf.float32, False, [0, 0.5, 1])]
    for image, dtype, saturate, expected in cases:
        got = run(tf.image.convert_image_dtype(image, dtype, saturate=saturate))
        assert got.dtype == dtype.as_numpy_dtype
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_random_ops_errors():
    with pytest.raises(ValueError, match="max_delta must be non-negative."):
        tf.image.random_brightness(IMG, -1.0)
    with pytest.raises(ValueError, match="upper must be > lower."):
        tf.image.random_contrast(IMG, 0.5, 0.2)
    with pytest.raises(ValueError, match="lower must be non-negative."):
        tf.image.random_contrast(IMG, -0.5, 0.2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need value.shape >= size"):
        run(tf.random_crop(IMG, [4, 4, 2]))


def test_random_ops_values_and_seeds():
    tf.set_random_seed(7)
    flips = [tf.image.random_flip_left_right(IMG), tf.image.random_flip_up_down(IMG)]
    batch_flip = tf.image.random_flip_left_right(np.stack([IMG] * 8))
    bright = tf.image.random_brightness(IMG, 0.3)
    contrast = tf.image.random_contrast(IMG, 0.2, 1.8)
    crop = tf.random_crop(IMG, [2, 3, 2])
    assert crop.shape.as_list() == [2, 3, 2]
    assert tf.image.random_flip_left_right(tf.placeholder(tf.float32, [None, 4, 3])).shape.as_list() == [None, 4, 3]
    draws = []
    for _ in range(2):  # a new session with the same seeds repeats the draws
        with tf.Session() as sess:
            draws.append([sess.run([*flips, batch_flip, bright, contrast, crop]) for _ in range(6)])
    for run_a, run_b in zip(*draws, strict=True):
        for a, b in zip(run_a, run_b, strict=True):
            np.testing.assert_array_equal(a, b)
    seen_lr = set()
    for lr, ud, batch, brightened, contrasted, cropped in draws[0]:
        seen_lr.add(np.array_equal(lr, IMG[:, ::-1]))
        assert np.array_equal(lr, IMG) or np.array_equal(lr, IMG[:, ::-1])
        assert np.array_equal(ud, IMG) or np.array_equal(ud, IMG[::-1])
        assert all(np.array_equal(b, IMG) or np.array_equal(b, IMG[:, ::-1]) for b in batch)
        delta = brightened - IMG
        assert np.ptp(delta) < 1e-5 and -0.3 <= delta.flat[0] < 0.3
        mean = IMG.mean(axis=(0, 1))
        factor = (contrasted - mean) / (IMG - mean)
        assert np.ptp(factor) < 1e-4 and 0.2 <= factor.flat[0] < 1.8
        windows = [IMG[i:i + 2, j:j + 3] for i in range(2) for j in range(2)]
        assert any(np.array_equal(cropped, w) for w in windows)
    assert seen_lr == {True, False}  # 6 fair draws: both outcomes (fixed by the seed)
