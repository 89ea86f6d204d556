"""Cache-blocked numpy forms of the fused optimizer updates (``ApplyGradientDescent``, ``ApplyMomentum``,
``ApplyAdam``), bit for bit the whole-array formulas of :mod:`dfcore.ops.training_ops`.

An update written as whole-array numpy makes a fresh temporary per operation and streams each one through
memory; TF's Eigen kernels (``tensorflow/core/kernels/training_ops.cc``) evaluate the whole expression in one
pass. Here the flat arrays are cut into blocks of :data:`BLOCK` elements and each block runs the formula's
ufuncs in TF's order (the same float operations on the same values, so the same bits), writing into the block
of a fresh cache-line-aligned output (:mod:`dfcore.ops.blocked`): each input is read from memory once and each
output written once, the intermediate passes staying in the core's L2 cache. The scalars are 0-d arrays of the
variable's dtype and every ufunc gets a positional ``out``: an augmented assignment with a numpy scalar costs
about 1 us a call in numpy 2, five times a plain ufunc call and half a pass over a block.

Measured on the deep-MNIST Adam step of issue 32 (a 3136x1024 float32 variable, one thread, a 2-core machine
under load 4): blocks of 4096 / 8192 / 16384 / 32768 / 65536 elements took 14.6 / 13.4 / 12.4 / 11.7 / 11.7 ms
with warm caches and 15.5 / 14.5 / 12.8 / 13.0 / 12.9 ms with cold ones; 16384 keeps one ufunc's operands
(3 x 64 KiB) inside a 2 MiB L2. In a training step the update is bound by memory, not by these passes: writing
the three fresh outputs adds about half again (the same step updating var, m and v in place, as TF does, took
8.1 ms against 12.5), and dfcore's published buffers are immutable
(:mod:`dfcore.runtime.variable_store`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .blocked import empty_aligned, run_blocks

__all__ = ["BLOCK", "applies", "adam", "momentum", "gradient_descent_into"]

#: Elements per block (64 KiB of float32). See the module docstring for the measurement.
BLOCK = 16384


def applies(backend: Any, *arrays: Any) -> bool:
    """Whether the blocked forms run here: ``backend`` takes numpy ``out=`` (:attr:`Backend.supports_out`) and
    ``arrays`` are C-contiguous numpy arrays of one shape, of at least :data:`BLOCK` elements (smaller ones gain
    nothing over the whole-array formula)."""
    first = arrays[0]
    return backend.supports_out and type(first) is np.ndarray and first.size >= BLOCK and all(
        type(a) is np.ndarray and a.flags.c_contiguous and a.shape == first.shape for a in arrays)


def _scalars(dtype: np.dtype, *values: Any) -> list[np.ndarray]:
    return [np.asarray(x, dtype) for x in values]


def gradient_descent_into(out: np.ndarray, var: np.ndarray, alpha: Any, delta: np.ndarray) -> np.ndarray:
    """``out = var - delta * alpha`` (``alpha`` a scalar; all of ``var``'s shape and dtype), in blocks when all three
    are C-contiguous and of at least :data:`BLOCK` elements (else two whole-array ufuncs); returns ``out``."""
    (alpha,) = _scalars(var.dtype, alpha)
    subtract, multiply = np.subtract, np.multiply

    def block(x, d, x1):
        multiply(d, alpha, x1)
        subtract(x, x1, x1)

    if out.size >= BLOCK and out.flags.c_contiguous and var.flags.c_contiguous and delta.flags.c_contiguous:
        run_blocks(block, (var, delta), (out,), BLOCK)
    else:
        block(var, delta, out)
    return out


def momentum(var: np.ndarray, accum: np.ndarray, lr: Any, grad: np.ndarray, momentum: Any,
             nesterov: bool) -> tuple[np.ndarray, np.ndarray]:
    """``ApplyMomentum`` (``accum = accum * momentum + grad``; ``var - accum * lr``, Nesterov
    ``var - (grad * lr + accum * momentum * lr)``) into fresh arrays; returns ``(new var, new accum)``."""
    lr, momentum = _scalars(var.dtype, lr, momentum)
    new_var, new_accum = empty_aligned(var), empty_aligned(accum)
    subtract, multiply, add = np.subtract, np.multiply, np.add

    def block(x, a0, g, x1, a1, scratch):
        multiply(a0, momentum, a1)
        add(a1, g, a1)
        if nesterov:
            multiply(g, lr, x1)
            multiply(a1, momentum, scratch)
            multiply(scratch, lr, scratch)
            add(x1, scratch, x1)
        else:
            multiply(a1, lr, x1)
        subtract(x, x1, x1)

    run_blocks(block, (var, accum, grad), (new_var, new_accum), BLOCK, (var.dtype,))
    return new_var, new_accum


def adam(var: np.ndarray, m: np.ndarray, v: np.ndarray, alpha: Any, beta1: Any, beta2: Any, epsilon: Any,
         grad: np.ndarray, nesterov: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``ApplyAdam`` with ``alpha`` = ``lr * sqrt(1 - beta2_power) / (1 - beta1_power)`` already computed:
    ``m1 = m + (grad - m) * (1 - beta1)``, ``v1 = v + (grad * grad - v) * (1 - beta2)``,
    ``var - m1 * alpha / (sqrt(v1) + epsilon)`` (Nesterov: ``grad * (1 - beta1) + beta1 * m1`` for ``m1``), into
    fresh arrays; returns ``(new var, new m, new v)``."""
    one_minus_beta1, one_minus_beta2, beta1, alpha, epsilon = _scalars(
        var.dtype, 1 - beta1, 1 - beta2, beta1, alpha, epsilon)
    new_var, new_m, new_v = empty_aligned(var), empty_aligned(m), empty_aligned(v)
    subtract, multiply, add, divide, sqrt = np.subtract, np.multiply, np.add, np.divide, np.sqrt

    def block(x, m0, v0, g, x1, m1, v1, denominator, scratch):
        subtract(g, m0, m1)
        multiply(m1, one_minus_beta1, m1)
        add(m1, m0, m1)
        multiply(g, g, v1)
        subtract(v1, v0, v1)
        multiply(v1, one_minus_beta2, v1)
        add(v1, v0, v1)
        sqrt(v1, denominator)
        add(denominator, epsilon, denominator)
        if nesterov:
            multiply(g, one_minus_beta1, x1)
            multiply(beta1, m1, scratch)
            add(x1, scratch, x1)
            multiply(x1, alpha, x1)
        else:
            multiply(m1, alpha, x1)
        divide(x1, denominator, x1)
        subtract(x, x1, x1)

    run_blocks(block, (var, m, v, grad), (new_var, new_m, new_v), BLOCK, (var.dtype, var.dtype))
    return new_var, new_m, new_v
