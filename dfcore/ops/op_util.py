"""Helpers every op constructor uses: pick the graph, convert inputs, create the op.

Source: TF's ``op_def_library.apply_op`` and ``ops._get_graph_from_inputs``.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from ..framework.graph import graph_of
from ..framework.operation import Operation
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_like import DTypeLike, TensorLike


def apply_op(op_type: str, inputs: Sequence[TensorLike], attrs: Mapping[str, Any] | None = None,
             name: str | None = None, dtype: DTypeLike | None = None) -> Operation:
    """Create an op of ``op_type`` in the inputs' graph (the default graph when none has one) and return the
    Operation: the one way an op is constructed (TF's ``op_def_library.apply_op``). Op constructors call it,
    or :func:`~dfcore.ops.array_ops_util.scoped_op`, which names converted inputs in the op's name scope
    first; ``Graph.create_op``, the graph's own primitive, is called only here and by GraphDef import.

    ``inputs`` may hold Tensors or convertible values; ``dtype`` (if given)
    converts non-Tensor inputs to that dtype; ``name``: the base name (default ``op_type``), made unique in
    the name scope (one ending in ``/`` is taken as it is).

    Raises:
        ValueError: inputs from different graphs, or an invalid name; as ``Graph.create_op``.
    """
    graph = graph_of(inputs)
    with graph.as_default():
        tensors = [convert_to_tensor(value, dtype=dtype) for value in inputs]
        return graph.create_op(op_type, tensors, attrs, name)


def apply_op1(op_type: str, inputs: Sequence[TensorLike], attrs: Mapping[str, Any] | None = None,
              name: str | None = None, dtype: DTypeLike | None = None) -> Tensor:
    """Like :func:`apply_op`, returning the op's single output Tensor."""
    return apply_op(op_type, inputs, attrs, name, dtype).outputs[0]


def convert_same_dtype(values: Sequence[TensorLike], name_hint: str) -> list[Tensor]:
    """Convert ``values`` to Tensors with one dtype, taken from the first Tensor among them.

    Raises:
        TypeError: two Tensors of different dtypes (TF's message names the op).
    """
    dtype = None
    for value in values:
        if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
            dtype = convert_to_tensor(value).dtype.base_dtype
            break
    graph = graph_of(values)
    with graph.as_default():
        tensors = [v if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dtype) for v in values]
    first = tensors[0].dtype.base_dtype
    for tensor in tensors[1:]:
        if tensor.dtype.base_dtype is not first:
            raise TypeError(
                f"Input 'y' of '{name_hint}' Op has type {tensor.dtype.base_dtype.name} that does not match type "
                f"{first.name} of argument 'x'."
            )
    return tensors
