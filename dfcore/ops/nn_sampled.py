"""``tf.nn.nce_loss`` and ``tf.nn.sampled_softmax_loss``: training losses over the true classes and a sample
of the others.

Source: ``tensorflow/python/ops/nn_impl.py`` (``_compute_sampled_logits``, ``nce_loss``,
``sampled_softmax_loss``). Logits are ``inputs . weights[c] + biases[c]`` for each example's ``num_true``
true classes and the ``num_sampled`` shared sampled classes (log-uniform sampler by default, or
``sampled_values`` given), each less ``log(expected count)`` (``subtract_log_q``); a sampled class equal to
one of the example's true classes gets ``-FLT_MAX`` added when ``remove_accidental_hits``. NCE is the
per-example sum of sigmoid cross-entropies against labels ``1 / num_true`` (true) and 0 (sampled); the
sampled softmax is the softmax cross-entropy over the same logits. Gradients flow to ``weights``,
``biases`` and ``inputs`` (not through the sampler).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..framework import dtypes
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from . import math_ops
from .array_ops import ones_like, reshape, shape, stop_gradient, zeros_like
from .array_ops_gather import one_hot, unsorted_segment_sum
from .array_ops_join import concat
from .array_ops_layout import expand_dims
from .array_ops_slice import slice as slice_
from .array_ops_where import where
from .candidate_sampling import compute_accidental_hits, log_uniform_candidate_sampler
from .embedding_ops import embedding_lookup
from .math_ops_matmul import matmul
from .math_ops_unary import log
from .nn_impl import sigmoid_cross_entropy_with_logits
from .nn_ops_xent import softmax_cross_entropy_with_logits_v2
from .reductions import reduce_sum

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["nce_loss", "sampled_softmax_loss"]


def _accidental_hit_mask(labels, sampled, num_true, num_sampled):
    """``[batch, num_sampled]`` bool: where a sampled class is one of the row's true classes."""
    indices, ids, _ = compute_accidental_hits(labels, sampled, num_true=num_true)
    hits = unsorted_segment_sum(one_hot(ids, num_sampled, dtype=dtypes.float32), indices, shape(labels)[0])
    return math_ops.greater(hits, 0.0)


def compute_sampled_logits(weights: TensorLike, biases: TensorLike, labels: TensorLike, inputs: TensorLike,
                           num_sampled: int, num_classes: int, num_true: int = 1, sampled_values: Any = None,
                           subtract_log_q: bool = True, remove_accidental_hits: bool = False,
                           partition_strategy: str = "mod", seed: int | None = None) -> tuple[Tensor, Tensor]:
    """``(logits, labels)``, each ``[batch, num_true + num_sampled]``: the true classes' then the sampled ones'."""
    if not isinstance(weights, list | tuple):
        weights = [weights]
    labels = math_ops.cast(convert_to_tensor(labels, name="labels"), dtypes.int64)
    inputs = convert_to_tensor(inputs, name="inputs")
    labels_flat = reshape(labels, [-1])
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(labels, num_true, num_sampled, True, num_classes, seed=seed)
    sampled, true_expected, sampled_expected = (stop_gradient(v) for v in sampled_values)
    sampled = math_ops.cast(sampled, dtypes.int64)
    all_ids = concat([labels_flat, sampled], 0)
    all_w = embedding_lookup(list(weights), all_ids, partition_strategy=partition_strategy)
    n_true = shape(labels_flat)[:1]
    true_w = slice_(all_w, [0, 0], concat([n_true, [-1]], 0))
    sampled_w = slice_(all_w, concat([n_true, [0]], 0), [-1, -1])
    all_b = embedding_lookup(biases, all_ids)
    true_b = reshape(slice_(all_b, [0], n_true), [-1, num_true])
    sampled_b = slice_(all_b, n_true, [-1])
    dim = shape(true_w)[1:2]
    true_w = reshape(true_w, concat([[-1, num_true], dim], 0))
    true_logits = reduce_sum(math_ops.multiply(expand_dims(inputs, 1), true_w), axis=2) + true_b
    sampled_logits = matmul(inputs, sampled_w, transpose_b=True) + sampled_b
    if remove_accidental_hits:
        mask = _accidental_hit_mask(labels, sampled, num_true, num_sampled)
        lowest = np.finfo(sampled_logits.dtype.as_numpy_dtype).max
        sampled_logits = sampled_logits + where(mask, -lowest * ones_like(sampled_logits), zeros_like(sampled_logits))
    if subtract_log_q:
        true_logits = true_logits - log(math_ops.cast(true_expected, true_logits.dtype))
        sampled_logits = sampled_logits - log(math_ops.cast(sampled_expected, sampled_logits.dtype))
    out_logits = concat([true_logits, sampled_logits], 1)
    out_labels = concat([ones_like(true_logits) / num_true, zeros_like(sampled_logits)], 1)
    return out_logits, out_labels


def nce_loss(weights: TensorLike, biases: TensorLike, labels: TensorLike, inputs: TensorLike, num_sampled: int,
             num_classes: int, num_true: int = 1, sampled_values: Any = None, remove_accidental_hits: bool = False,
             partition_strategy: str = "mod", name: str = "nce_loss") -> Tensor:
    """Noise-contrastive estimation loss ``[batch]`` (Gutmann and Hyvarinen 2010; TF's ``nce_loss``).

    Args:
        weights: ``[num_classes, dim]`` (or a list of its shards); biases: ``[num_classes]``.
        labels: int ``[batch, num_true]``; inputs: float ``[batch, dim]``.
        sampled_values: ``(sampled [num_sampled], true_expected [batch, num_true], sampled_expected
            [num_sampled])`` from a candidate sampler; default the log-uniform sampler, unique.
    """
    with name_scope(name, "nce_loss", [weights, biases, labels, inputs]):
        logits, targets = compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                                                 num_true, sampled_values, True, remove_accidental_hits,
                                                 partition_strategy)
        losses = sigmoid_cross_entropy_with_logits(labels=targets, logits=logits, name="sampled_losses")
        return reduce_sum(losses, axis=1)


def sampled_softmax_loss(weights: TensorLike, biases: TensorLike, labels: TensorLike, inputs: TensorLike,
                         num_sampled: int, num_classes: int, num_true: int = 1, sampled_values: Any = None,
                         remove_accidental_hits: bool = True, partition_strategy: str = "mod",
                         name: str = "sampled_softmax_loss", seed: int | None = None) -> Tensor:
    """Sampled softmax cross-entropy ``[batch]`` (Jean et al. 2014; TF's ``sampled_softmax_loss``); arguments
    as :func:`nce_loss`, accidental hits removed by default."""
    with name_scope(name, "sampled_softmax_loss", [weights, biases, labels, inputs]):
        logits, targets = compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                                                 num_true, sampled_values, True, remove_accidental_hits,
                                                 partition_strategy, seed)
        return softmax_cross_entropy_with_logits_v2(labels=stop_gradient(targets, name="labels_stop_gradient"),
                                                    logits=logits)
