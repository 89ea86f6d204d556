"""Elementwise unary math ops (``Square``, ``Exp``, ``Sigmoid`` ...), declared in one table.

Source: ``tensorflow/python/ops/math_ops.py`` and ``core/ops/math_ops.cc``. Each
row gives the op type, the array kernel (``make(backend) -> fn``, written against the
array API: :mod:`dfcore.backends`) and the dtypes TF accepts; the output has the
input's dtype and shape. Gradients live in :mod:`dfcore.ops.math_grad`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..framework import registry
from .math_dtypes import FLOAT, SIGNED, check_input
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

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


def _xp(name):
    """The array API's function ``name`` of the backend (``np.negative`` on numpy)."""
    return lambda backend: getattr(backend.xp, name)


def _quiet(make):
    """``make``'s kernel without float warnings: TF returns inf/nan silently (``log(0)``, ``sqrt(-1)``)."""

    def quiet_make(backend):
        fn, quiet = make(backend), backend.quiet

        def compute(x):
            with quiet():
                return fn(x)

        return compute

    return quiet_make


def _rsqrt(backend):
    sqrt = backend.xp.sqrt
    return lambda x: 1 / sqrt(x)


def _reciprocal(backend):
    """``1/x``; integer ``x`` divides as C (TF's and numpy's): 0 unless ``|x| == 1``."""
    xp = backend.xp

    def compute(x):
        if xp.isdtype(x.dtype, "integral"):
            return xp.where(xp.abs(x) == 1, x, xp.zeros_like(x))
        return 1 / x

    return compute


def _sigmoid(backend):
    xp = backend.xp

    def compute(x):
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))

    return compute


# op type -> (array kernel maker, allowed dtypes)
UNARY = {
    "Neg": (_xp("negative"), SIGNED),
    "Square": (_xp("square"), SIGNED),
    "Sqrt": (_quiet(_xp("sqrt")), FLOAT),
    "Rsqrt": (_quiet(_rsqrt), FLOAT),
    "Exp": (_quiet(_xp("exp")), FLOAT),
    "Log": (_quiet(_xp("log")), FLOAT),
    "Log1p": (_quiet(_xp("log1p")), FLOAT),
    "Abs": (_xp("abs"), SIGNED),
    "Sign": (_xp("sign"), SIGNED),
    "Reciprocal": (_quiet(_reciprocal), SIGNED),
    "Sigmoid": (_sigmoid, FLOAT),
    "Tanh": (_xp("tanh"), FLOAT),
    "Floor": (_xp("floor"), FLOAT),
    "Ceil": (_xp("ceil"), FLOAT),
    "Round": (_xp("round"), SIGNED),
}

# TF registers no gradient for these (``Sign``'s gradient is zeros: see math_grad).
for _op_type in ("Floor", "Ceil", "Round"):
    registry.NotDifferentiable(_op_type)


def _register_unary(op_type, make, allowed):
    @registry.RegisterShape(op_type)
    def _shape(op):
        dtype = check_input(op, 0, allowed, "x")
        return [(dtype, op.inputs[0].shape)]

    registry.RegisterArrayKernel(op_type)(lambda op, backend: make(backend))


for _op_type, (_make, _allowed) in UNARY.items():
    _register_unary(_op_type, _make, _allowed)


def _unary(op_type, x, name):
    return apply_op1(op_type, [x], {}, name or op_type)


def negative(x: TensorLike, name: str | None = None) -> Tensor:
    """``-x`` elementwise (``Neg``); same shape and dtype. Raises TypeError on bool/unsigned. Source: math_ops.cc."""
    return _unary("Neg", x, name)


def square(x: TensorLike, name: str | None = None) -> Tensor:
    """``x * x`` elementwise (``Square``); same shape and dtype. Source: math_ops.cc."""
    return _unary("Square", x, name)


def sqrt(x: TensorLike, name: str | None = None) -> Tensor:
    """``√x`` elementwise (``Sqrt``); float dtypes only (TypeError otherwise); nan below 0. Source: math_ops.cc."""
    return _unary("Sqrt", x, name)


def rsqrt(x: TensorLike, name: str | None = None) -> Tensor:
    """``1/√x`` elementwise (``Rsqrt``); float dtypes only. Source: math_ops.cc."""
    return _unary("Rsqrt", x, name)


def exp(x: TensorLike, name: str | None = None) -> Tensor:
    """``eˣ`` elementwise (``Exp``); float dtypes only. Source: math_ops.cc."""
    return _unary("Exp", x, name)


def log(x: TensorLike, name: str | None = None) -> Tensor:
    """Natural logarithm elementwise (``Log``); float dtypes only; -inf at 0, nan below. Source: math_ops.cc."""
    return _unary("Log", x, name)


def log1p(x: TensorLike, name: str | None = None) -> Tensor:
    """``log(1 + x)`` elementwise, accurate near 0 (``Log1p``); float dtypes only. Source: math_ops.cc."""
    return _unary("Log1p", x, name)


def abs(x: TensorLike, name: str | None = None) -> Tensor:
    """``|x|`` elementwise (``Abs``); signed dtypes. Source: math_ops.py (``abs``)."""
    return _unary("Abs", x, name)


def sign(x: TensorLike, name: str | None = None) -> Tensor:
    """-1, 0 or 1 elementwise (``Sign``); its gradient is zero. Source: math_ops.cc."""
    return _unary("Sign", x, name)


def reciprocal(x: TensorLike, name: str | None = None) -> Tensor:
    """``1/x`` elementwise (``Reciprocal``; integer division for ints). Source: math_ops.cc."""
    return _unary("Reciprocal", x, name)


def sigmoid(x: TensorLike, name: str | None = None) -> Tensor:
    """``1 / (1 + e⁻ˣ)`` elementwise, without overflow (``Sigmoid``); float dtypes only. Source: math_ops.py."""
    return _unary("Sigmoid", x, name)


def tanh(x: TensorLike, name: str | None = None) -> Tensor:
    """Hyperbolic tangent elementwise (``Tanh``); float dtypes only. Source: math_ops.py."""
    return _unary("Tanh", x, name)


def floor(x: TensorLike, name: str | None = None) -> Tensor:
    """Largest integer not above ``x`` (``Floor``); float dtypes only; no gradient. Source: math_ops.cc."""
    return _unary("Floor", x, name)


def ceil(x: TensorLike, name: str | None = None) -> Tensor:
    """Smallest integer not below ``x`` (``Ceil``); float dtypes only; no gradient. Source: math_ops.cc."""
    return _unary("Ceil", x, name)


def round(x: TensorLike, name: str | None = None) -> Tensor:
    """``x`` rounded half to even, as TF (``Round``); no gradient. Source: math_ops.py (``round``)."""
    return _unary("Round", x, name)


neg = negative
