"""Numeric checks: ``check_numerics`` (the ``CheckNumerics`` op), ``verify_tensor_all_finite``,
``add_check_numerics_ops``.

Source: ``tensorflow/python/ops/numerics.py``, ``array_grad.py`` (its gradient)
and ``core/kernels/check_numerics_op.cc`` (the error text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..framework import graph as graph_lib, registry
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from . import common_shapes, control_flow_ops, math_dtypes
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.operation import Operation
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["check_numerics", "verify_tensor_all_finite", "add_check_numerics_ops"]



def check_numerics(tensor: TensorLike, message: TensorLike, name: str | None = None) -> Tensor:
    """``tensor`` unchanged, after checking it holds no NaN or Inf (``CheckNumerics``).

    Raises:
        TypeError: a non-float ``tensor`` (graph construction).
        InvalidArgumentError (at run time): ``<message> : Tensor had NaN values`` (or ``Inf``,
            or ``Inf and NaN``).
    """
    return apply_op1("CheckNumerics", [tensor], {"message": str(message)}, name or "CheckNumerics")


@registry.RegisterShape("CheckNumerics")
def _check_numerics_shape(op):
    math_dtypes.check_input(op, 0, math_dtypes.FLOAT, "tensor")
    return common_shapes.unchanged(op)


@registry.RegisterKernel("CheckNumerics")
def _check_numerics_kernel(op):
    message = op.get_attr("message")

    def compute(x):
        has_inf, has_nan = bool(np.isinf(x).any()), bool(np.isnan(x).any())
        if has_inf or has_nan:
            status = "Inf and NaN" if has_inf and has_nan else ("Inf" if has_inf else "NaN")
            raise errors.InvalidArgumentError(None, op, f"{message} : Tensor had {status} values")
        return x

    return compute


@registry.RegisterGradient("CheckNumerics")
def _check_numerics_grad(op, grad):
    """The gradient passes through, checked too."""
    return check_numerics(
        grad, "Not a number (NaN) or infinity (Inf) values detected in gradient. " + op.get_attr("message"))


def verify_tensor_all_finite(t: TensorLike = None, msg: str | None = None, name: str | None = None,
                             x: TensorLike = None, message: str | None = None) -> Tensor:
    """``t`` passed through an Identity that runs only after ``check_numerics(t, msg)``.

    Raises:
        InvalidArgumentError (at run time): ``t`` has a NaN or Inf.
    Source: ``tensorflow/python/ops/numerics.py``.
    """
    x = t if x is None else x
    message = msg if message is None else message
    with name_scope(name, "VerifyFinite", [x]):
        x = convert_to_tensor(x, name="x")
        graph = graph_lib.get_default_graph()
        with graph.colocate_with(x):
            verify_input = check_numerics(x, message=message)
            return control_flow_ops.with_dependencies([verify_input], x)


def add_check_numerics_ops() -> Operation:
    """A ``group`` op checking every float output of every op in the default graph, one after another.

    Each check's message is ``<op name>:<output index>``.
    Source: ``tensorflow/python/ops/numerics.py``.
    """
    check_op: list[Any] = []
    graph = graph_lib.get_default_graph()
    for op in graph.get_operations():
        for output in op.outputs:
            if output.dtype in math_dtypes.FLOAT:
                with graph.control_dependencies(check_op):
                    check_op = [check_numerics(output, message=f"{op.name}:{output.value_index}")]
    return control_flow_ops.group(*check_op)
