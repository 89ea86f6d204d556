"""The numpy out forms of the updates (dfcore.ops.training_blocks: Adam blocked, Momentum and gradient descent
whole-array) against TF's formulas (training_ops.cc) evaluated as whole-array numpy in TF's order: the same bits,
in every block and in a partial last one. Which form an op runs at which size: test_update_forms.py."""

import numpy as np
import pytest
from update_formulas import adam_formula, assert_bits, momentum_formula

from dfcore import backends
from dfcore.ops import blocked, training_blocks

RNG = np.random.default_rng(7)
NUMPY = backends.get(backends.NUMPY)
INF_NAN = (np.inf, -np.inf, np.nan, 0.0, -0.0)


def _arrays(shape, dtype, count):
    """``count`` random arrays; the first gets infinities, a NaN and signed zeros at its start."""
    arrays = [RNG.standard_normal(shape).astype(dtype) for _ in range(count)]
    arrays[0].reshape(-1)[:len(INF_NAN)] = INF_NAN
    return arrays


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 5 elements: a 4x6 array is four whole blocks and a partial one of 4."""
    monkeypatch.setattr(training_blocks, "BLOCK", 5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nesterov", [False, True])
def test_out_forms_are_the_formula_bit_for_bit(small_blocks, dtype, nesterov):
    with np.errstate(all="ignore"):
        var, m, grad = _arrays((4, 6), dtype, 3)
        v = np.abs(RNG.standard_normal((4, 6))).astype(dtype)
        scalars = [np.asarray(x, dtype) for x in (0.003, 0.9, 0.999, 1e-7)]
        assert_bits(training_blocks.adam(var, m, v, *scalars, grad, nesterov),
                     adam_formula(var, m, v, *scalars, grad, nesterov))
        lr, mu = np.asarray(0.01, dtype), np.asarray(0.9, dtype)
        assert_bits(training_blocks.momentum(var, m, lr, grad, mu, nesterov),
                     momentum_formula(var, m, lr, grad, mu, nesterov))
        alpha = np.asarray(0.05, dtype)
        out = np.empty_like(var)
        assert training_blocks.gradient_descent_into(out, var, alpha, grad) is out
        assert_bits([out], [var - grad * alpha])


def test_applies_only_to_contiguous_numpy_arrays_of_one_shape_and_the_given_bytes():
    a, b = np.zeros((4, 6), np.float32), np.zeros((4, 6), np.float32)  # 96 bytes each
    assert training_blocks.applies(NUMPY, 96, a, b)
    assert not training_blocks.applies(NUMPY, 97, a, b)
    assert not training_blocks.applies(NUMPY, 0, a[:, :2], a[:, :2])  # not C-contiguous
    assert not training_blocks.applies(NUMPY, 0, a, b.reshape(6, 4))
    assert not training_blocks.applies(NUMPY, 0, a, b.tolist())
    assert not training_blocks.applies(type("NoOut", (), {"supports_out": False})(), 0, a, b)


def test_gradient_descent_into_a_strided_view_is_the_formula():
    var, delta = _arrays((6, 8), np.float32, 2)
    out = np.empty((6, 16), np.float32)[:, ::2]  # not contiguous: the whole-array form
    with np.errstate(all="ignore"):
        training_blocks.gradient_descent_into(out, var, np.float32(0.5), delta)
        assert_bits([out], [var - delta * np.float32(0.5)])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex128])
def test_empty_aligned_starts_on_a_cache_line(dtype):
    like = np.zeros((3, 5), dtype)
    out = blocked.empty_aligned(like)
    assert out.ctypes.data % blocked.ALIGNMENT == 0
    assert out.shape == like.shape and out.dtype == like.dtype and out.flags.c_contiguous and out.flags.writeable
    out[...] = 7
    np.testing.assert_array_equal(out, np.full((3, 5), 7, dtype))


def test_updates_write_cache_line_aligned_outputs(small_blocks):
    var, m, v, grad = _arrays((4, 6), np.float32, 4)
    scalars = [np.float32(x) for x in (0.003, 0.9, 0.999, 1e-7)]
    with np.errstate(all="ignore"):
        outputs = [*training_blocks.adam(var, m, v, *scalars, grad, False),
                   *training_blocks.momentum(var, m, scalars[0], grad, scalars[1], False)]
    assert all(out.ctypes.data % blocked.ALIGNMENT == 0 for out in outputs)
