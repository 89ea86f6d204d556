"""Math ops: the public face of :mod:`math_ops_unary`, :mod:`math_ops_binary`,
:mod:`math_ops_matmul` and :mod:`reductions`, plus ``cast``, ``add_n``, ``range``,
``cumsum``, ``clip_by_value`` and the Tensor (and Variable) operator overloads.

Source: ``tensorflow/python/ops/math_ops.py`` and ``core/ops/math_ops.cc``.
Gradients live in :mod:`dfcore.ops.math_grad`. ``range`` is exported under TF's
name without shadowing Python's builtin here (see ``__getattr__``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.graph import graph_of
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import common_shapes, fused_matmul, math_ops_binary, math_ops_matmul, math_ops_unary, reductions
from .math_dtypes import REAL, check_input
from .math_ops_binary import *
from .math_ops_binary import binary, mul, sub  # TF1 aliases
from .math_ops_matmul import *
from .math_ops_unary import *
from .math_ops_unary import neg  # TF1 alias
from .op_util import apply_op1, convert_same_dtype
from .reductions import *

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..framework.tensor_like import DTypeLike, TensorLike

__all__ = (
    math_ops_unary.__all__ + math_ops_binary.__all__ + math_ops_matmul.__all__ + reductions.__all__
    + ["cast", "to_float", "to_double", "to_int32", "to_int64", "add_n", "accumulate_n", "scalar_mul",
       "clip_by_value", "range", "cumsum"]
)


def __getattr__(name):
    """``math_ops.range`` (and ``from math_ops import *``) give :func:`range_`, TF's ``range``."""
    if name == "range":
        return range_
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- cast -----------------------------------------------------------------------
def cast(x: TensorLike, dtype: DTypeLike, name: str | None = None) -> Tensor:
    """``x`` converted to ``dtype`` (float → int truncates toward zero, as TF); same shape.
    Returns ``x`` itself when it already has ``dtype``. Source: math_ops.py."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    x = convert_to_tensor(x)
    if x.dtype.base_dtype is dtype:
        return x
    return apply_op1("Cast", [x], {"DstT": dtype, "SrcT": x.dtype.base_dtype}, name or "Cast")


@registry.RegisterShape("Cast")
def _cast_shape(op):
    return [(op.get_attr("DstT"), op.inputs[0].shape)]


@registry.RegisterArrayKernel("Cast")
def _cast_kernel(op, backend):
    xp, dst = backend.xp, backend.dtype(op.get_attr("DstT").as_numpy_dtype)
    return lambda x: xp.astype(xp.asarray(x), dst)


def to_float(x: TensorLike, name: str = "ToFloat") -> Tensor:
    """``cast(x, float32)``. Source: math_ops.py."""
    return cast(x, dtypes.float32, name=name)


def to_double(x: TensorLike, name: str = "ToDouble") -> Tensor:
    """``cast(x, float64)``. Source: math_ops.py."""
    return cast(x, dtypes.float64, name=name)


def to_int32(x: TensorLike, name: str = "ToInt32") -> Tensor:
    """``cast(x, int32)``. Source: math_ops.py."""
    return cast(x, dtypes.int32, name=name)


def to_int64(x: TensorLike, name: str = "ToInt64") -> Tensor:
    """``cast(x, int64)``. Source: math_ops.py."""
    return cast(x, dtypes.int64, name=name)


# -- add_n / accumulate_n -------------------------------------------------------
def add_n(inputs: TensorLike, name: str | None = None) -> Tensor:
    """The elementwise sum of a list of tensors of the same shape and dtype (``AddN``).

    Raises:
        ValueError: ``inputs`` is empty or not a list (TF's wording).
        InvalidArgumentError: the shapes differ. Source: math_ops.py.
    """
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor/IndexedSlices with the same dtype and shape")
    tensors = convert_same_dtype(list(inputs), "AddN")
    if len(tensors) == 1:
        from . import array_ops

        return array_ops.identity(tensors[0], name=name)
    return apply_op1("AddN", tensors, {"N": len(tensors)}, name or "AddN")


def accumulate_n(inputs: Sequence[TensorLike], shape: TensorLike = None, tensor_dtype: DTypeLike | None = None,
                 name: str | None = None) -> Tensor:
    """Like :func:`add_n` (``AccumulateNV2``); ``shape``/``tensor_dtype`` must agree with the inputs.

    Raises:
        ValueError: empty inputs, or a ``shape``/``tensor_dtype`` that disagrees (TF's wording). Source: math_ops.py.
    """
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and shape")
    tensors = convert_same_dtype(list(inputs), "AccumulateNV2")
    if tensor_dtype is not None and dtypes.as_dtype(tensor_dtype).base_dtype is not tensors[0].dtype.base_dtype:
        raise TypeError(f"tensor_dtype is {dtypes.as_dtype(tensor_dtype).name}, but input is of type "
                        f"{tensors[0].dtype.name}")
    shape = TensorShape(shape)
    for tensor in tensors:
        shape = shape.merge_with(tensor.shape)
    if len(tensors) == 1 and name is None:
        return tensors[0]
    if len(tensors) == 1:
        from . import array_ops

        return array_ops.identity(tensors[0], name=name)
    return apply_op1("AccumulateNV2", tensors, {"N": len(tensors), "shape": shape}, name or "AccumulateNV2")


@registry.RegisterShape("AddN")
def _add_n_shape(op):
    return _n_ary_shape(op, op.inputs[0].shape)


@registry.RegisterShape("AccumulateNV2")
def _accumulate_n_shape(op):
    return _n_ary_shape(op, op.get_attr("shape"))


def _n_ary_shape(op, shape):
    """Inputs of one dtype whose shapes merge with ``shape``; the output has the merged shape."""
    common_shapes.require_same_dtype(op)
    for tensor in op.inputs:
        if not shape.is_compatible_with(tensor.shape):
            raise common_shapes.shape_error(op, f"Shapes must be equal rank, but are {shape.ndims} and "
                                                f"{tensor.shape.ndims}"
                                            if shape.ndims != tensor.shape.ndims else "Dimensions must be equal")
        shape = shape.merge_with(tensor.shape)
    return [(op.inputs[0].dtype.base_dtype, shape)]


@registry.RegisterArrayKernel("AddN")
@registry.RegisterArrayKernel("AccumulateNV2")
def _add_n_kernel(op, backend):
    add, in_place = backend.xp.add, backend.supports_out  # numpy sums into its first result (out=)

    def compute(*xs):
        total = add(xs[0], xs[1])
        for x in xs[2:]:
            total = add(total, x, out=total) if in_place and isinstance(total, np.ndarray) else total + x
        return total

    return compute


# -- scalar_mul / clip_by_value -------------------------------------------------
def scalar_mul(scalar: TensorLike, x: TensorLike, name: str | None = None) -> Tensor:
    """``scalar * x`` (``Mul``) for a 0-d ``scalar`` converted to x's dtype.

    Raises:
        ValueError: ``Only scalar multiply works, got shape (2,)``. Source: math_ops.py.
    """
    x = convert_to_tensor(x)
    with graph_of([x]).as_default():
        scalar = convert_to_tensor(scalar, dtype=x.dtype.base_dtype, name="scalar")
    if scalar.shape.ndims != 0:
        raise ValueError(f"Only scalar multiply works, got shape {scalar.shape}")
    return binary("Mul", scalar, x, name)


def clip_by_value(t: TensorLike, clip_value_min: TensorLike, clip_value_max: TensorLike,
                  name: str | None = None) -> Tensor:
    """``t`` clipped to ``[clip_value_min, clip_value_max]``, built as TF1 does: ``Minimum`` then
    ``Maximum`` (named ``clip_by_value``) in a ``clip_by_value`` scope, so gradients flow where unclipped.

    Raises:
        ValueError: the clip values would broadcast ``t`` to a larger shape. Source: clip_ops.py.
    """
    graph = graph_of([t, clip_value_min, clip_value_max])
    with graph.as_default(), graph.name_scope(name or "clip_by_value") as scope:
        t = convert_to_tensor(t, name="t")
        t_min = minimum(t, clip_value_max)
        t.shape.merge_with(t_min.shape)
        t_max = maximum(t_min, clip_value_min, name=scope)
        t.shape.merge_with(t_max.shape)
        return t_max


# -- range ----------------------------------------------------------------------
_RANGE_DTYPES = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]


def range_(start: TensorLike, limit: TensorLike = None, delta: TensorLike = 1, dtype: DTypeLike | None = None,
           name: str = "range") -> Tensor:
    """``[start, start+delta, ...)`` below ``limit`` as a 1-D tensor (TF's ``range``, op ``Range``);
    the dtype is the widest of the arguments' (int32 < int64 < float32 < float64) unless given.

    Raises:
        InvalidArgumentError: ``Requires delta != 0``, or a limit on the wrong side of start. Source: math_ops.py.
    """
    if limit is None:
        start, limit = 0, start
    graph = graph_of([start, limit, delta])
    with graph.as_default(), graph.name_scope(name) as scope:
        args = [convert_to_tensor(v, dtype=dtype, name=n)
                for v, n in ((start, "start"), (limit, "limit"), (delta, "delta"))]
        if dtype is None:
            widest = max((a.dtype.base_dtype for a in args), key=_RANGE_DTYPES.index)
            args = [cast(a, widest) for a in args]
        return apply_op1("Range", args, {"Tidx": args[0].dtype.base_dtype}, scope)


def _range_error(start, limit, delta):
    if delta == 0:
        return f"Requires delta != 0: {delta}"
    if delta > 0 and start > limit:
        return f"Requires start <= limit when delta > 0: {start}/{limit}"
    if delta < 0 and start < limit:
        return f"Requires start >= limit when delta < 0: {start}/{limit}"
    return None


@registry.RegisterShape("Range")
def _range_shape(op):
    from .array_ops import constant_value

    dtype = op.get_attr("Tidx")
    values = [constant_value(t) for t in op.inputs]
    if any(v is None for v in values):
        return [(dtype, TensorShape([None]))]
    start, limit, delta = (v.item() for v in values)
    message = _range_error(start, limit, delta)
    if message:
        raise common_shapes.shape_error(op, message)
    return [(dtype, TensorShape([len(np.arange(start, limit, delta))]))]


@registry.RegisterArrayKernel("Range")
def _range_kernel(op, backend):
    """Computed on the host (TF's HostMemory inputs), then copied to the device."""
    dtype, host, from_host = op.get_attr("Tidx").as_numpy_dtype, backend.to_host, backend.from_host

    def compute(start, limit, delta):
        start, limit, delta = host(start), host(limit), host(delta)
        message = _range_error(start, limit, delta)
        if message:
            raise errors.InvalidArgumentError(None, op, message)
        return from_host(np.arange(start, limit, delta, dtype=dtype))

    return compute


registry.NotDifferentiable("Range")


# -- cumsum ---------------------------------------------------------------------
def cumsum(x: TensorLike, axis: TensorLike = 0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> Tensor:
    """Cumulative sum along ``axis`` (``Cumsum``): ``exclusive`` starts from 0, ``reverse`` sums from the end.
    Same shape and dtype as ``x``. Source: math_ops.py."""
    graph = graph_of([x, axis])
    with graph.as_default():
        x = convert_to_tensor(x, name="x")
        axis = convert_to_tensor(axis, dtype=dtypes.int32)
        attrs = {"exclusive": bool(exclusive), "reverse": bool(reverse)}
        return apply_op1("Cumsum", [x, axis], attrs, name or "Cumsum")


@registry.RegisterShape("Cumsum")
def _cumsum_shape(op):
    from .array_ops import constant_value

    x, axis = op.inputs
    check_input(op, 0, REAL, "x")
    axis_value = constant_value(axis)
    rank = x.shape.ndims
    if rank is not None and axis_value is not None and not -rank <= int(axis_value) < rank:
        raise common_shapes.shape_error(op, f"axis must be in range [{-rank}, {rank}), got {int(axis_value)}")
    return [(x.dtype.base_dtype, x.shape)]


@registry.RegisterKernel("Cumsum")
def _cumsum_kernel(op):
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    dtype = op.inputs[0].dtype.as_numpy_dtype

    def compute(x, axis):
        a = int(axis)
        values = np.flip(x, a) if reverse else x
        out = np.cumsum(values, axis=a, dtype=dtype)
        if exclusive:
            pad = [(0, 0)] * out.ndim
            pad[a] = (1, 0)
            out = np.take(np.pad(out, pad), np.arange(out.shape[a]), axis=a)
        return np.flip(out, a) if reverse else out

    return compute


# -- operators ------------------------------------------------------------------
def _install_operators():
    """Install TF1's operators on Tensor and forward each to Variable: ``+ - * / // % ** @`` and
    ``& | ^`` (bool) with reflected forms, ``< <= > >=``, unary ``- abs() ~``. ``==``/``!=`` stay
    identity-based, as in TF1. Each binary operator's op is named ``add``, ``sub`` ... as TF1 names it."""
    binary_ops = {"add": add, "sub": subtract, "mul": multiply, "truediv": truediv,
                  "floordiv": floordiv, "mod": floormod, "pow": pow, "matmul": matmul,
                  "and": logical_and, "or": logical_or, "xor": logical_xor}
    names = []
    for key, fn in binary_ops.items():
        Tensor._override_operator(f"__{key}__", _forward(fn, key))
        Tensor._override_operator(f"__r{key}__", _reverse(fn, key))
        names += [f"__{key}__", f"__r{key}__"]
    unary_ops = {"__lt__": less, "__le__": less_equal, "__gt__": greater, "__ge__": greater_equal,
                 "__neg__": negative, "__abs__": abs, "__invert__": logical_not}
    for key, fn in unary_ops.items():
        Tensor._override_operator(key, fn)
        names.append(key)
    Tensor._override_operator("__pos__", lambda self: self)
    names.append("__pos__")
    from .variables import Variable

    for key in names:
        Variable._overload_operator(key)


def _forward(fn, op_name):
    def forward(self, other):
        graph = graph_of([self, other])
        with graph.as_default(), graph.name_scope(op_name) as scope:
            if not isinstance(other, Tensor):
                other = convert_to_tensor(other, dtype=self.dtype.base_dtype, name="y")
            return fn(self, other, name=scope)

    return forward


def _reverse(fn, op_name):
    def reverse(self, other):
        graph = graph_of([self, other])
        with graph.as_default(), graph.name_scope(op_name) as scope:
            return fn(convert_to_tensor(other, dtype=self.dtype.base_dtype, name="x"), self, name=scope)

    return reverse


_install_operators()
