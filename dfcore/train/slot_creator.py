"""Slot variables: per-variable state of an optimizer or moving average.

Source: ``tensorflow/python/training/slot_creator.py``. A slot of variable
``v`` is a non-trainable global variable named ``v/<name>`` (made unique:
``v/Adam``, ``v/Adam_1``), created outside any control-dependency context,
at the root name scope, and colocated with ``v``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..framework import dtypes
from ..framework.tensor_shape import TensorShape
from ..ops import array_ops, variables

if TYPE_CHECKING:
    from ..framework.dtypes import DType
    from ..framework.graph import Graph
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import DTypeLike, TensorLike
    from ..ops.variables import Variable


@contextlib.contextmanager
def init_scope(graph: Graph) -> Iterator[None]:
    """``graph`` as default with control dependencies cleared (TF's ``ops.init_scope`` in graph mode)."""
    with graph.as_default(), graph.control_dependencies(None):
        yield


def create_slot(primary: Variable | Tensor, val: TensorLike, name: str, colocate_with_primary: bool = True) -> Variable:
    """A slot variable for ``primary`` (a Variable or Tensor) initialized to ``val``.

    Args:
        primary: the variable (or tensor) the slot belongs to.
        val: a Tensor or callable returning one: the slot's initial value.
        name: the slot's suffix (``"Momentum"``, ``"ExponentialMovingAverage"``).
    Returns:
        A non-trainable Variable named ``<primary op name>/<name>`` (uniquified).
    Source: TF ``slot_creator.create_slot``.
    """
    graph = primary.graph
    colocation = graph.colocate_with(primary.op) if colocate_with_primary else contextlib.nullcontext()
    with init_scope(graph), graph.name_scope(""), colocation:
        return variables.Variable(val, trainable=False, name=f"{primary.op.name}/{name}")


def create_zeros_slot(primary: Variable | Tensor, name: str, dtype: DType | None = None,
                      colocate_with_primary: bool = True) -> Variable:
    """A slot of zeros with ``primary``'s shape and dtype (or ``dtype``).

    Raises:
        ValueError: ``primary``'s shape is not fully defined.
    Source: TF ``slot_creator.create_zeros_slot``.
    """
    dtype = (dtype or primary.dtype).base_dtype
    dims = _defined_dims(primary, primary.shape)
    return create_slot(primary, lambda: array_ops.zeros(dims, dtype, name="zeros"), name, colocate_with_primary)


def create_slot_with_initializer(primary: Variable | Tensor, initializer: Any, shape: Any, dtype: DTypeLike, name: str,
                                 colocate_with_primary: bool = True) -> Variable:
    """A slot for ``primary`` initialized to ``initializer(shape, dtype=dtype)`` (Adagrad's constant 0.1).

    Args:
        initializer: an initializer object or ``f(shape, dtype=...) -> Tensor``.
        shape: the slot's shape (TensorShape or list), fully defined; dtype: its dtype.
    Raises:
        ValueError: ``shape`` is not fully defined.
    Source: TF ``slot_creator.create_slot_with_initializer``.
    """
    dtype = dtypes.as_dtype(dtype).base_dtype
    dims = _defined_dims(primary, TensorShape(shape))
    return create_slot(primary, lambda: initializer(dims, dtype=dtype), name, colocate_with_primary)


def _defined_dims(primary, shape):
    if not shape.is_fully_defined():
        raise ValueError(f"Cannot create a slot for {primary.op.name}: its shape {shape} is not fully defined.")
    return shape.as_list()


def var_key(var: Variable | Tensor) -> tuple[Graph, str]:
    """The key of ``var`` in slot tables: (graph, op name), as TF's ``_var_key``."""
    return (var.op.graph, var.op.name)
