"""``tf.nn.top_k`` (``TopKV2``) and ``tf.nn.in_top_k`` (``InTopKV2``).

Source: ``tensorflow/python/ops/nn_ops.py``, ``core/ops/nn_ops.cc`` (shape functions),
``core/kernels/topk_op.cc``, ``in_topk_op.cc`` and ``nn_grad.py`` (``_TopKGrad``), TF 1.x.
Equal values keep the lower index first, as TF's kernel; ``in_top_k`` counts a target as in the
top k when fewer than k predictions are strictly larger (so ties at the boundary all count).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor import Tensor
from ..framework.tensor_shape import TensorShape
from . import array_ops, array_ops_gather, array_ops_join, array_ops_layout, common_shapes, math_ops
from .array_ops_util import INDEX_TYPES, merge_shapes, scoped_op, static_ints, with_rank, with_rank_at_least

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = ["top_k", "in_top_k"]


# -- TopKV2 ------------------------------------------------------------------------------------
def top_k(input: TensorLike, k: TensorLike = 1, sorted: bool = True, name: str | None = None) -> tuple:
    """``(values, indices)``: the ``k`` largest entries of each last-axis row of ``input`` (a real tensor of
    rank >= 1) and their int32 positions, both ``input.shape[:-1] + [k]``, largest first.

    Raises:
        InvalidArgumentError: rank 0, ``k < 0``, or a last dimension smaller than ``k`` (names the op).
    Source: ``tensorflow/python/ops/nn_ops.py``.
    """
    op = scoped_op("TopKV2", name, [("input", input, None), ("k", k, (dtypes.int32,))], {"sorted": bool(sorted)})
    return op.outputs[0], op.outputs[1]


@registry.RegisterShape("TopKV2")
def _top_k_shape(op):
    x, k = op.inputs
    with_rank(op, k.shape, 0)
    shape = with_rank_at_least(op, x.shape, 1)
    k_value = static_ints(k)
    if k_value is not None and k_value < 0:
        raise common_shapes.shape_error(op, f"input must have k >= 0, got {k_value}")
    if shape.ndims is None:
        return [(x.dtype.base_dtype, TensorShape(None)), (dtypes.int32, TensorShape(None))]
    last = shape.as_list()[-1]
    if last is not None and k_value is not None and last < k_value:
        raise common_shapes.shape_error(op, f"input must have last dimension >= k = {k_value} but is {last}")
    out = TensorShape(shape.as_list()[:-1] + [k_value])
    return [(x.dtype.base_dtype, out), (dtypes.int32, out)]


def descending_order(x: np.ndarray) -> np.ndarray:
    """Indices sorting each last-axis row of ``x`` largest first, equal values by increasing index."""
    n = x.shape[-1]
    return n - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]


@registry.RegisterKernel("TopKV2")
def _top_k_kernel(op):
    def compute(x, k):
        k = int(k)
        if k < 0:
            raise errors.InvalidArgumentError(None, op, f"Need k >= 0, got {k}")
        if np.ndim(x) < 1:
            raise errors.InvalidArgumentError(None, op, "input must be >= 1-D, got shape []")
        if np.shape(x)[-1] < k:
            raise errors.InvalidArgumentError(None, op, f"input must have at least k columns. Had "
                                                        f"{np.shape(x)[-1]}, needed {k}")
        indices = descending_order(np.asarray(x))[..., :k].astype(np.int32)
        return np.take_along_axis(x, indices, axis=-1), indices

    return compute


@registry.RegisterGradient("TopKV2")
def _top_k_grad(op, grad, _):
    """``grad`` scattered back to the positions the values came from; none for ``k``."""
    x, indices = op.inputs[0], op.outputs[1]
    in_shape = array_ops.shape(x)
    in_last = in_shape[-1]
    flat_indices = array_ops.reshape(indices, array_ops_join.stack([-1, array_ops.shape(indices)[-1]]))
    row_starts = math_ops.range_(0, array_ops.shape(flat_indices)[0] * in_last, in_last)
    positions = array_ops.reshape(math_ops.add(flat_indices, array_ops_layout.expand_dims(row_starts, -1)), [-1])
    scattered = array_ops_gather.unsorted_segment_sum(array_ops.reshape(grad, [-1]), positions,
                                               math_ops.reduce_prod(in_shape))
    return array_ops.reshape(scattered, in_shape), None


@registry.RegisterCost("TopKV2")
def _top_k_cost(input_shapes, output_shapes, attrs):
    """A comparison per input element per level of a size-k heap: ``|input| * ceil(log2(k + 1))``."""
    k = output_shapes[0][-1] if output_shapes[0] else 0
    size = math.prod(input_shapes[0])
    return size * max(1, math.ceil(math.log2(k + 1))), size + 2 * math.prod(output_shapes[0])


# -- InTopKV2 --------------------------------------------------------------------------------
def in_top_k(predictions: TensorLike, targets: TensorLike, k: TensorLike, name: str | None = None) -> Tensor:
    """A bool ``[batch]``: whether ``targets[i]`` is among the ``k`` largest of ``predictions[i]``.

    ``predictions`` is float32 ``[batch, classes]``; ``targets`` int32/int64 ``[batch]``. A target outside
    ``[0, classes)`` or with a non-finite prediction is False. Not differentiable.
    Raises:
        InvalidArgumentError: ranks other than 2 and 1, or batch sizes that differ (names the op).
    Source: ``tensorflow/python/ops/nn_ops.py``.
    """
    index_dtype = dtypes.as_dtype(getattr(targets, "dtype", dtypes.int32)).base_dtype  # k takes the targets' type
    inputs = [("predictions", predictions, (dtypes.float32,)), ("targets", targets, INDEX_TYPES),
              ("k", k, index_dtype)]
    return scoped_op("InTopKV2", name, inputs).outputs[0]


@registry.RegisterShape("InTopKV2")
def _in_top_k_shape(op):
    predictions, targets, k = op.inputs
    batch = with_rank(op, predictions.shape, 2)[:1]
    with_rank(op, k.shape, 0)
    return [(dtypes.bool, merge_shapes(op, batch, with_rank(op, targets.shape, 1)))]


@registry.RegisterKernel("InTopKV2")
def _in_top_k_kernel(op):
    def compute(predictions, targets, k):
        predictions, targets = np.asarray(predictions), np.asarray(targets)
        if predictions.shape[0] != targets.shape[0]:
            raise errors.InvalidArgumentError(None, op, f"First dimension of predictions {predictions.shape[0]} must "
                                                        f"match length of targets {targets.shape[0]}")
        classes = predictions.shape[1]
        valid = (targets >= 0) & (targets < classes)
        target_values = predictions[np.arange(len(targets)), np.where(valid, targets, 0)]
        larger = np.sum(predictions > target_values[:, None], axis=1)
        return valid & np.isfinite(target_values) & (larger < int(k))

    return compute


registry.NotDifferentiable("InTopKV2")
