"""Initializers against their definitions (TF 1.x init_ops.py; Glorot & Bengio 2010; He et al. 2015).

Statistics are checked on large draws with bounds that hold with overwhelming probability, and
seeded draws must repeat exactly.
"""

import math

import numpy as np
import pytest

import dfcore as tf
from dfcore.ops.init_ops import compute_fans


def draw(initializer, shape, dtype=tf.float32):
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        value = initializer(shape, dtype=dtype)
        with tf.Session() as sess:
            return sess.run(value)


def test_zeros_ones_constant():
    np.testing.assert_array_equal(draw(tf.zeros_initializer(), [2, 3]), np.zeros([2, 3]))
    np.testing.assert_array_equal(draw(tf.ones_initializer(), [4]), np.ones([4]))
    np.testing.assert_array_equal(draw(tf.constant_initializer(2.5), [2, 2]), np.full([2, 2], 2.5))
    np.testing.assert_array_equal(draw(tf.constant_initializer([1, 2, 3, 4, 5, 6]), [2, 3]),
                                  np.arange(1, 7).reshape(2, 3))
    with pytest.raises(TypeError, match="Invalid type for initial value"):
        tf.constant_initializer({"a": 1})


def test_random_uniform_and_normal_follow_their_parameters():
    uniform = draw(tf.random_uniform_initializer(-2.0, 3.0, seed=3), [20000])
    assert uniform.min() >= -2.0 and uniform.max() < 3.0 and abs(uniform.mean() - 0.5) < 0.05
    normal = draw(tf.random_normal_initializer(1.0, 2.0, seed=3), [20000])
    assert abs(normal.mean() - 1.0) < 0.06 and abs(normal.std() - 2.0) < 0.06


def test_truncated_normal_stays_within_two_stddev():
    values = draw(tf.truncated_normal_initializer(0.0, 0.5, seed=4), [20000])
    assert np.abs(values).max() <= 1.0
    assert abs(values.std() - 0.5 * 0.87962566103423978) < 0.02  # the std of a normal truncated at ±2σ


@pytest.mark.parametrize("shape, fans", [([], (1, 1)), ([5], (5, 5)), ([3, 4], (3, 4)), ([2, 3, 4, 5], (24, 30))])
def test_fans_of_matrices_and_convolution_kernels(shape, fans):
    assert compute_fans(shape) == fans


def test_glorot_uniform_limit_is_sqrt_6_over_fan_in_plus_fan_out():
    values = draw(tf.glorot_uniform_initializer(seed=5), [200, 300])
    limit = math.sqrt(6.0 / 500)
    assert values.max() < limit and values.min() >= -limit and values.max() > 0.99 * limit
    assert abs(values.var() - 2.0 / 500) < 0.05 * 2.0 / 500


def test_glorot_normal_and_he_variance_scaling_have_variance_scale_over_fan():
    glorot = draw(tf.glorot_normal_initializer(seed=6), [200, 300])
    assert abs(glorot.var() - 2.0 / 500) < 0.05 * 2.0 / 500
    he = draw(tf.variance_scaling_initializer(2.0, "fan_in", "untruncated_normal", seed=6), [3, 3, 64, 128])
    assert abs(he.var() - 2.0 / (3 * 3 * 64)) < 0.05 * 2.0 / (3 * 3 * 64)
    uniform = draw(tf.variance_scaling_initializer(1.0, "fan_out", "uniform", seed=6), [100, 50])
    assert uniform.max() < math.sqrt(3.0 / 50)


def test_variance_scaling_rejects_bad_arguments_with_tf_messages():
    with pytest.raises(ValueError, match="`scale` must be positive float."):
        tf.variance_scaling_initializer(0.0)
    with pytest.raises(ValueError, match="Invalid `mode` argument: fan_sideways"):
        tf.variance_scaling_initializer(mode="fan_sideways")
    with pytest.raises(ValueError, match="Invalid `distribution` argument: poisson"):
        tf.variance_scaling_initializer(distribution="poisson")
    with pytest.raises(TypeError, match="non-floating point type int32"):
        tf.random_normal_initializer(dtype=tf.int32)


def test_seeded_initializers_repeat_exactly():
    first = draw(tf.glorot_uniform_initializer(seed=7), [10, 10])
    np.testing.assert_array_equal(first, draw(tf.glorot_uniform_initializer(seed=7), [10, 10]))
    assert not np.array_equal(first, draw(tf.glorot_uniform_initializer(seed=8), [10, 10]))


def test_tf_initializers_namespace_spellings():
    assert tf.initializers.zeros is tf.zeros_initializer
    assert tf.initializers.glorot_uniform is tf.glorot_uniform_initializer
    assert tf.initializers.variance_scaling is tf.variance_scaling_initializer
    assert tf.initializers.global_variables is tf.global_variables_initializer
    config = tf.initializers.random_normal(0.0, 2.0, seed=1).get_config()
    assert config == {"mean": 0.0, "stddev": 2.0, "seed": 1, "dtype": "float32"}
