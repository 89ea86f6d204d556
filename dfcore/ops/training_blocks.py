"""numpy ``out=`` forms of the fused optimizer updates, bit for bit the formulas of :mod:`dfcore.ops.training_ops`:
``ApplyMomentum`` whole-array, ``ApplyAdam`` cache-blocked, ``ApplyGradientDescent`` into a given buffer.

An update written as whole-array numpy makes a fresh temporary per operation; TF's Eigen kernels
(``tensorflow/core/kernels/training_ops.cc``) evaluate the whole expression in one pass. Here each formula's
ufuncs run in TF's order (the same float operations on the same values, so the same bits) into fresh
cache-line-aligned outputs (:mod:`dfcore.ops.blocked`) and a reused scratch buffer. :func:`adam` runs them on
blocks of :data:`BLOCK` elements (:func:`dfcore.ops.blocked.run_blocks`): each input is read from memory once and
each output written once, the intermediate passes staying in the core's L2 cache. The scalars are 0-d arrays of
the variable's dtype and every ufunc gets a positional ``out``: an augmented assignment with a numpy scalar costs
about 1 us a call in numpy 2, five times a plain ufunc call.

Measured on this project's 2-core AMD EPYC (L2 1 MiB/core, L3 32 MiB; load 1.3-2, noisy neighbours; one thread,
float32, each call making its fresh outputs, glibc's heap held as in a session). Time of the out form over the
plain formula, medians of 14-20 calls alternating the two, warm / caches flushed by a 64 MiB read before each call:

    elements               100k       200k       400k       800k       1.6M       3.2M
    momentum, whole-array  1.19/1.23  0.99/1.07  0.92/1.06  0.97/0.90  0.96/0.94  0.92/0.93
    adam, blocks of 65536                        0.88/1.03  0.76/0.76  0.62/0.73  0.57/0.57

(back to back, minimum of repeats, momentum 0.95/0.95 at 400k, 0.83/1.00 at 800k; adam 1.09/0.99, 0.98/0.99,
1.05/0.99 at 400k / 800k / 1.6M), hence :data:`OUT_FORMS_BYTES`: below it the ops run the plain formula.
Blocks of 4096 / 8192 / 16384 / 32768 / 65536 / 131072 / 262144 / 524288 elements for the 3136x1024 Adam of
issue 32's deep-MNIST step: 25.4 / 20.4 / 17.3-18.7 / 15.9-17.1 / 15.1-16.5 / 15.1 / 15.6 / 17.4 ms warm, 26.5 /
21.1 / 17.2-18.8 / 16.2-17.1 / 15.1-15.9 / 15.2 / 15.2 / 17.5 ms cold: under 65536 the per-block Python cost (slices,
twelve to fifteen ufunc calls) dominates, past 262144 the blocks leave the L2 cache; :data:`BLOCK` is 65536 (256 KiB of
float32, a ufunc's three operands within the 1 MiB L2). Whole-array over blocks of 16384 at 20k / 200k / 800k /
3.2M / 6.4M / 12.8M elements, warm: gradient descent 0.87 0.69 0.60 0.93 0.89 0.96, momentum 0.88 0.74 0.74 1.01
0.94 0.98 (cold within 0.79-1.07 for both), adam 0.85 0.76 0.97 1.34 2.07 1.34: blocks pay for Adam's twelve
to fifteen passes over nine arrays, not for the two- and four-pass updates. Gradient descent's out form is no
faster than its plain formula (which writes its second ufunc into its first one's fresh result: 1.17 / 1.08 / 1.02
at 200k / 800k / 3.2M), so only the allocator's ``out=`` kernel uses :func:`gradient_descent_into`.

In a training step the update is bound by memory: writing the three fresh outputs adds about half again (on
another 2-core machine, the deep-MNIST step updating var, m and v in place, as TF does, took 8.1 ms against 12.5),
and dfcore's published buffers are immutable (:mod:`dfcore.runtime.variable_store`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .blocked import empty_aligned, run_blocks

__all__ = ["BLOCK", "OUT_FORMS_BYTES", "applies", "adam", "momentum", "gradient_descent_into"]

#: Elements per block of :func:`adam` (256 KiB of float32). See the module docstring.
BLOCK = 65536
#: Bytes per array from which ``ApplyMomentum`` and ``ApplyAdam`` run :func:`momentum` and :func:`adam` (below:
#: the plain formula). See the module docstring.
OUT_FORMS_BYTES = 2 << 20


def applies(backend: Any, min_bytes: int, *arrays: Any) -> bool:
    """Whether an out form runs here: ``backend`` takes numpy ``out=`` (:attr:`Backend.supports_out`) and
    ``arrays`` are C-contiguous numpy arrays of one shape, of at least ``min_bytes`` bytes each."""
    first = arrays[0]
    return backend.supports_out and type(first) is np.ndarray and first.nbytes >= min_bytes and all(
        type(a) is np.ndarray and a.flags.c_contiguous and a.shape == first.shape for a in arrays)


def _scalars(dtype: np.dtype, *values: Any) -> list[np.ndarray]:
    return [np.asarray(x, dtype) for x in values]


def gradient_descent_into(out: np.ndarray, var: np.ndarray, alpha: Any, delta: np.ndarray) -> np.ndarray:
    """``out = var - delta * alpha`` (``alpha`` a scalar; all of ``var``'s shape and dtype) in two whole-array
    ufuncs; returns ``out``."""
    (alpha,) = _scalars(var.dtype, alpha)
    np.multiply(delta, alpha, out)
    return np.subtract(var, out, out)


def momentum(var: np.ndarray, accum: np.ndarray, lr: Any, grad: np.ndarray, momentum: Any,
             nesterov: bool) -> tuple[np.ndarray, np.ndarray]:
    """``ApplyMomentum`` (``accum = accum * momentum + grad``; ``var - accum * lr``, Nesterov
    ``var - (grad * lr + accum * momentum * lr)``) into fresh arrays, whole-array (see the module docstring);
    returns ``(new var, new accum)``."""
    lr, momentum = _scalars(var.dtype, lr, momentum)
    x1, a1 = empty_aligned(var), empty_aligned(accum)
    multiply = np.multiply
    multiply(accum, momentum, a1)
    np.add(a1, grad, a1)
    if nesterov:
        scratch = np.empty(var.shape, var.dtype)
        multiply(grad, lr, x1)
        multiply(a1, momentum, scratch)
        multiply(scratch, lr, scratch)
        np.add(x1, scratch, x1)
    else:
        multiply(a1, lr, x1)
    np.subtract(var, x1, x1)
    return x1, a1


def adam(var: np.ndarray, m: np.ndarray, v: np.ndarray, alpha: Any, beta1: Any, beta2: Any, epsilon: Any,
         grad: np.ndarray, nesterov: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``ApplyAdam`` with ``alpha`` = ``lr * sqrt(1 - beta2_power) / (1 - beta1_power)`` already computed:
    ``m1 = m + (grad - m) * (1 - beta1)``, ``v1 = v + (grad * grad - v) * (1 - beta2)``,
    ``var - m1 * alpha / (sqrt(v1) + epsilon)`` (Nesterov: ``grad * (1 - beta1) + beta1 * m1`` for ``m1``), into
    fresh arrays, in blocks of :data:`BLOCK` elements; returns ``(new var, new m, new v)``."""
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
