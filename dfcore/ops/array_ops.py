"""Array ops: placeholders, identity, shapes, reshaping, filling; and the helpers the
other array-op modules share (TF-style op construction, shape merging, static values).

Source: ``tensorflow/python/ops/array_ops.py`` and ``core/ops/array_ops.cc``.
Each op has a shape function (run at graph construction), a numpy kernel and,
where differentiable, a gradient in :mod:`dfcore.ops.array_grad`. The other array
ops live in ``array_ops_layout`` (transpose, expand_dims, squeeze, tile, pad),
``array_ops_join`` (concat, split, stack, unstack), ``array_ops_slice`` (slice,
strided_slice, ``Tensor.__getitem__``) and ``array_ops_gather`` (gather,
unsorted_segment_sum, one_hot) and ``array_ops_where`` (where); this module re-exports them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, registry, scopes
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import common_shapes, constant_op
from .array_ops_util import (
    INDEX_TYPES,
    SAME_DTYPE_LIST,
    constant_value,
    constant_value_as_shape,
    register_constant_value,
    register_partial_shape,
    scoped_op,
    static_ints,
    unknown_of_rank,
    vector_length,
    with_rank,
)
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.tensor_like import DTypeLike, TensorLike

__all__ = [
    "placeholder",
    "placeholder_with_default",
    "identity",
    "stop_gradient",
    "shape",
    "shape_n",
    "rank",
    "size",
    "reshape",
    "fill",
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "newaxis",
]

newaxis = None

registry.mark_stateful("Placeholder")


# -- placeholders ---------------------------------------------------------------
def placeholder(dtype: DTypeLike, shape: TensorLike = None, name: str | None = None) -> Tensor:
    """A tensor that must be fed: ``sess.run(..., feed_dict={x: value})``.

    Raises (at run time): InvalidArgumentError ``You must feed a value for placeholder tensor ...``.
    """
    attrs = {"dtype": dtypes.as_dtype(dtype).base_dtype, "shape": TensorShape(shape)}
    return apply_op1("Placeholder", [], attrs, name or "Placeholder")


@registry.RegisterShape("Placeholder")
def _placeholder_shape(op):
    return [(op.get_attr("dtype"), op.get_attr("shape"))]


@registry.RegisterArrayKernel("Placeholder")
def _placeholder_kernel(op, backend):
    def compute():  # only reached if the plan failed to catch an unfed placeholder
        raise errors.InvalidArgumentError(None, op, f"You must feed a value for placeholder tensor '{op.name}'")

    return compute


registry.NotDifferentiable("Placeholder")


def placeholder_with_default(input: TensorLike, shape: TensorLike, name: str | None = None) -> Tensor:
    """``input`` unless fed; its static shape is ``shape`` (may be less defined than ``input``'s)."""
    return apply_op1("PlaceholderWithDefault", [input], {"shape": TensorShape(shape)}, name or "PlaceholderWithDefault")


@registry.RegisterShape("PlaceholderWithDefault")
def _placeholder_with_default_shape(op):
    x = op.inputs[0]
    shape = op.get_attr("shape")
    if not shape.is_compatible_with(x.shape):
        raise common_shapes.shape_error(op, f"Shape {shape} is not compatible with the default value's shape")
    return [(x.dtype.base_dtype, shape)]


registry.RegisterArrayKernel("PlaceholderWithDefault")(lambda op, backend: lambda x: x)
registry.NotDifferentiable("PlaceholderWithDefault")


# -- identity ---------------------------------------------------------------------
def identity(input: TensorLike, name: str | None = None) -> Tensor:
    """``input`` unchanged; on a variable reference, reads the variable."""
    return apply_op1("Identity", [input], {}, name or "Identity")


registry.RegisterShape("Identity")(common_shapes.unchanged)
registry.RegisterArrayKernel("Identity")(lambda op, backend: lambda x: x)


def stop_gradient(input: TensorLike, name: str | None = None) -> Tensor:
    """``input`` unchanged, but ``gradients`` treats it as a constant."""
    return apply_op1("StopGradient", [input], {}, name or "StopGradient")


registry.RegisterShape("StopGradient")(common_shapes.unchanged)
registry.RegisterArrayKernel("StopGradient")(lambda op, backend: lambda x: x)
registry.NotDifferentiable("StopGradient")


# -- shapes -----------------------------------------------------------------------
def shape(input: TensorLike, name: str | None = None, out_type: DTypeLike = dtypes.int32) -> Tensor:
    """The dynamic shape of ``input`` as a 1-D int tensor."""
    return apply_op1("Shape", [input], {"out_type": dtypes.as_dtype(out_type)}, name or "Shape")


@registry.RegisterShape("Shape")
def _shape_shape(op):
    return [(op.get_attr("out_type"), TensorShape([op.inputs[0].shape.ndims]))]


@registry.RegisterArrayKernel("Shape")
def _shape_kernel(op, backend):
    out, from_host = op.get_attr("out_type").as_numpy_dtype, backend.from_host
    return lambda x: from_host(np.asarray(x.shape, dtype=out))


registry.NotDifferentiable("Shape")


def shape_n(input: TensorLike, out_type: DTypeLike = dtypes.int32, name: str | None = None) -> list[Tensor]:
    """The dynamic shapes of the tensors in the list ``input``, one 1-D int tensor each ("ShapeN")."""
    attrs = {"N": len(input), "out_type": dtypes.as_dtype(out_type)}
    return scoped_op("ShapeN", name, [("input", list(input), SAME_DTYPE_LIST)], attrs).outputs


@registry.RegisterShape("ShapeN")
def _shape_n_shape(op):
    return [(op.get_attr("out_type"), TensorShape([t.shape.ndims])) for t in op.inputs]


@registry.RegisterArrayKernel("ShapeN")
def _shape_n_kernel(op, backend):
    out, from_host = op.get_attr("out_type").as_numpy_dtype, backend.from_host

    def compute(*xs):
        shapes = tuple(from_host(np.asarray(x.shape, dtype=out)) for x in xs)
        return shapes if len(shapes) > 1 else shapes[0]

    return compute


registry.NotDifferentiable("ShapeN")


def rank(input: TensorLike, name: str | None = None) -> Tensor:
    """The rank of ``input`` as an int32 scalar: a Const named ``Rank`` when the rank is static (TF1)."""
    with scopes.name_scope(name, "Rank", [input]) as name:
        x = convert_to_tensor(input)
        if x.shape.ndims is not None:
            return constant_op.constant(x.shape.ndims, dtypes.int32, name=name)
        return scoped_op("Rank", name, [("input", x, None)]).outputs[0]


registry.RegisterShape("Rank")(common_shapes.scalar_of(dtypes.int32))
registry.RegisterArrayKernel("Rank")(lambda op, backend: lambda x: backend.from_host(np.int32(x.ndim)))
registry.NotDifferentiable("Rank")


def size(input: TensorLike, name: str | None = None, out_type: DTypeLike = dtypes.int32) -> Tensor:
    """The number of elements of ``input``: a Const named ``Size`` when the shape is static (TF1)."""
    out_type = dtypes.as_dtype(out_type)
    with scopes.name_scope(name, "Size", [input]) as name:
        x = convert_to_tensor(input)
        dims = x.shape.as_tuple()
        if x.shape.is_fully_defined() or (dims and 0 in dims):
            return constant_op.constant(x.shape.num_elements() or 0, out_type, name=name)
        return scoped_op("Size", name, [("input", x, None)], {"out_type": out_type}).outputs[0]


@registry.RegisterShape("Size")
def _size_shape(op):
    return [(op.get_attr("out_type"), TensorShape([]))]


@registry.RegisterArrayKernel("Size")
def _size_kernel(op, backend):
    out, from_host = op.get_attr("out_type").as_numpy_dtype, backend.from_host
    return lambda x: from_host(out(math.prod(x.shape)))


registry.NotDifferentiable("Size")


def reshape(tensor: TensorLike, shape: TensorLike, name: str | None = None) -> Tensor:
    """``tensor`` with a new shape; one dimension may be -1 (inferred).

    Raises:
        InvalidArgumentError: the element counts differ, two sizes are -1, or a size is below -1 (TF's
            wording, from ``core/ops/array_ops.cc`` and ``core/kernels/reshape_op.h``); at graph
            construction when the shapes are known, else when the step runs.
    """
    return scoped_op("Reshape", name, [("tensor", tensor, None), ("shape", shape, INDEX_TYPES)]).outputs[0]


@registry.RegisterShape("Reshape")
def _reshape_shape(op):
    x, shape_tensor = op.inputs
    target = constant_value(shape_tensor)
    if target is None:
        return [(x.dtype.base_dtype, constant_value_as_shape(shape_tensor))]
    target = [int(d) for d in target]
    _check_reshape_sizes(op, target, common_shapes.shape_error)
    known = x.shape.num_elements()
    if -1 in target:
        rest = int(np.prod([d for d in target if d != -1]))
        if known is not None and rest > 0:
            if known % rest:
                raise common_shapes.shape_error(op, f"Dimension size must be evenly divisible by {rest} but is {known}")
            target = [known // rest if d == -1 else d for d in target]
        else:
            target = [None if d == -1 else d for d in target]
    elif known is not None and known != int(np.prod(target)):
        raise common_shapes.shape_error(
            op, f"Cannot reshape a tensor with {known} elements to shape [{','.join(map(str, target))}] "
            f"({int(np.prod(target))} elements)")
    return [(x.dtype.base_dtype, TensorShape(target))]


def _check_reshape_sizes(op, sizes, error):
    """TF's ``ReshapeOp`` checks of the requested sizes: at most one -1, no other negative size.

    ``error(op, message)`` builds the exception (the shape function's or the kernel's)."""
    unknown = None
    for i, size in enumerate(sizes):
        if size == -1:
            if unknown is not None:
                raise error(op, f"Only one input size may be -1, not both {unknown} and {i}")
            unknown = i
        elif size < 0:
            raise error(op, f"Size {i} must be non-negative, not {size}")


@registry.RegisterArrayKernel("Reshape")
def _reshape_kernel(op, backend):
    """TF's ``ReshapeOp``; a pair (input shape, requested sizes) that passed its checks is remembered (at most
    :data:`RESHAPES_KEPT` per node), so a step's reshape is a lookup and a view."""
    reshape, host = backend.reshape, backend.to_host
    checked: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()

    def compute(x, shape):  # the shape is read on the host (TF's HostMemory("shape"))
        sizes = tuple(host(shape).tolist())
        if (x.shape, sizes) not in checked:
            _check_reshape(op, math.prod(x.shape), [int(d) for d in sizes])
            if len(checked) < RESHAPES_KEPT:
                checked.add((x.shape, sizes))
        return reshape(x, sizes)

    return compute


RESHAPES_KEPT = 16


def _check_reshape(op, size, sizes):
    """TF's kernel checks of reshaping ``size`` elements to ``sizes`` (ints, at most one -1).

    Raises:
        InvalidArgumentError: in TF's words, when the sizes are malformed or do not hold ``size`` elements.
    """
    _check_reshape_sizes(op, sizes, lambda op, message: errors.InvalidArgumentError(None, op, message))
    known = math.prod(d for d in sizes if d != -1)
    if -1 in sizes and known == 0:
        raise errors.InvalidArgumentError(
            None, op, "Reshape cannot infer the missing input size for an empty tensor unless all specified input "
            "sizes are non-zero")
    if -1 in sizes and size % known:
        raise errors.InvalidArgumentError(
            None, op, f"Input to reshape is a tensor with {size} values, but the requested shape requires a "
            f"multiple of {known}")
    if -1 not in sizes and size != known:
        raise errors.InvalidArgumentError(
            None, op, f"Input to reshape is a tensor with {size} values, but the requested shape has {known}")


# -- filling ----------------------------------------------------------------------
def fill(dims: TensorLike, value: TensorLike, name: str | None = None) -> Tensor:
    """A tensor of shape ``dims`` (1-D int32/int64) filled with the scalar ``value``.

    Raises:
        InvalidArgumentError: ``value`` is not a scalar or ``dims`` not a vector (TF's wording).
    """
    return scoped_op("Fill", name, [("dims", dims, INDEX_TYPES), ("value", value, None)]).outputs[0]


@registry.RegisterShape("Fill")
def _fill_shape(op):
    dims, value = op.inputs
    length = vector_length(op, dims)
    with_rank(op, value.shape, 0)
    known = static_ints(dims)
    if known is not None and any(d < 0 for d in known):
        raise common_shapes.shape_error(op, f"Fill dimensions must be >= 0, got {known}")
    shape = constant_value_as_shape(dims)
    return [(value.dtype.base_dtype, shape if shape.ndims is not None else unknown_of_rank(length))]


@registry.RegisterArrayKernel("Fill")
def _fill_kernel(op, backend):
    xp, host = backend.xp, backend.to_host

    def compute(dims, value):  # dims and value are read on the host (TF's HostMemory("dims"))
        return xp.full(tuple(int(d) for d in host(dims)), host(value).item(), dtype=value.dtype)

    return compute



registry.NotDifferentiable("Fill")


def zeros(shape: TensorLike, dtype: DTypeLike = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of zeros; ``shape`` may be a list, a TensorShape or a 1-D int tensor.

    As in TF1, a static shape of fewer than 1000 elements gives a Const named ``zeros``;
    otherwise a Fill named ``zeros`` (inputs ``zeros/shape_as_tensor``, ``zeros/Const``).
    """
    dtype = dtypes.as_dtype(dtype).base_dtype
    with scopes.name_scope(name, "zeros", [shape]) as name:
        zero = False if dtype is dtypes.bool else "" if dtype is dtypes.string else 0
        return _filled(shape, zero, dtype, name)


def ones(shape: TensorLike, dtype: DTypeLike = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of ones; ``shape`` may be a list, a TensorShape or a 1-D int tensor (named as :func:`zeros`)."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    with scopes.name_scope(name, "ones", [shape]) as name:
        return _filled(shape, True if dtype is dtypes.bool else 1, dtype, name)


def _filled(shape, value, dtype, name):
    if not isinstance(shape, Tensor):
        try:
            static = TensorShape(shape)
        except (TypeError, ValueError):  # a list holding Tensors
            shape = convert_to_tensor(shape, dtype=dtypes.int32)
        else:
            if not static.is_fully_defined():
                raise ValueError(f"Cannot convert a partially known TensorShape to a Tensor: {static}")
            if static.num_elements() < 1000:
                return constant_op.constant(value, dtype=dtype, shape=static.as_list(), name=name)
            big = any(d >= 2**31 for d in static.as_list())
            shape = constant_op.constant(static.as_list(), dtypes.int64 if big else dtypes.int32,
                                         name="shape_as_tensor")
    if shape.shape.ndims == 0:
        shape = reshape(shape, [-1])
    return fill(shape, constant_op.constant(value, dtype=dtype), name=name)


def zeros_like(tensor: TensorLike, dtype: DTypeLike | None = None, name: str | None = None,
               optimize: bool = True) -> Tensor:
    """Zeros with the shape (and dtype unless given) of ``tensor``."""
    tensor = convert_to_tensor(tensor)
    attrs = {"dtype": dtypes.as_dtype(dtype or tensor.dtype).base_dtype}
    return apply_op1("ZerosLike", [tensor], attrs, name or "zeros_like")


def ones_like(tensor: TensorLike, dtype: DTypeLike | None = None, name: str | None = None,
              optimize: bool = True) -> Tensor:
    """Ones with the shape (and dtype unless given) of ``tensor``."""
    tensor = convert_to_tensor(tensor)
    attrs = {"dtype": dtypes.as_dtype(dtype or tensor.dtype).base_dtype}
    return apply_op1("OnesLike", [tensor], attrs, name or "ones_like")


@registry.RegisterShape("ZerosLike")
@registry.RegisterShape("OnesLike")
def _like_shape(op):
    return [(op.get_attr("dtype"), op.inputs[0].shape)]


registry.RegisterArrayKernel("ZerosLike")(lambda op, backend: _like("zeros", op, backend))
registry.RegisterArrayKernel("OnesLike")(lambda op, backend: _like("ones", op, backend))
registry.NotDifferentiable("ZerosLike")
registry.NotDifferentiable("OnesLike")


def _like(name, op, backend):
    make, dtype = getattr(backend.xp, name), backend.dtype(op.get_attr("dtype").as_numpy_dtype)
    return lambda x: make(x.shape, dtype=dtype)


# -- static values of the ops above --------------------------------------------------
register_constant_value("Const")(lambda t: t.op.get_attr("value"))
register_constant_value("Identity")(lambda t: constant_value(t.op.inputs[0]))
register_constant_value("StopGradient")(lambda t: constant_value(t.op.inputs[0]))


@register_constant_value("Shape")
@register_constant_value("ShapeN")
def _shape_value(tensor):
    x = tensor.op.inputs[tensor.value_index]
    if not x.shape.is_fully_defined():
        return None
    return np.asarray(x.shape.as_list(), dtype=tensor.op.get_attr("out_type").as_numpy_dtype)


register_partial_shape("Shape")(lambda t: t.op.inputs[0].shape)


@register_constant_value("Rank")
def _rank_value(tensor):
    ndims = tensor.op.inputs[0].shape.ndims
    return None if ndims is None else np.int32(ndims)


@register_constant_value("Size")
def _size_value(tensor):
    n = tensor.op.inputs[0].shape.num_elements()
    return None if n is None else tensor.op.get_attr("out_type").as_numpy_dtype(n)
