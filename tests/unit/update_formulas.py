"""The fused optimizer updates written as plain whole-array numpy, in TF's order (``training_ops.cc``): the
reference the update kernels must match bit for bit, and the check that they do."""

import numpy as np


def momentum_formula(var, accum, lr, grad, momentum, nesterov):
    """``ApplyMomentum``: ``(new var, new accum)``."""
    accum = accum * momentum + grad
    return (var - (grad * lr + accum * momentum * lr) if nesterov else var - accum * lr), accum


def adam_formula(var, m, v, alpha, beta1, beta2, epsilon, grad, nesterov):
    """``ApplyAdam`` with its step size ``alpha`` (``lr * sqrt(1 - beta2_power) / (1 - beta1_power)``):
    ``(new var, new m, new v)``."""
    m = m + (grad - m) * (1 - beta1)
    v = v + (grad * grad - v) * (1 - beta2)
    step = grad * (1 - beta1) + beta1 * m if nesterov else m
    return var - step * alpha / (np.sqrt(v) + epsilon), m, v


def assert_bits(got, want):
    """Each array of ``got`` has the dtype, shape and bytes of its partner in ``want``."""
    for value, expected in zip(got, want, strict=True):
        assert value.dtype == expected.dtype and value.shape == expected.shape
        np.testing.assert_array_equal(np.ascontiguousarray(value).view(np.uint8), expected.view(np.uint8))
