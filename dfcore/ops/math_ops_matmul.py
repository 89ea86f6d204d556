"""``matmul``: ``MatMul`` for matrices, ``BatchMatMul`` for stacks of matrices.

Source: ``tensorflow/python/ops/math_ops.py`` (``matmul``) and ``core/ops/math_ops.cc``.
As in TF1, operands of rank above 2 (or of unknown rank) give ``BatchMatMul``,
whose batch dimensions must be equal (no broadcasting); real matrices make
``adjoint`` the same as ``transpose``. Gradients live in :mod:`dfcore.ops.math_grad`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..framework import registry
from ..framework.tensor_shape import TensorShape
from . import common_shapes
from .math_dtypes import SIGNED, check_input
from .op_util import apply_op1, convert_same_dtype

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["matmul"]


def matmul(a: TensorLike, b: TensorLike, transpose_a: bool = False, transpose_b: bool = False, adjoint_a: bool = False,
           adjoint_b: bool = False, a_is_sparse: bool = False, b_is_sparse: bool = False,
           name: str | None = None) -> Tensor:
    """The matrix product of ``a`` and ``b`` (optionally transposed): ``[m,k] x [k,n] -> [m,n]``,
    or ``[...,m,k] x [...,m,k] -> [...,m,n]`` batched. The ``*_is_sparse`` hints change nothing.

    Raises:
        InvalidArgumentError: inner dimensions differ, e.g. ``Dimensions must be equal,
            but are 3 and 4 for 'MatMul' (op: 'MatMul') with input shapes: [2,3], [4,2].``
        TypeError: the dtypes differ.
        ValueError: both ``transpose_a`` and ``adjoint_a`` (or ``_b``) are set (TF's wording).
    Source: math_ops.py.
    """
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    a, b = convert_same_dtype([a, b], "MatMul")
    ta, tb = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
    if any(t.shape.ndims is None or t.shape.ndims > 2 for t in (a, b)):
        return apply_op1("BatchMatMul", [a, b], {"adj_x": ta, "adj_y": tb}, name or "MatMul")
    return apply_op1("MatMul", [a, b], {"transpose_a": ta, "transpose_b": tb}, name or "MatMul")


@registry.RegisterShape("MatMul")
def _matmul_shape(op):
    a, b = op.inputs
    common_shapes.require_same_dtype(op)
    check_input(op, 0, SIGNED, "a")
    for tensor in (a, b):
        if tensor.shape.ndims not in (None, 2):
            raise common_shapes.shape_error(op, f"Shape must be rank 2 but is rank {tensor.shape.ndims}")
    da = a.shape.as_list() if a.shape.ndims else [None, None]
    db = b.shape.as_list() if b.shape.ndims else [None, None]
    if op.get_attr("transpose_a"):
        da = da[::-1]
    if op.get_attr("transpose_b"):
        db = db[::-1]
    if da[1] is not None and db[0] is not None and da[1] != db[0]:
        raise common_shapes.shape_error(op, f"Dimensions must be equal, but are {da[1]} and {db[0]}")
    return [(a.dtype.base_dtype, TensorShape([da[0], db[1]]))]


@registry.RegisterArrayKernel("MatMul")
def _matmul_kernel(op, backend):
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    if ta or tb:
        matmul = backend.matmul
        return lambda a, b: matmul(a, b, ta, tb)
    return backend.xp.matmul


@registry.RegisterShape("BatchMatMul")
def _batch_matmul_shape(op):
    a, b = op.inputs
    common_shapes.require_same_dtype(op)
    check_input(op, 0, SIGNED, "x")
    for tensor in (a, b):
        if tensor.shape.ndims is not None and tensor.shape.ndims < 2:
            raise common_shapes.shape_error(op, f"Shape must be at least rank 2 but is rank {tensor.shape.ndims}")
    if a.shape.ndims is None or b.shape.ndims is None:
        return [(a.dtype.base_dtype, TensorShape(None))]
    if a.shape.ndims != b.shape.ndims:
        raise common_shapes.shape_error(op, f"Shape must be rank {a.shape.ndims} but is rank {b.shape.ndims}")
    da, db = a.shape.as_list(), b.shape.as_list()
    if op.get_attr("adj_x"):
        da[-2:] = da[-1:-3:-1]
    if op.get_attr("adj_y"):
        db[-2:] = db[-1:-3:-1]
    batch = []
    for x, y in zip(da[:-2] + [da[-1]], db[:-2] + [db[-2]]):
        if x is not None and y is not None and x != y:
            raise common_shapes.shape_error(op, f"Dimensions must be equal, but are {x} and {y}")
        batch.append(x if x is not None else y)
    return [(a.dtype.base_dtype, TensorShape(batch[:-1] + [da[-2], db[-1]]))]


@registry.RegisterArrayKernel("BatchMatMul")
def _batch_matmul_kernel(op, backend):
    adj_x, adj_y = op.get_attr("adj_x"), op.get_attr("adj_y")
    matmul = backend.matmul

    def compute(x, y):
        if x.shape[:-2] != y.shape[:-2]:
            raise ValueError(f"In[0] and In[1] must have compatible batch dimensions: {list(x.shape)} vs. "
                             f"{list(y.shape)}")
        return matmul(x, y, adj_x, adj_y)

    return compute
