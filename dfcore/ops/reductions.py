"""Reductions (``Sum``, ``Mean``, ``Max`` ... over axes) and ``ArgMax``/``ArgMin``.

Source: ``tensorflow/python/ops/math_ops.py`` (``reduce_*``, ``argmax``) and
``core/ops/math_ops.cc``. A reduction op takes ``(input, reduction_indices)`` and a
``keep_dims`` attr; ``axis=None`` reduces over every dimension. TF1's deprecated
argument names (``reduction_indices``, ``keep_dims``) are accepted. Gradients
live in :mod:`dfcore.ops.reduction_grad`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..framework import dtypes, registry
from ..framework.graph import graph_of
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import common_shapes
from .math_dtypes import BOOL, INDEX, REAL, check_input
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.dtypes import DType
    from ..framework.operation import Operation
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import DTypeLike, TensorLike

__all__ = [
    "reduce_sum",
    "reduce_mean",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "reduce_all",
    "reduce_any",
    "argmax",
    "argmin",
    "arg_max",
    "arg_min",
    "count_nonzero",
]


def _xp(name):
    """The array API's reduction ``name`` (``fn(x, axis=, keepdims=)``) of the backend."""
    return lambda op, backend: getattr(backend.xp, name)


def _reducer(name):
    """The backend's reduction ``name`` (:meth:`~dfcore.backends.Backend.reducer`: ``xp.<name>``'s values, which
    numpy computes without ``np.sum``'s Python wrapper)."""
    return lambda op, backend: backend.reducer(name)


def _mean(op, backend):
    xp = backend.xp

    def compute(x, axis, keepdims):
        if xp.isdtype(x.dtype, "integral"):
            total = xp.sum(x, axis=axis, keepdims=keepdims)
            count = max(math.prod(x.shape[a] for a in axis), 1)
            return xp.sign(total) * (xp.abs(total) // count)  # C++ integer division truncates toward zero
        return xp.mean(x, axis=axis, keepdims=keepdims)

    return compute


def _extreme(name, lowest):
    """``max``/``min`` that give TF's identity on empty axes (the lowest/highest value)."""

    def make(op, backend):
        xp, fn, dtype = backend.xp, backend.reducer(name), op.inputs[0].dtype.base_dtype
        initial = (-math.inf if lowest else math.inf) if dtype.is_floating else (dtype.min if lowest else dtype.max)

        def compute(x, axis, keepdims):
            if all(x.shape[a] for a in axis):
                return fn(x, axis=axis, keepdims=keepdims)
            ndim = x.ndim
            reduced = {a % ndim for a in axis}
            shape = tuple(1 if i in reduced else d for i, d in enumerate(x.shape) if keepdims or i not in reduced)
            return xp.full(shape, initial, dtype=x.dtype)

        return compute

    return make


# op type -> (``make(op, backend) -> fn(x, axis=, keepdims=)`` on the array API, allowed input dtypes)
REDUCTIONS = {
    "Sum": (_reducer("sum"), REAL),
    "Mean": (_mean, REAL),
    "Max": (_extreme("max", lowest=True), REAL),
    "Min": (_extreme("min", lowest=False), REAL),
    "Prod": (_reducer("prod"), REAL),
    "All": (_xp("all"), BOOL),
    "Any": (_xp("any"), BOOL),
}

for _op_type in ("All", "Any", "ArgMax", "ArgMin"):
    registry.NotDifferentiable(_op_type)


def reduction_shape(op: Operation) -> list[tuple[DType, TensorShape]]:
    """Shape of a reduction with ``keep_dims``; the axes must be constant to know the rank.

    Raises:
        InvalidArgumentError: ``Invalid reduction dimension 2 for input with 2 dimensions ...``.
    """
    from .array_ops import constant_value

    x, axes = op.inputs
    keep = op.get_attr("keep_dims")
    axes_value = constant_value(axes)
    if x.shape.ndims is None:
        return [(x.dtype.base_dtype, TensorShape(None))]
    rank = x.shape.ndims
    if axes_value is None:
        return [(x.dtype.base_dtype, TensorShape([None] * rank) if keep else TensorShape(None))]
    axes_list = np.asarray(axes_value).reshape(-1)
    for a in axes_list:
        if not -rank <= a < max(rank, 1):
            raise common_shapes.shape_error(op, f"Invalid reduction dimension {a} for input with {rank} dimensions")
    axes_set = {int(a) % rank for a in axes_list} if rank else set()
    dims = x.shape.as_list()
    if keep:
        out = [1 if i in axes_set else d for i, d in enumerate(dims)]
    else:
        out = [d for i, d in enumerate(dims) if i not in axes_set]
    return [(x.dtype.base_dtype, TensorShape(out))]


def _register_reduction(op_type, make, allowed):
    @registry.RegisterShape(op_type)
    def _shape(op):
        check_input(op, 0, allowed, "input")
        check_input(op, 1, INDEX, "reduction_indices")
        return reduction_shape(op)

    @registry.RegisterArrayKernel(op_type)
    def _factory(op, backend):
        keep, xp, host = op.get_attr("keep_dims"), backend.xp, backend.to_host
        dtype = backend.dtype(op.inputs[0].dtype.as_numpy_dtype)
        fn = make(op, backend)

        def compute(x, axes):  # the axes are read on the host (TF's HostMemory("reduction_indices"))
            axis = tuple(host(axes).ravel().tolist())
            return xp.asarray(fn(x, axis=axis, keepdims=keep), dtype=dtype)

        return compute


for _op_type, (_make, _allowed) in REDUCTIONS.items():
    _register_reduction(_op_type, _make, _allowed)


def reduce_op(op_type: str, input_tensor: TensorLike, axis: TensorLike, keepdims: bool | None, name: str | None,
              default_name: str) -> Tensor:
    """Build a reduction op; ``axis=None`` reduces over every dimension."""
    graph = graph_of([input_tensor])
    with graph.as_default():
        x = convert_to_tensor(input_tensor)
        if axis is None:
            if x.shape.ndims is not None:
                axes = convert_to_tensor(np.arange(x.shape.ndims, dtype=np.int32))
            else:
                from . import array_ops
                from .math_ops import range_

                axes = range_(0, array_ops.rank(x))
        else:
            axes = convert_to_tensor(axis, preferred_dtype=dtypes.int32)
        return apply_op1(op_type, [x, axes], {"keep_dims": bool(keepdims)}, name or default_name)


def deprecated_lookup(new_name: str, new_value: Any, old_name: str, old_value: Any) -> Any:
    """TF1's ``deprecated_argument_lookup``: the value of whichever of two argument names was given.

    Raises:
        ValueError: both were given.
    """
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'")
        return old_value
    return new_value


def _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices, keep_dims):
    axis = deprecated_lookup("axis", axis, "reduction_indices", reduction_indices)
    keep = deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    return reduce_op(op_type, input_tensor, axis, bool(keep), name, op_type)


