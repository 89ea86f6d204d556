"""The one-hidden-layer ReLU MLP of the lessons (64 pixels → hidden ReLU units → 10 classes).

Source: TF's CIFAR-10 multi-GPU tutorial (``tower_loss``, ``average_gradients`` in
``tensorflow/models`` tutorials/image/cifar10/cifar10_multi_gpu_train.py), on the digits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..framework import dtypes
from ..ops import (
    array_ops,
    array_ops_join,
    array_ops_layout,
    array_ops_slice,
    math_ops,
    nn_ops,
    nn_ops_xent,
    partitioned_variables,
    random_ops,
    variable_scope,
    variables,
)


def mlp_variables(num_features: int, hidden: int, num_classes: int, seed: int,
                  dtype: dtypes.DType = dtypes.float32) -> tuple[variables.Variable, ...]:
    """The MLP's weights, created on the current device: ``(w1, b1, w2, b2)``, truncated-normal (stddev 0.1)
    weights of shapes ``[num_features, hidden]`` and ``[hidden, num_classes]`` and zero biases."""
    w1 = variables.Variable(random_ops.truncated_normal([num_features, hidden], stddev=0.1, seed=seed, dtype=dtype),
                            name="w1")
    return (w1, *_tail_variables(hidden, num_classes, seed, dtype))


def sharded_mlp_variables(num_features: int, hidden: int, num_classes: int, seed: int,
                          w1_shards: int) -> tuple[Any, ...]:
    """:func:`mlp_variables` with ``w1`` made of ``w1_shards`` shards along its rows
    (``tf.get_variable(..., partitioner=tf.fixed_size_partitioner(w1_shards))``: ``w1/part_0``, …; under
    ``replica_device_setter`` each shard is a variable of its own, so they spread over the ps tasks). Each
    shard starts as its rows of the unsharded ``w1``, so both models start from the same weights.
    Returns ``(w1 as a PartitionedVariable, b1, w2, b2)``."""
    full = [num_features, hidden]

    def rows_of_w1(shape: Any, dtype: Any = dtypes.float32, partition_info: Any = None) -> Any:
        whole = random_ops.truncated_normal(full, stddev=0.1, seed=seed, dtype=dtype)
        return array_ops_slice.slice(whole, partition_info.var_offset, list(shape)) if partition_info else whole

    w1 = variable_scope.get_variable("w1", full, initializer=rows_of_w1,
                                     partitioner=partitioned_variables.fixed_size_partitioner(w1_shards))
    return (w1, *_tail_variables(hidden, num_classes, seed))


def _tail_variables(hidden: int, num_classes: int, seed: int, dtype: dtypes.DType = dtypes.float32) -> tuple[Any, ...]:
    """``(b1, w2, b2)``."""
    b1 = variables.Variable(array_ops.zeros([hidden], dtype=dtype), name="b1")
    w2 = variables.Variable(random_ops.truncated_normal([hidden, num_classes], stddev=0.1, seed=seed + 1,
                                                        dtype=dtype), name="w2")
    b2 = variables.Variable(array_ops.zeros([num_classes], dtype=dtype), name="b2")
    return b1, w2, b2


def flat_variables(weights: Sequence[Any]) -> list[Any]:
    """The variables of ``weights`` (``(w1, b1, w2, b2)``), a partitioned ``w1`` as its shards, in order."""
    return [v for w in weights for v in (list(w) if isinstance(w, partitioned_variables.PartitionedVariable)
                                         else [w])]


def regroup(flat: Sequence[Any], w1_shards: int) -> tuple[Any, ...]:
    """``(w1, b1, w2, b2)`` from :func:`flat_variables`' list (or tensors in its order, such as moving averages):
    the first ``w1_shards`` are ``w1``'s rows, concatenated."""
    head = array_ops_join.concat(list(flat[:w1_shards]), axis=0) if w1_shards > 1 else flat[0]
    return (head, *flat[w1_shards:])


def mlp_logits(x: Any, params: Sequence[Any]) -> Any:
    """Logits ``[batch, classes]`` of the MLP on ``x`` ``[batch, features]`` (``params``: ``(w1, b1, w2, b2)``;
    a partitioned ``w1`` is the concatenation of its shards)."""
    w1, b1, w2, b2 = params
    return math_ops.matmul(nn_ops.relu(math_ops.matmul(x, w1) + b1), w2) + b2


def tower_loss(x: Any, y: Any, params: Sequence[Any]) -> Any:
    """Mean sparse softmax cross-entropy (a float scalar) of one tower's slice; ``y``: int64 labels ``[batch]``."""
    logits = mlp_logits(x, params)
    return math_ops.reduce_mean(nn_ops_xent.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))


def average_gradients(tower_grads: Sequence[Sequence[tuple[Any, Any]]]) -> list[tuple[Any, Any]]:
    """Average each variable's gradient over the towers (the tutorial's function).

    Args:
        tower_grads: one list of ``(gradient, variable)`` pairs per tower, same variable order.
    Returns:
        One list of ``(averaged gradient, variable)`` pairs.
    """
    averaged = []
    for grad_and_vars in zip(*tower_grads):
        grads = [array_ops_layout.expand_dims(g, 0) for g, _ in grad_and_vars]
        grad = math_ops.reduce_mean(array_ops_join.concat(grads, axis=0), 0)
        averaged.append((grad, grad_and_vars[0][1]))
    return averaged
