"""Candidate samplers for sampled losses: ``tf.nn.log_uniform_candidate_sampler``,
``uniform_candidate_sampler``, and ``compute_accidental_hits``.

Source: ``tensorflow/python/ops/candidate_sampling_ops.py``, ``core/kernels/candidate_sampler_ops.cc`` and
``core/kernels/range_sampler.cc``. A sampler draws ``num_sampled`` classes from ``[0, range_max)``: uniformly,
or log-uniformly (Zipfian: ``P(k) = (log(k + 2) - log(k + 1)) / log(range_max + 1)``, drawn as
``floor(exp(u * log(range_max + 1))) - 1``). With ``unique`` it redraws until the classes differ and an
expected count is ``-expm1(tries * log1p(-P))`` (``tries`` the draws made), else ``P * num_sampled``.
Draws come from the op's seeded stream (dfcore's seed rules; not TF's numbers). The outputs carry no
gradient.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from .op_util import apply_op
from .random_ops import get_seed

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["compute_accidental_hits", "log_uniform_candidate_sampler", "uniform_candidate_sampler"]

_SAMPLERS = ("LogUniformCandidateSampler", "UniformCandidateSampler")
registry.mark_stateful(*_SAMPLERS)
for _op_type in (*_SAMPLERS, "ComputeAccidentalHits"):
    registry.NotDifferentiable(_op_type)


def _sampler(op_type, true_classes, num_true, num_sampled, unique, range_max, seed, name):
    seed1, seed2 = get_seed(seed)
    attrs = {"num_true": int(num_true), "num_sampled": int(num_sampled), "unique": bool(unique),
             "range_max": int(range_max), "seed": seed1 or 0, "seed2": seed2 or 0}
    op = apply_op(op_type, [true_classes], attrs, name or op_type, dtype=dtypes.int64)
    return tuple(op.outputs)


def log_uniform_candidate_sampler(true_classes: TensorLike, num_true: int, num_sampled: int, unique: bool,
                                  range_max: int, seed: int | None = None,
                                  name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``(sampled_candidates [num_sampled] int64, true_expected_count [batch, num_true] float32,
    sampled_expected_count [num_sampled] float32)``, classes drawn log-uniformly from ``[0, range_max)``
    (``true_classes``: int64 ``[batch, num_true]``).

    Raises (when run) InvalidArgumentError: ``unique`` with ``num_sampled > range_max``.
    """
    return _sampler("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed, name)


def uniform_candidate_sampler(true_classes: TensorLike, num_true: int, num_sampled: int, unique: bool, range_max: int,
                              seed: int | None = None, name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """As :func:`log_uniform_candidate_sampler`, classes drawn uniformly from ``[0, range_max)``."""
    return _sampler("UniformCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed, name)


def compute_accidental_hits(true_classes: TensorLike, sampled_candidates: TensorLike, num_true: int,
                            seed: int | None = None, name: str | None = None) -> tuple[Tensor, ...]:
    """``(indices int32, ids int64, weights float32)``, one entry per (example, true class) that is also a
    sampled candidate: the example's row, the candidate's position (the last one if it is sampled twice),
    and ``-FLT_MAX``, to add to that sampled logit."""
    seed1, seed2 = get_seed(seed)
    op = apply_op("ComputeAccidentalHits", [true_classes, sampled_candidates],
                  {"num_true": int(num_true), "seed": seed1 or 0, "seed2": seed2 or 0},
                  name or "ComputeAccidentalHits", dtype=dtypes.int64)
    return tuple(op.outputs)


@registry.RegisterShape("LogUniformCandidateSampler")
@registry.RegisterShape("UniformCandidateSampler")
def _sampler_shape(op):
    classes = op.inputs[0].shape
    if classes.ndims not in (None, 2):
        raise ValueError(f"Shape must be rank 2 but is rank {classes.ndims} for '{op.name}' (op: '{op.type}')")
    batch = classes.as_list()[0] if classes.ndims == 2 else None
    count = op.get_attr("num_sampled")
    return [(dtypes.int64, TensorShape([count])), (dtypes.float32, TensorShape([batch, op.get_attr("num_true")])),
            (dtypes.float32, TensorShape([count]))]


registry.RegisterShape("ComputeAccidentalHits")(lambda op: [(dtypes.int32, TensorShape([None])),
                                                            (dtypes.int64, TensorShape([None])),
                                                            (dtypes.float32, TensorShape([None]))])


def _log_uniform(range_max):
    log_range = math.log1p(range_max)

    def draw(gen):
        return (int(math.exp(gen.random() * log_range)) - 1) % range_max

    def probability(values):
        values = np.asarray(values, dtype=np.float64)
        return (np.log(values + 2.0) - np.log(values + 1.0)) / log_range

    return draw, probability


def _uniform(range_max):
    return (lambda gen: int(gen.integers(range_max)),
            lambda values: np.full(np.shape(values), 1.0 / range_max))


def _expected(probability, num_sampled, tries):
    if tries == num_sampled:
        return probability * num_sampled
    return -np.expm1(tries * np.log1p(-probability))


def _sampler_kernel(distribution):
    def factory(op):
        num_true, num_sampled = op.get_attr("num_true"), op.get_attr("num_sampled")
        unique, range_max = op.get_attr("unique"), op.get_attr("range_max")
        draw, probability = distribution(range_max)

        def compute(ctx, true_classes):
            classes = np.asarray(true_classes)
            if classes.ndim != 2:
                raise errors.InvalidArgumentError(None, op, "true_classes must be a matrix")
            if classes.shape[1] != num_true:
                raise errors.InvalidArgumentError(None, op, f"true_classes must have num_true columns, expected: "
                                                            f"{classes.shape[1]} was: {num_true}")
            if unique and num_sampled > range_max:
                raise errors.InvalidArgumentError(None, op, "Sampler's range is too small.")
            gen = ctx.resources.generator(op.name, op.get_attr("seed"), op.get_attr("seed2"))
            sampled: list[Any] = []
            seen, tries = set(), 0
            while len(sampled) < num_sampled:
                value, tries = draw(gen), tries + 1
                if not unique or value not in seen:
                    seen.add(value)
                    sampled.append(value)
            tries = tries if unique else num_sampled
            return (np.asarray(sampled, dtype=np.int64),
                    _expected(probability(classes), num_sampled, tries).astype(np.float32),
                    _expected(probability(sampled), num_sampled, tries).astype(np.float32))

        return compute

    return factory


registry.RegisterKernel("LogUniformCandidateSampler", needs_context=True)(_sampler_kernel(_log_uniform))
registry.RegisterKernel("UniformCandidateSampler", needs_context=True)(_sampler_kernel(_uniform))


@registry.RegisterKernel("ComputeAccidentalHits")
def _accidental_hits_kernel(op):
    num_true = op.get_attr("num_true")

    def compute(true_classes, sampled_candidates):
        classes = np.asarray(true_classes)
        if classes.ndim != 2 or classes.shape[1] != num_true:
            raise errors.InvalidArgumentError(None, op, f"true_classes must be a matrix of num_true ({num_true}) "
                                                        f"columns, got shape {list(classes.shape)}")
        position = {int(c): i for i, c in enumerate(np.reshape(sampled_candidates, -1))}
        hits = [(row, position[int(c)]) for row in range(classes.shape[0]) for c in classes[row]
                if int(c) in position]
        indices = np.asarray([h[0] for h in hits], dtype=np.int32)
        ids = np.asarray([h[1] for h in hits], dtype=np.int64)
        return indices, ids, np.full(len(hits), -np.finfo(np.float32).max, dtype=np.float32)

    return compute
