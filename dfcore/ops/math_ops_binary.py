"""Elementwise binary math ops with numpy broadcasting: arithmetic, comparisons, logic.

Source: ``tensorflow/python/ops/math_ops.py`` and ``core/ops/math_ops.cc``. Ops are
declared in tables (op type → kernel factory, allowed dtypes); both inputs have
one dtype, the output has the broadcast shape. Gradients live in
:mod:`dfcore.ops.math_grad`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import errors
from ..framework import dtypes, registry
from ..framework.graph import graph_of
from . import common_shapes
from .math_dtypes import BOOL, REAL, check_input
from .op_util import apply_op1, convert_same_dtype

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "truediv",
    "realdiv",
    "div",
    "maximum",
    "minimum",
    "pow",
    "squared_difference",
    "floordiv",
    "floormod",
    "mod",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "equal",
    "not_equal",
    "logical_and",
    "logical_or",
    "logical_not",
    "logical_xor",
]


def _xp(name):
    """Kernel factory calling the array API's function ``name`` of the backend (``np.add`` on numpy)."""
    return lambda op, backend: getattr(backend.xp, name)


def _quiet(name):
    """Kernel factory for float ops that TF runs silently into inf/nan (``1/0``, ``0**-1``)."""

    def factory(op, backend):
        fn, quiet = getattr(backend.xp, name), backend.quiet

        def compute(x, y):
            with quiet():
                return fn(x, y)

        return compute

    return factory


def _squared_difference(op, backend):
    xp = backend.xp
    return lambda x, y: xp.square(xp.subtract(x, y))


def _integer_division(name):
    """Kernel factory for ``FloorDiv``/``FloorMod``: TF fails on integer division by zero."""

    def factory(op, backend):
        if not op.inputs[0].dtype.is_integer:
            return _quiet(name)(op, backend)
        xp = backend.xp
        fn = getattr(xp, name)

        def compute(x, y):
            if bool(xp.any(y == 0)):
                raise errors.InvalidArgumentError(None, op, "Integer division by zero")
            return fn(x, y)

        return compute

    return factory


# op type -> (array kernel factory ``fn(op, backend)``, allowed dtypes or None for any); output has the inputs' dtype
BINARY = {
    "Add": (_xp("add"), None),
    "AddV2": (_xp("add"), REAL),  # what TF 1.15+ writes for `+`; found in GraphDefs TF wrote
    "Sub": (_xp("subtract"), REAL),
    "Mul": (_xp("multiply"), REAL),
    "RealDiv": (lambda op, backend: backend.divide, REAL),
    "Maximum": (_xp("maximum"), REAL),
    "Minimum": (_xp("minimum"), REAL),
    "Pow": (_quiet("pow"), REAL),
    "SquaredDifference": (_squared_difference, REAL),
    "FloorDiv": (_integer_division("floor_divide"), REAL),
    "FloorMod": (_integer_division("remainder"), REAL),
    "LogicalAnd": (_xp("logical_and"), BOOL),
    "LogicalOr": (_xp("logical_or"), BOOL),
}

# op type -> (array API function name, allowed dtypes or None for any); output is bool
COMPARISONS = {
    "Greater": ("greater", REAL),
    "GreaterEqual": ("greater_equal", REAL),
    "Less": ("less", REAL),
    "LessEqual": ("less_equal", REAL),
    "Equal": ("equal", None),
    "NotEqual": ("not_equal", None),
}

for _op_type in list(COMPARISONS) + ["FloorDiv", "LogicalAnd", "LogicalOr", "LogicalNot"]:
    registry.NotDifferentiable(_op_type)


def _checked(shape_fn, allowed):
    def shape(op):
        if allowed is not None:
            check_input(op, 0, allowed, "x")
            check_input(op, 1, allowed, "y")
        return shape_fn(op)

    return shape


for _op_type, (_factory, _allowed) in BINARY.items():
    registry.RegisterShape(_op_type)(_checked(common_shapes.broadcast_binary, _allowed))
    registry.RegisterArrayKernel(_op_type)(_factory)

for _op_type, (_name, _allowed) in COMPARISONS.items():
    registry.RegisterShape(_op_type)(_checked(common_shapes.broadcast_binary_bool, _allowed))
    registry.RegisterArrayKernel(_op_type)(_xp(_name))


@registry.RegisterShape("LogicalNot")
def _logical_not_shape(op):
    return [(check_input(op, 0, BOOL, "x"), op.inputs[0].shape)]


registry.RegisterArrayKernel("LogicalNot")(_xp("logical_not"))


def binary(op_type: str, x: TensorLike, y: TensorLike, name: str | None) -> Tensor:
    """Build the binary op ``op_type`` on ``x`` and ``y`` converted to one dtype.

    Raises:
        TypeError: the dtypes differ (``Input 'y' of 'Add' Op has type float64 that does not match ...``)
            or are not allowed for the op.
        InvalidArgumentError: the shapes do not broadcast (``Dimensions must be equal, but are 2 and 3 ...``).
    """
    x, y = convert_same_dtype([x, y], op_type)
    return apply_op1(op_type, [x, y], {}, name or op_type)