def reduce_sum(input_tensor: TensorLike, axis: TensorLike = None, keepdims: bool | None = None, name: str | None = None,
               reduction_indices: TensorLike = None, keep_dims: bool | None = None) -> Tensor:
    """Sum over ``axis`` (all axes when None); ``keepdims`` keeps reduced axes with length 1 (``Sum``).

    Raises:
        InvalidArgumentError: an axis out of range. ValueError: both ``axis`` and ``reduction_indices``.
    Source: math_ops.py.
    """
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor: TensorLike, axis: TensorLike = None, keepdims: bool | None = None,
                name: str | None = None, reduction_indices: TensorLike = None, keep_dims: bool | None = None) -> Tensor:
    """Mean over ``axis`` (``Mean``); integer means truncate toward zero, as TF. Source: math_ops.py."""
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor: TensorLike, axis: TensorLike = None, keepdims: bool | None = None, name: str | None = None,
               reduction_indices: TensorLike = None, keep_dims: bool | None = None) -> Tensor:
    """Maximum over ``axis`` (``Max``); the gradient is split evenly between ties. Source: math_ops.py."""
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor: TensorLike, axis: TensorLike = None, keepdims: bool | None = None, name: str | None = None,
               reduction_indices: TensorLike = None, keep_dims: bool | None = None) -> Tensor:
    """Minimum over ``axis`` (``Min``); the gradient is split evenly between ties. Source: math_ops.py."""
    return _reduce("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(input_tensor: TensorLike, axis: TensorLike = None, keepdims: bool | None = None,
                name: str | None = None, reduction_indices: TensorLike = None, keep_dims: bool | None = None) -> Tensor:
    """Product over ``axis`` (``Prod``); its gradient is exact with zeros in the input. Source: math_ops.py."""
    return _reduce("Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_all(input_tensor: TensorLike, axis: TensorLike = None, keepdims: bool | None = None, name: str | None = None,
               reduction_indices: TensorLike = None, keep_dims: bool | None = None) -> Tensor:
    """Logical AND over ``axis`` of a bool tensor (``All``); TypeError on other dtypes. Source: math_ops.py."""
    return _reduce("All", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_any(input_tensor: TensorLike, axis: TensorLike = None, keepdims: bool | None = None, name: str | None = None,
               reduction_indices: TensorLike = None, keep_dims: bool | None = None) -> Tensor:
    """Logical OR over ``axis`` of a bool tensor (``Any``). Source: math_ops.py."""
    return _reduce("Any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def count_nonzero(input_tensor: TensorLike, axis: TensorLike = None, keepdims: bool | None = None,
                  dtype: DTypeLike = dtypes.int64, name: str | None = None, reduction_indices: TensorLike = None,
                  keep_dims: bool | None = None) -> Tensor:
    """The number of non-zero elements over ``axis``, as ``dtype`` (int64), built as TF1 does
    (``Sum`` of ``Cast(NotEqual(x, 0))`` in a ``count_nonzero`` scope). Source: math_ops.py."""
    from .math_ops import cast, not_equal

    axis = deprecated_lookup("axis", axis, "reduction_indices", reduction_indices)
    keep = bool(deprecated_lookup("keepdims", keepdims, "keep_dims", keep_dims))
    graph = graph_of([input_tensor])
    with graph.as_default(), graph.name_scope(name or "count_nonzero"):
        x = convert_to_tensor(input_tensor)
        zero = np.zeros((), x.dtype.as_numpy_dtype)
        nonzero = cast(not_equal(x, zero), dtypes.int64)
        return cast(reduce_op("Sum", nonzero, axis, keep, None, "Sum"), dtype)


# -- argmax / argmin ----------------------------------------------------------------
def _arg_reduce(op_type, input, axis, name, dimension, output_type):
    axis = deprecated_lookup("axis", axis, "dimension", dimension)
    graph = graph_of([input])
    with graph.as_default():
        x = convert_to_tensor(input)
        axis = convert_to_tensor(0 if axis is None else axis, preferred_dtype=dtypes.int32)
        attrs = {"output_type": dtypes.as_dtype(output_type).base_dtype}
        return apply_op1(op_type, [x, axis], attrs, name or op_type)


def argmax(input: TensorLike, axis: TensorLike = None, name: str | None = None, dimension: TensorLike = None,
           output_type: DTypeLike = dtypes.int64) -> Tensor:
    """Index of the largest value along ``axis`` (default 0), as ``output_type`` (``ArgMax``).

    Raises:
        InvalidArgumentError: ``Expected dimension in the range [-2, 2), but got 2 ...``. Source: math_ops.py.
    """
    return _arg_reduce("ArgMax", input, axis, name, dimension, output_type)


def argmin(input: TensorLike, axis: TensorLike = None, name: str | None = None, dimension: TensorLike = None,
           output_type: DTypeLike = dtypes.int64) -> Tensor:
    """Index of the smallest value along ``axis`` (default 0), as ``output_type`` (``ArgMin``). Source: math_ops.py."""
    return _arg_reduce("ArgMin", input, axis, name, dimension, output_type)


def arg_max(input: TensorLike, dimension: TensorLike, name: str | None = None,
            output_type: DTypeLike = dtypes.int64) -> Tensor:
    """TF 1.x's generated ``tf.arg_max``: :func:`argmax` along ``dimension`` (required, second positional)."""
    return _arg_reduce("ArgMax", input, dimension, name, None, output_type)


def arg_min(input: TensorLike, dimension: TensorLike, name: str | None = None,
            output_type: DTypeLike = dtypes.int64) -> Tensor:
    """TF 1.x's generated ``tf.arg_min``: :func:`argmin` along ``dimension`` (required, second positional)."""
    return _arg_reduce("ArgMin", input, dimension, name, None, output_type)


def _arg_shape(op):
    from .array_ops import constant_value

    x, axis = op.inputs
    check_input(op, 0, REAL, "input")
    check_input(op, 1, INDEX, "dimension")
    out_dtype = op.get_attr("output_type")
    axis_value = constant_value(axis)
    if x.shape.ndims is None:
        return [(out_dtype, TensorShape(None))]
    rank = x.shape.ndims
    if axis_value is None:
        return [(out_dtype, TensorShape([None] * (rank - 1)))]
    a = int(axis_value)
    if not -rank <= a < rank:
        raise common_shapes.shape_error(op, f"Expected dimension in the range [{-rank}, {rank}), but got {a}")
    dims = x.shape.as_list()
    del dims[a % rank]
    return [(out_dtype, TensorShape(dims))]


def _arg_kernel(name):
    def factory(op, backend):
        xp, host = backend.xp, backend.to_host
        fn, out = getattr(xp, name), backend.dtype(op.get_attr("output_type").as_numpy_dtype)
        return lambda x, axis: xp.asarray(fn(x, axis=int(host(axis))), dtype=out)

    return factory


for _op_type, _name in (("ArgMax", "argmax"), ("ArgMin", "argmin")):
    registry.RegisterShape(_op_type)(_arg_shape)
    registry.RegisterArrayKernel(_op_type)(_arg_kernel(_name))
