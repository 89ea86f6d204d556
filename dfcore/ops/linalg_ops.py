"""Linear algebra ops on (batches of) square matrices: ``MatrixInverse``, ``MatrixDeterminant``.

Source: ``tensorflow/python/ops/linalg_ops.py`` and ``core/ops/linalg_ops.cc``.
The last two dimensions hold the matrices; leading dimensions are a batch.
Public as ``tf.matrix_inverse``/``tf.matrix_determinant`` and ``tf.linalg.inv``/
``tf.linalg.det``. Gradients live in :mod:`dfcore.ops.linalg_grad`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import registry
from ..framework.tensor_shape import TensorShape
from . import common_shapes
from .math_dtypes import FLOAT, check_input
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["matrix_inverse", "matrix_determinant", "inv", "det"]


def matrix_inverse(input: TensorLike, adjoint: bool = False, name: str | None = None) -> Tensor:
    """The inverse of each square matrix ``[..., M, M]`` (of its adjoint if ``adjoint``); float dtypes.

    Raises:
        InvalidArgumentError: at construction, not square or rank < 2 (TF's wording);
            at run time, ``Input is not invertible.`` for a singular matrix.
    Source: linalg_ops.cc (``MatrixInverse``).
    """
    return apply_op1("MatrixInverse", [input], {"adjoint": bool(adjoint)}, name or "MatrixInverse")


def matrix_determinant(input: TensorLike, name: str | None = None) -> Tensor:
    """The determinant of each square matrix ``[..., M, M]``, shape ``[...]``; float dtypes.

    Raises:
        InvalidArgumentError: not square or rank < 2 (TF's wording). Source: linalg_ops.cc.
    """
    return apply_op1("MatrixDeterminant", [input], {}, name or "MatrixDeterminant")


inv = matrix_inverse
det = matrix_determinant


def _square_matrices(op):
    """The input's static dims, checked to be ``[..., M, M]`` (None if the rank is unknown)."""
    x = op.inputs[0]
    check_input(op, 0, FLOAT, "input")
    if x.shape.ndims is None:
        return None
    if x.shape.ndims < 2:
        raise common_shapes.shape_error(op, f"Shape must be at least rank 2 but is rank {x.shape.ndims}")
    dims = x.shape.as_list()
    rows, cols = dims[-2:]
    if rows is not None and cols is not None and rows != cols:
        raise common_shapes.shape_error(op, f"Dimensions must be equal, but are {rows} and {cols}")
    size = rows if rows is not None else cols
    return dims[:-2] + [size, size]


@registry.RegisterShape("MatrixInverse")
def _matrix_inverse_shape(op):
    return [(op.inputs[0].dtype.base_dtype, TensorShape(_square_matrices(op)))]


@registry.RegisterShape("MatrixDeterminant")
def _matrix_determinant_shape(op):
    dims = _square_matrices(op)
    return [(op.inputs[0].dtype.base_dtype, TensorShape(None if dims is None else dims[:-2]))]


def _lapack_input(x):
    """numpy's LAPACK needs float32/float64: half precision is computed in float32."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _check_square(op, x):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise errors.InvalidArgumentError(None, op, f"Input matrix must be square, got shape {list(x.shape)}")


@registry.RegisterKernel("MatrixInverse")
def _matrix_inverse_kernel(op):
    adjoint = op.get_attr("adjoint")

    def compute(x):
        _check_square(op, x)
        a = _lapack_input(np.swapaxes(x, -1, -2) if adjoint else x)
        try:
            return np.linalg.inv(a).astype(x.dtype, copy=False)
        except np.linalg.LinAlgError:
            raise errors.InvalidArgumentError(None, op, "Input is not invertible.") from None

    return compute


@registry.RegisterKernel("MatrixDeterminant")
def _matrix_determinant_kernel(op):
    def compute(x):
        _check_square(op, x)
        return np.asarray(np.linalg.det(_lapack_input(x)), dtype=x.dtype)

    return compute