def add(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x + y`` elementwise with broadcasting (``Add``). Source: math_ops.cc."""
    return binary("Add", x, y, name)


def subtract(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x - y`` elementwise with broadcasting (``Sub``). Source: math_ops.cc."""
    return binary("Sub", x, y, name)


def multiply(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x * y`` elementwise with broadcasting (``Mul``). Source: math_ops.cc."""
    return binary("Mul", x, y, name)


# int dtype -> float dtype of true division, as TF's ``_TRUEDIV_TABLE``
_TRUEDIV = {dtypes.uint8: dtypes.float32, dtypes.int8: dtypes.float32, dtypes.int16: dtypes.float32,
            dtypes.int32: dtypes.float64, dtypes.int64: dtypes.float64}


def truediv(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x / y`` elementwise (``RealDiv`` named ``truediv``); integers are cast first (int32 → float64,
    int8/int16/uint8 → float32), as Python 3 division. Source: math_ops.py (``_truediv_python3``)."""
    x, y = convert_same_dtype([x, y], "RealDiv")
    target = _TRUEDIV.get(x.dtype.base_dtype)
    if target is not None:
        from .math_ops import cast

        with graph_of([x]).name_scope(name or "truediv") as scope:
            x, y = cast(x, target), cast(y, target)
            return apply_op1("RealDiv", [x, y], {}, scope)
    return apply_op1("RealDiv", [x, y], {}, name or "truediv")


def divide(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x / y`` elementwise: :func:`truediv`. Source: math_ops.py (``divide``)."""
    return truediv(x, y, name)


def realdiv(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x / y`` elementwise without casting (``RealDiv``). Source: math_ops.cc."""
    return binary("RealDiv", x, y, name)


def div(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """Python 2 division: ``FloorDiv`` for integers, ``RealDiv`` for floats (op named ``div``). Source: math_ops.py."""
    x, y = convert_same_dtype([x, y], "RealDiv")
    op_type = "FloorDiv" if x.dtype.is_integer else "RealDiv"
    return apply_op1(op_type, [x, y], {}, name or "div")


def maximum(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """The larger of ``x`` and ``y`` elementwise (``Maximum``); ties send the gradient to x. Source: math_ops.cc."""
    return binary("Maximum", x, y, name)


def minimum(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """The smaller of ``x`` and ``y`` elementwise (``Minimum``); ties send the gradient to x. Source: math_ops.cc."""
    return binary("Minimum", x, y, name)


def pow(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x ** y`` elementwise (``Pow``); integers to negative powers fail at run time. Source: math_ops.py."""
    return binary("Pow", x, y, name)


def squared_difference(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``(x - y)²`` elementwise with broadcasting (``SquaredDifference``). Source: math_ops.cc."""
    return binary("SquaredDifference", x, y, name)


def floordiv(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``floor(x / y)`` elementwise (``FloorDiv`` named ``floordiv``); no gradient.

    Raises (at run time): InvalidArgumentError ``Integer division by zero``. Source: math_ops.py.
    """
    return binary("FloorDiv", x, y, name or "floordiv")


def floormod(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x - floor(x / y) * y`` elementwise, the sign of ``y`` (``FloorMod``), as Python's ``%``.

    Raises (at run time): InvalidArgumentError ``Integer division by zero``. Source: math_ops.cc.
    """
    return binary("FloorMod", x, y, name)


mod = floormod


def greater(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x > y`` elementwise, bool output (``Greater``). Source: math_ops.cc."""
    return binary("Greater", x, y, name)


def greater_equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x >= y`` elementwise, bool output (``GreaterEqual``). Source: math_ops.cc."""
    return binary("GreaterEqual", x, y, name)


def less(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x < y`` elementwise, bool output (``Less``). Source: math_ops.cc."""
    return binary("Less", x, y, name)


def less_equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x <= y`` elementwise, bool output (``LessEqual``). Source: math_ops.cc."""
    return binary("LessEqual", x, y, name)


def equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x == y`` elementwise, bool output, any dtype (``Equal``). Source: math_ops.cc."""
    return binary("Equal", x, y, name)


def not_equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x != y`` elementwise, bool output, any dtype (``NotEqual``). Source: math_ops.cc."""
    return binary("NotEqual", x, y, name)


def logical_and(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x AND y`` on bool tensors with broadcasting (``LogicalAnd``); TypeError otherwise. Source: math_ops.cc."""
    return binary("LogicalAnd", x, y, name)


def logical_or(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x OR y`` on bool tensors with broadcasting (``LogicalOr``). Source: math_ops.cc."""
    return binary("LogicalOr", x, y, name)


def logical_not(x: TensorLike, name: str | None = None) -> Tensor:
    """``NOT x`` on a bool tensor (``LogicalNot``). Source: math_ops.cc."""
    return apply_op1("LogicalNot", [x], {}, name or "LogicalNot")


def logical_xor(x: TensorLike, y: TensorLike, name: str = "LogicalXor") -> Tensor:
    """``x XOR y`` on bool tensors, built as TF1 does: ``(x OR y) AND NOT (x AND y)``. Source: math_ops.py."""
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


sub = subtract
mul = multiply
