"""Elementwise unary math ops (``Square``, ``Exp``, ``Sigmoid`` ...), declared in one table.

Source: ``tensorflow/python/ops/math_ops.py`` and ``core/ops/math_ops.cc``. Each
row gives the op type, the public names, the numpy kernel and the dtypes TF
accepts; the output has the input's dtype and shape. Gradients live in
:mod:`dfcore.ops.math_grad`.
"""

import numpy as np

from ..framework import registry
from .math_dtypes import FLOAT, SIGNED, check_input
from .op_util import apply_op1

__all__ = [
    "negative",
    "square",
    "sqrt",
    "rsqrt",
    "exp",
    "log",
    "log1p",
    "abs",
    "sign",
    "reciprocal",
    "sigmoid",
    "tanh",
    "floor",
    "ceil",
    "round",
]


def _quiet(fn):
    """``fn`` without numpy's warnings: TF returns inf/nan silently (``log(0)``, ``sqrt(-1)``)."""

    def compute(x):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return fn(x)

    return compute


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


# op type -> (numpy kernel, allowed dtypes)
UNARY = {
    "Neg": (np.negative, SIGNED),
    "Square": (np.square, SIGNED),
    "Sqrt": (_quiet(np.sqrt), FLOAT),
    "Rsqrt": (_quiet(lambda x: 1 / np.sqrt(x)), FLOAT),
    "Exp": (_quiet(np.exp), FLOAT),
    "Log": (_quiet(np.log), FLOAT),
    "Log1p": (_quiet(np.log1p), FLOAT),
    "Abs": (np.abs, SIGNED),
    "Sign": (np.sign, SIGNED),
    "Reciprocal": (_quiet(np.reciprocal), SIGNED),
    "Sigmoid": (_sigmoid, FLOAT),
    "Tanh": (np.tanh, FLOAT),
    "Floor": (np.floor, FLOAT),
    "Ceil": (np.ceil, FLOAT),
    "Round": (np.rint, SIGNED),
}

# TF registers no gradient for these (``Sign``'s gradient is zeros: see math_grad).
for _op_type in ("Floor", "Ceil", "Round"):
    registry.NotDifferentiable(_op_type)


def _register_unary(op_type, fn, allowed):
    @registry.RegisterShape(op_type)
    def _shape(op):
        dtype = check_input(op, 0, allowed, "x")
        return [(dtype, op.inputs[0].shape)]

    registry.RegisterKernel(op_type)(lambda op: fn)


for _op_type, (_fn, _allowed) in UNARY.items():
    _register_unary(_op_type, _fn, _allowed)


def _unary(op_type, x, name):
    return apply_op1(op_type, [x], {}, name or op_type)


def negative(x, name=None):
    """``-x`` elementwise (``Neg``); same shape and dtype. Raises TypeError on bool/unsigned. Source: math_ops.cc."""
    return _unary("Neg", x, name)


def square(x, name=None):
    """``x * x`` elementwise (``Square``); same shape and dtype. Source: math_ops.cc."""
    return _unary("Square", x, name)


def sqrt(x, name=None):
    """``√x`` elementwise (``Sqrt``); float dtypes only (TypeError otherwise); nan below 0. Source: math_ops.cc."""
    return _unary("Sqrt", x, name)


def rsqrt(x, name=None):
    """``1/√x`` elementwise (``Rsqrt``); float dtypes only. Source: math_ops.cc."""
    return _unary("Rsqrt", x, name)


def exp(x, name=None):
    """``eˣ`` elementwise (``Exp``); float dtypes only. Source: math_ops.cc."""
    return _unary("Exp", x, name)


def log(x, name=None):
    """Natural logarithm elementwise (``Log``); float dtypes only; -inf at 0, nan below. Source: math_ops.cc."""
    return _unary("Log", x, name)


def log1p(x, name=None):
    """``log(1 + x)`` elementwise, accurate near 0 (``Log1p``); float dtypes only. Source: math_ops.cc."""
    return _unary("Log1p", x, name)


def abs(x, name=None):
    """``|x|`` elementwise (``Abs``); signed dtypes. Source: math_ops.py (``abs``)."""
    return _unary("Abs", x, name)


def sign(x, name=None):
    """-1, 0 or 1 elementwise (``Sign``); its gradient is zero. Source: math_ops.cc."""
    return _unary("Sign", x, name)


def reciprocal(x, name=None):
    """``1/x`` elementwise (``Reciprocal``; integer division for ints). Source: math_ops.cc."""
    return _unary("Reciprocal", x, name)


def sigmoid(x, name=None):
    """``1 / (1 + e⁻ˣ)`` elementwise, without overflow (``Sigmoid``); float dtypes only. Source: math_ops.py."""
    return _unary("Sigmoid", x, name)


def tanh(x, name=None):
    """Hyperbolic tangent elementwise (``Tanh``); float dtypes only. Source: math_ops.py."""
    return _unary("Tanh", x, name)


def floor(x, name=None):
    """Largest integer not above ``x`` (``Floor``); float dtypes only; no gradient. Source: math_ops.cc."""
    return _unary("Floor", x, name)


def ceil(x, name=None):
    """Smallest integer not below ``x`` (``Ceil``); float dtypes only; no gradient. Source: math_ops.cc."""
    return _unary("Ceil", x, name)


def round(x, name=None):
    """``x`` rounded half to even, as TF (``Round``); no gradient. Source: math_ops.py (``round``)."""
    return _unary("Round", x, name)


neg = negative
