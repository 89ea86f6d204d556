"""Array ops that rearrange or resize dimensions: ``transpose``, ``invert_permutation``,
``expand_dims``, ``squeeze``, ``tile`` and ``pad`` (constant and mirror modes).

Source: ``tensorflow/python/ops/array_ops.py`` and ``core/ops/array_ops.cc``.
Gradients live in :mod:`dfcore.ops.array_grad`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..framework import registry, scopes
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import common_shapes
from .array_ops_util import (
    INDEX_TYPES,
    run_failure,
    scoped_op,
    shape_failure,
    static_ints,
    unknown_of_rank,
    vector_length,
    with_rank,
)

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = ["transpose", "invert_permutation", "expand_dims", "squeeze", "tile", "pad"]


# -- transpose --------------------------------------------------------------------------
def transpose(a: TensorLike, perm: TensorLike = None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """``a`` with its dimensions permuted: output dim ``i`` is input dim ``perm[i]``.

    ``perm=None`` reverses the dimensions. The op is named ``transpose`` (TF1).
    Raises:
        InvalidArgumentError: ``perm`` has the wrong length or an index out of range.
    """
    with scopes.name_scope(name, "transpose", [a]) as name:
        if perm is None:
            a = convert_to_tensor(a, name="a")
            if not a.shape.ndims:
                from . import math_ops

                rank = scoped_op("Rank", None, [("input", a, None)]).outputs[0]
                perm = math_ops.subtract(math_ops.subtract(rank, 1), math_ops.range_(0, rank, 1))
            else:
                perm = list(range(a.shape.ndims - 1, -1, -1))
        return scoped_op("Transpose", name, [("x", a, None), ("perm", perm, INDEX_TYPES)]).outputs[0]


@registry.RegisterShape("Transpose")
def _transpose_shape(op):
    x, perm = op.inputs
    length = vector_length(op, perm)
    rank = x.shape.ndims
    if rank is None:
        rank = length
    elif length is not None and length != rank:
        raise common_shapes.shape_error(op, f"Dimension must be {rank} but is {length}")
    p = static_ints(perm)
    if p is None or rank is None:
        return [(x.dtype.base_dtype, unknown_of_rank(rank))]
    dims = x.shape.as_tuple() or (None,) * rank
    for i in p:
        if not 0 <= i < rank:
            raise common_shapes.shape_error(op, f"perm dim {i} is out of range of input rank {rank}")
    return [(x.dtype.base_dtype, TensorShape([dims[i] for i in p]))]


@registry.RegisterArrayKernel("Transpose")
def _transpose_kernel(op, backend):
    xp, host = backend.xp, backend.to_host

    def compute(x, perm):  # perm is read on the host (TF's HostMemory("perm"))
        perm = [int(p) for p in host(perm)]
        if len(perm) != x.ndim:
            raise errors.InvalidArgumentError(
                None, op, f"transpose expects a vector of size {x.ndim}. But input(1) is a vector of size "
                          f"{len(perm)}")
        missing = sorted(set(range(len(perm))) - set(perm))
        if missing:
            raise errors.InvalidArgumentError(None, op, f"{missing[0]} is missing from {{{','.join(map(str, perm))}}}.")
        return xp.permute_dims(x, tuple(perm))

    return compute


def invert_permutation(x: TensorLike, name: str | None = None) -> Tensor:
    """The inverse permutation of the 1-D int tensor ``x``: ``y[x[i]] = i``."""
    return scoped_op("InvertPermutation", name, [("x", x, INDEX_TYPES)]).outputs[0]


@registry.RegisterShape("InvertPermutation")
def _invert_permutation_shape(op):
    x = op.inputs[0]
    return [(x.dtype.base_dtype, TensorShape([vector_length(op, x)]))]


@registry.RegisterKernel("InvertPermutation")
def _invert_permutation_kernel(op):
    def compute(x):
        if sorted(x.tolist()) != list(range(len(x))):
            raise errors.InvalidArgumentError(None, op, f"{x.tolist()} is not a permutation of 0..{len(x) - 1}")
        out = np.empty_like(x)
        out[x] = np.arange(len(x), dtype=x.dtype)
        return out

    return compute


registry.NotDifferentiable("InvertPermutation")


# -- expand_dims / squeeze ------------------------------------------------------------
def expand_dims(input: TensorLike, axis: TensorLike = None, name: str | None = None, dim: TensorLike = None) -> Tensor:
    """``input`` with a new dimension of size 1 inserted at ``axis`` (in ``[-rank-1, rank]``).

    Raises:
        ValueError: no axis, or both ``axis`` and ``dim`` (TF's wording).
        InvalidArgumentError: ``axis`` out of range.
    """
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return scoped_op("ExpandDims", name, [("input", input, None), ("dim", axis, INDEX_TYPES)]).outputs[0]


def _expand_axis(axis, rank, fail):
    if not -1 - rank <= axis <= rank:
        fail(f"Tried to expand dim index {axis} for tensor with {rank} dimensions.")
    return axis + rank + 1 if axis < 0 else axis


@registry.RegisterShape("ExpandDims")
def _expand_dims_shape(op):
    x, dim = op.inputs
    constant_dim = static_ints(dim)
    if isinstance(constant_dim, list):
        if len(constant_dim) != 1:
            raise common_shapes.shape_error(op, "'dim' input must be a tensor with a single value")
        constant_dim = constant_dim[0]
    rank = x.shape.ndims
    if rank is None:
        return [(x.dtype.base_dtype, TensorShape(None))]
    if constant_dim is None:
        return [(x.dtype.base_dtype, unknown_of_rank(rank + 1))]
    axis = _expand_axis(constant_dim, rank, shape_failure(op))
    dims = list(x.shape.as_tuple())
    return [(x.dtype.base_dtype, TensorShape(dims[:axis] + [1] + dims[axis:]))]


@registry.RegisterArrayKernel("ExpandDims")
def _expand_dims_kernel(op, backend):
    fail, xp, host = run_failure(op), backend.xp, backend.to_host
    return lambda x, dim: xp.expand_dims(x, axis=_expand_axis(int(np.reshape(host(dim), -1)[0]), x.ndim, fail))


def squeeze(input: TensorLike, axis: TensorLike = None, name: str | None = None,
            squeeze_dims: TensorLike = None) -> Tensor:
    """``input`` without its size-1 dimensions (only those in ``axis`` when given).

    Raises:
        InvalidArgumentError: an ``axis`` entry out of range or of size other than 1 (TF's wording).
    """
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'squeeze_dims'")
        axis = squeeze_dims
    if axis is None:
        axis = []
    elif np.isscalar(axis):
        axis = [axis]
    return scoped_op("Squeeze", name, [("input", input, None)], {"squeeze_dims": [int(a) for a in axis]}).outputs[0]


def _squeezed(dims, axes, fail):
    """The dims left after squeezing ``axes`` (all known 1s when empty); None if unknowable."""
    rank = len(dims)
    wanted = set()
    for a in axes:
        if not -rank <= a < rank:
            fail(f"Tried to squeeze dim index {a} for tensor with {rank} dimensions.")
        wanted.add(a % rank)
    out = []
    for i, d in enumerate(dims):
        if i in wanted:
            if d is not None and d != 1:
                fail(f"Can not squeeze dim[{i}], expected a dimension of 1, got {d}")
        elif not wanted and d is None:
            return None
        elif wanted or d != 1:
            out.append(d)
    return out


@registry.RegisterShape("Squeeze")
def _squeeze_shape(op):
    x = op.inputs[0]
    if x.shape.ndims is None:
        return [(x.dtype.base_dtype, TensorShape(None))]
    dims = _squeezed(x.shape.as_tuple(), op.get_attr("squeeze_dims"), shape_failure(op))
    return [(x.dtype.base_dtype, TensorShape(dims))]


@registry.RegisterArrayKernel("Squeeze")
def _squeeze_kernel(op, backend):
    axes, fail, xp = op.get_attr("squeeze_dims"), run_failure(op), backend.xp
    return lambda x: xp.reshape(x, tuple(_squeezed(x.shape, axes, fail)))


# -- tile ---------------------------------------------------------------------------------
def tile(input: TensorLike, multiples: TensorLike, name: str | None = None) -> Tensor:
    """``input`` repeated ``multiples[i]`` times along dimension ``i``.

    Raises:
        InvalidArgumentError: ``multiples`` is not a vector of length rank(input).
    """
    return scoped_op("Tile", name, [("input", input, None), ("multiples", multiples, INDEX_TYPES)]).outputs[0]


@registry.RegisterShape("Tile")
def _tile_shape(op):
    x, multiples = op.inputs
    length = vector_length(op, multiples)
    rank = x.shape.ndims
    if rank is not None and length is not None and rank != length:
        raise common_shapes.shape_error(op, f"Dimension must be {rank} but is {length}")
    rank = rank if rank is not None else length
    m = static_ints(multiples)
    if m is None or rank is None:
        return [(x.dtype.base_dtype, unknown_of_rank(rank))]
    dims = x.shape.as_tuple() or (None,) * rank
    return [(x.dtype.base_dtype, TensorShape([None if d is None else d * k for d, k in zip(dims, m)]))]


@registry.RegisterArrayKernel("Tile")
def _tile_kernel(op, backend):
    xp, host = backend.xp, backend.to_host

    def compute(x, multiples):  # multiples are read on the host (TF's HostMemory("multiples"))
        multiples = host(multiples)
        if len(multiples) != x.ndim:
            raise errors.InvalidArgumentError(
                None, op, f"Expected multiples argument to be a vector of length {x.ndim} but got length "
                f"{len(multiples)}")
        for i, k in enumerate(multiples):
            if k < 0:
                raise errors.InvalidArgumentError(None, op, f"Expected multiples[{i}] >= 0, but got {k}")
        return xp.tile(x, tuple(int(k) for k in multiples)) if x.ndim else xp.asarray(x)

    return compute


# -- pad ----------------------------------------------------------------------------------
_MIRROR_MODES = {"REFLECT": "reflect", "SYMMETRIC": "symmetric"}


def pad(tensor: TensorLike, paddings: TensorLike, mode: str = "CONSTANT", name: str | None = None,
        constant_values: TensorLike = 0) -> Tensor:
    """``tensor`` padded by ``paddings`` (an int ``[rank, 2]`` matrix of before/after counts).

    ``mode`` is ``CONSTANT`` (op ``Pad``, or ``PadV2`` for nonzero ``constant_values``),
    ``REFLECT`` or ``SYMMETRIC`` (op ``MirrorPad``); case-insensitive.
    Raises:
        ValueError: an unknown mode (TF's wording).
        InvalidArgumentError: ``paddings`` is not ``[rank, 2]`` or a mirror padding is too large.
    """
    mode = mode.upper()
    inputs = [("input", tensor, None), ("paddings", paddings, INDEX_TYPES)]
    if mode == "CONSTANT":
        if not isinstance(constant_values, Tensor) and np.all(np.equal(constant_values, 0)):
            return scoped_op("Pad", name, inputs).outputs[0]
        return scoped_op("PadV2", name, inputs + [("constant_values", constant_values, None)]).outputs[0]
    if mode in _MIRROR_MODES:
        return scoped_op("MirrorPad", name, inputs, {"mode": mode}).outputs[0]
    raise ValueError(f"Unknown padding mode: {mode}")


@registry.RegisterShape("Pad")
@registry.RegisterShape("PadV2")
@registry.RegisterShape("MirrorPad")
def _pad_shape(op):
    x, paddings = op.inputs[:2]
    if len(op.inputs) == 3:
        with_rank(op, op.inputs[2].shape, 0)
    rows, cols = with_rank(op, paddings.shape, 2).as_tuple()
    if cols is not None and cols != 2:
        raise common_shapes.shape_error(op, f"Dimension must be 2 but is {cols}")
    rank = x.shape.ndims
    if rank is not None and rows is not None and rank != rows:
        raise common_shapes.shape_error(op, f"Dimensions must be equal, but are {rank} and {rows}")
    rank = rank if rank is not None else rows
    p = static_ints(paddings)
    if p is None or rank is None:
        return [(x.dtype.base_dtype, unknown_of_rank(rank))]
    if min(p, default=0) < 0:
        raise common_shapes.shape_error(op, f"Paddings must be non-negative: {min(p)}")
    dims = x.shape.as_tuple() or (None,) * rank
    return [(x.dtype.base_dtype, TensorShape([None if d is None else d + p[2 * i] + p[2 * i + 1]
                                              for i, d in enumerate(dims)]))]


def _check_paddings(op, x, paddings, mode=None):
    if np.shape(paddings) != (np.ndim(x), 2):
        raise errors.InvalidArgumentError(
            None, op, f"The first dimension of paddings must be the rank of inputs[{np.ndim(x)},2] "
            f"{list(np.shape(paddings))}")
    for i, (before, after) in enumerate(paddings):
        if before < 0 or after < 0:
            raise errors.InvalidArgumentError(None, op, f"Paddings must be non-negative: {before} {after}")
        limit = np.shape(x)[i] - (1 if mode == "REFLECT" else 0)
        if mode and max(before, after) > limit:
            relation = "less than" if mode == "REFLECT" else "no greater than"
            raise errors.InvalidArgumentError(
                None, op, f"paddings must be {relation} the dimension size: {before}, {after} not {relation} "
                f"{np.shape(x)[i]}")
    return [(int(b), int(a)) for b, a in paddings]


@registry.RegisterKernel("Pad")
def _pad_kernel(op):
    return lambda x, paddings: np.pad(x, _check_paddings(op, x, paddings))


@registry.RegisterKernel("PadV2")
def _pad_v2_kernel(op):
    return lambda x, paddings, value: np.pad(x, _check_paddings(op, x, paddings), constant_values=value)


@registry.RegisterKernel("MirrorPad")
def _mirror_pad_kernel(op):
    mode = op.get_attr("mode")
    pad_mode: Any = _MIRROR_MODES[mode]
    return lambda x, paddings: np.pad(x, _check_paddings(op, x, paddings, mode), mode=pad_mode)


def mirror_pad_grad(grad: TensorLike, paddings: TensorLike, mode: str, name: str | None = None) -> Tensor:
    """The gradient of ``MirrorPad``: ``grad`` with the mirrored borders folded back and summed."""
    return scoped_op("MirrorPadGrad", name, [("input", grad, None), ("paddings", paddings, INDEX_TYPES)],
                     {"mode": mode}).outputs[0]


@registry.RegisterShape("MirrorPadGrad")
def _mirror_pad_grad_shape(op):
    grad, paddings = op.inputs
    p = static_ints(paddings)
    if p is None or grad.shape.ndims is None:
        return [(grad.dtype.base_dtype, unknown_of_rank(grad.shape.ndims))]
    return [(grad.dtype.base_dtype, TensorShape([None if d is None else d - p[2 * i] - p[2 * i + 1]
                                                 for i, d in enumerate(grad.shape.as_tuple())]))]


@registry.RegisterKernel("MirrorPadGrad")
def _mirror_pad_grad_kernel(op):
    shift = 1 if op.get_attr("mode") == "REFLECT" else 0

    def compute(grad, paddings):
        out = np.asarray(grad)
        for axis, (before, after) in enumerate(paddings):
            size = out.shape[axis] - before - after
            source = np.concatenate([np.arange(before, 0, -1) - 1 + shift, np.arange(size),
                                     size - 1 - shift - np.arange(after)]).astype(np.intp)
            folded = np.zeros((size,) + np.moveaxis(out, axis, 0).shape[1:], dtype=out.dtype)
            np.add.at(folded, source, np.moveaxis(out, axis, 0))
            out = np.moveaxis(folded, 0, axis)
        return out

    return compute

