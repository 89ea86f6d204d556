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

Which form at which size, measured on this project's 2-core AMD EPYC (L2 1 MiB/core, L3 32 MiB; load 0.7-2; one
thread, float32, each call making its fresh outputs, glibc's heap held as in a session; per-call minimum of
paired repeats, warm caches / caches flushed by a 64 MiB read before each call). Time of the out form over the
plain formula (:mod:`dfcore.ops.training_ops`) at 200k / 400k / 800k / 1.6M / 3.2M elements:

    momentum, whole-array  warm 1.05 0.95 0.83 0.84 0.81   cold 0.96 0.95 1.00 0.73 0.98
    adam, blocked          warm 1.42 1.56 1.12 0.82 0.72   cold 1.03 1.11 1.13 0.50 0.65

hence :data:`MOMENTUM_OUT_BYTES` and :data:`ADAM_BLOCKED_BYTES` (below them the ops run the plain formula). Whole-
array over blocked (the blocked forms this module had for all three) at 20k / 50k / 200k / 400k / 800k / 1.6M /
3.2M / 6.4M elements, warm:

    gradient descent  0.87 0.79 0.69 0.76 0.60 0.76 0.93 0.89   (12.8M: 0.96)
    momentum          0.88 0.78 0.74 0.73 0.74 0.93 1.01 0.94   (12.8M: 0.98)
    adam              0.85 0.80 0.76 0.79 0.97 1.29 1.34 2.07   (12.8M: 1.34)

cold: gradient descent 0.98 0.87 1.01 0.79 0.90 0.90 1.00 0.95, momentum 0.92 0.94 0.90 0.91 0.87 1.00 1.07 0.95,
adam 0.96 0.94 0.93 0.97 1.06 1.32 1.43 1.94. The blocks' per-block Python cost (slices, a ufunc call each)
outweighs what they save for the two- and four-pass updates at every size measured; Adam's fifteen passes over
nine arrays gain once the arrays outgrow the L3 cache. Gradient descent's out form is no faster than the plain
formula (which already writes its second ufunc into its first one's fresh result: 1.17 / 1.08 / 1.02 at 200k /
800k / 3.2M), so only the allocator's ``out=`` kernel uses :func:`gradient_descent_into`.

The block size was tuned on the deep-MNIST Adam step of issue 32 (a 3136x1024 float32 variable, one thread, a
2-core machine with a 2 MiB L2, load 4): blocks of 4096 / 8192 / 16384 / 32768 / 65536 elements took 14.6 / 13.4
/ 12.4 / 11.7 / 11.7 ms with warm caches and 15.5 / 14.5 / 12.8 / 13.0 / 12.9 ms with cold ones. In a training
step the update is bound by memory: writing the three fresh outputs adds about half again (the same step
updating var, m and v in place, as TF does, took 8.1 ms against 12.5), and dfcore's published buffers are
immutable (:mod:`dfcore.runtime.variable_store`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .blocked import empty_aligned, run_blocks

__all__ = ["ADAM_BLOCKED_BYTES", "BLOCK", "MOMENTUM_OUT_BYTES", "applies", "adam", "momentum",
           "gradient_descent_into"]

#: Elements per block of :func:`adam` (64 KiB of float32). See the module docstring.
BLOCK = 16384
#: Bytes per array from which ``ApplyMomentum`` runs :func:`momentum` (below: the plain formula).
MOMENTUM_OUT_BYTES = 1 << 20
#: Bytes per array from which ``ApplyAdam`` runs :func:`adam` (below: the plain formula).
ADAM_BLOCKED_BYTES = 4 << 20


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
