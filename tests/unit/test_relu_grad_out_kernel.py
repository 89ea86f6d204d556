"""The ReluGrad out= kernel (dfcore.ops.out_kernels): TF's values, including NaN, infinities and signed zeros, and
the plain kernel's bits."""

import numpy as np
import pytest

import dfcore as tf
from dfcore.framework import registry
from dfcore.ops.op_util import apply_op1
from dfcore.runtime.allocator import Allocator

INF, NAN = np.inf, np.nan
# Recorded with TF 2.21 (tensorflow-cpu, gen_nn_ops.relu_grad, eager and in a tf.function, float32 and float64 alike,
# and the same on a 120x1000 tiling): gradients G at features Y give WANT, and the zeros' sign bits ZERO_SIGNS.
G = [1.5, -2.0, INF, -INF, NAN, 3.0, -0.0, INF, NAN, -1.0, 2.0, -INF]
Y = [0.0, -1.0, 0.0, -2.0, -1.0, NAN, 1.0, 1.0, 2.0, -0.0, INF, -INF]
WANT = [0.0, -0.0, NAN, NAN, NAN, 0.0, -0.0, INF, NAN, -0.0, 2.0, NAN]
ZERO_SIGNS = {0: False, 1: True, 5: False, 6: True, 9: True}


def _kernels(dtype, shape):
    """The out= kernel and the plain kernel of a ReluGrad node of ``shape`` and ``dtype``."""
    with tf.Graph().as_default():
        node = apply_op1("ReluGrad", [tf.zeros(shape, dtype), tf.zeros(shape, dtype)]).op
        out = registry.out_kernel("ReluGrad").factory(node)
        plain = registry.kernel("ReluGrad").build(node)
    allocator = Allocator("cpu")
    return (lambda g, y: out(allocator, g, y)), plain


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_recorded_from_tensorflow(dtype):
    out, _ = _kernels(dtype, [12])
    got = out(np.array(G, dtype), np.array(Y, dtype))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.array(WANT, dtype))
    assert {i: bool(np.signbit(got[i])) for i in ZERO_SIGNS} == ZERO_SIGNS


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 6), (7,)])
def test_out_kernel_is_the_plain_kernel_bit_for_bit(dtype, shape):
    rng = np.random.default_rng(5)
    g = rng.standard_normal(shape).astype(dtype)
    y = rng.standard_normal(shape).astype(dtype)
    specials = np.array(G, dtype)[:g.size], np.array(Y, dtype)[:g.size]
    g.reshape(-1)[:specials[0].size], y.reshape(-1)[:specials[1].size] = specials
    out, plain = _kernels(dtype, list(shape))
    with np.errstate(invalid="ignore"):
        want = plain(g, y)
    got = out(g, y)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def test_a_strided_input_gives_the_plain_kernel_bits():
    rng = np.random.default_rng(6)
    g = rng.standard_normal((4, 12)).astype(np.float32)[:, ::2]
    y = rng.standard_normal((4, 6)).astype(np.float32)
    out, plain = _kernels(np.float32, [4, 6])
    assert out(g, y).tobytes() == plain(g, y).tobytes()
