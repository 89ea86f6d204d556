"""Random ops with TF1's seed rules: uniform, normal, truncated normal, shuffle, multinomial.

Source: ``tensorflow/python/ops/random_ops.py``, ``framework/random_seed.py`` and
``core/ops/random_ops.cc``. Each op carries ``seed``/``seed2`` attrs from
:func:`get_seed`. Kernels are stateful: each op draws from its own generator in
the session (``ctx.resources.generator(op.name, seed, seed2)``), so running an
op again in one session gives new values, and a new session with the same
seeds repeats the sequence. ``seed == seed2 == 0`` means fresh entropy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, graph as graph_lib, registry
from ..framework.graph import graph_of
from ..framework.scopes import name_scope
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import common_shapes, math_ops
from .array_ops import constant_value
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.tensor_like import DTypeLike, TensorLike

__all__ = [
    "get_seed",
    "set_random_seed",
    "random_uniform",
    "random_normal",
    "truncated_normal",
    "random_shuffle",
    "multinomial",
    "uniform",
    "normal",
    "shuffle",
]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1

_FLOAT_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64)
_UNIFORM_TYPES = _FLOAT_TYPES + (dtypes.int32, dtypes.int64)


# -- seeds -------------------------------------------------------------------------
def _truncate_seed(seed):
    return seed % _MAXINT32


def get_seed(op_seed: int | None) -> tuple[int | None, int | None]:
    """The ``(graph seed, op seed)`` pair an op uses, by TF1's rules.

    Graph seed set, op seed None: the op seed is the graph's last op id.
    Graph seed None, op seed set: the graph seed is ``DEFAULT_GRAPH_SEED``.
    Both None: ``(None, None)`` (nondeterministic). ``(0, 0)`` becomes
    ``(0, 2**31 - 1)`` since ``(0, 0)`` means "nondeterministic" to kernels.
    Source: ``tensorflow/python/framework/random_seed.py``.
    """
    graph = graph_lib.get_default_graph()
    global_seed = graph.seed
    if global_seed is not None:
        if op_seed is None:
            op_seed = graph._last_id
        seeds = _truncate_seed(global_seed), _truncate_seed(op_seed)
    elif op_seed is not None:
        seeds = DEFAULT_GRAPH_SEED, _truncate_seed(op_seed)
    else:
        seeds = None, None
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds


def set_random_seed(seed: int | None) -> None:
    """Set the graph-level seed of the default graph (``None`` clears it).

    Source: ``tensorflow/python/framework/random_seed.py``.
    """
    graph_lib.get_default_graph().seed = seed


def _seed_attrs(seed):
    seed1, seed2 = get_seed(seed)
    return {"seed": seed1 or 0, "seed2": seed2 or 0}


def _shape_tensor(shape):
    """``shape`` as a 1-D int tensor named ``shape`` (TF's ``tensor_util.shape_tensor``)."""
    if isinstance(shape, Tensor):
        return shape
    if isinstance(shape, TensorShape):
        shape = shape.as_list()
    return convert_to_tensor(shape, dtype=dtypes.int32, name="shape")


def _generator(ctx, op):
    return ctx.resources.generator(op.name, op.get_attr("seed"), op.get_attr("seed2"))


# -- shape functions ---------------------------------------------------------------
def _shape_from_tensor(op, tensor):
    """The static shape a 1-D shape tensor describes (unknown dims where not constant)."""
    if tensor.shape.ndims not in (None, 1):
        raise common_shapes.shape_error(op, f"Shape must be rank 1 but is rank {tensor.shape.ndims}")
    value = constant_value(tensor)
    if value is not None:
        dims = [int(d) for d in np.reshape(value, -1)]
        if any(d < 0 for d in dims):
            raise common_shapes.shape_error(op, f"Dimension {min(dims)} must be >= 0")
        return TensorShape(dims)
    length = tensor.shape.as_list()[0] if tensor.shape.ndims == 1 else None
    return TensorShape(None if length is None else [None] * length)


@registry.RegisterShape("RandomUniform")
@registry.RegisterShape("RandomStandardNormal")
@registry.RegisterShape("TruncatedNormal")
def _random_float_shape(op):
    return [(op.get_attr("dtype"), _shape_from_tensor(op, op.inputs[0]))]


@registry.RegisterShape("RandomUniformInt")
def _random_uniform_int_shape(op):
    shape, minval, maxval = op.inputs
    for tensor in (minval, maxval):
        if tensor.shape.ndims not in (None, 0):
            raise common_shapes.shape_error(op, f"Shape must be rank 0 but is rank {tensor.shape.ndims}")
    return [(op.get_attr("Tout"), _shape_from_tensor(op, shape))]


registry.RegisterShape("RandomShuffle")(common_shapes.unchanged)


@registry.RegisterShape("Multinomial")
def _multinomial_shape(op):
    logits, num_samples = op.inputs
    if logits.shape.ndims not in (None, 2):
        raise common_shapes.shape_error(op, f"Shape must be rank 2 but is rank {logits.shape.ndims}")
    batch = logits.shape.as_list()[0] if logits.shape.ndims == 2 else None
    count = constant_value(num_samples)
    return [(op.get_attr("output_dtype"), TensorShape([batch, None if count is None else int(count)]))]


# -- kernels -----------------------------------------------------------------------
def _float_kernel(draw):
    """Array kernel factory for float ops: ``draw(generator, shape, numpy_dtype)`` gives the samples, drawn on
    the host from the op's numpy stream (so a seed gives the same numbers on every backend), then copied to
    the device."""

    def factory(op, backend):
        dtype = np.dtype(op.get_attr("dtype").as_numpy_dtype)
        host, from_host = backend.to_host, backend.from_host

        def compute(ctx, shape):
            sample = draw(_generator(ctx, op), tuple(int(d) for d in host(shape)), dtype)
            return from_host(np.asarray(sample, dtype=dtype))

        return compute

    return factory


def _uniform01(gen, shape, dtype):
    """Uniform samples in [0, 1) drawn in ``dtype``'s own precision, so none rounds up to 1."""
    if dtype == np.float16:
        return gen.integers(0, 2048, size=shape) / 2048.0
    return gen.random(shape, dtype=dtype)


def _truncated(gen, shape, dtype):
    """Standard normal samples, each redrawn until it lies within two standard deviations."""
    sample = gen.standard_normal(shape)
    flat = sample.reshape(-1)  # a view: redraws land in ``sample``
    bad = np.flatnonzero(np.abs(flat) > 2.0)  # ascending, as a boolean mask would take them
    while bad.size:  # only the redrawn positions are looked at again
        redrawn = gen.standard_normal(bad.size)
        flat[bad] = redrawn
        bad = bad[np.abs(redrawn) > 2.0]
    return sample


registry.RegisterArrayKernel("RandomUniform", needs_context=True)(_float_kernel(_uniform01))
registry.RegisterArrayKernel("RandomStandardNormal", needs_context=True)(
    _float_kernel(lambda gen, shape, dtype: gen.standard_normal(shape)))
registry.RegisterArrayKernel("TruncatedNormal", needs_context=True)(_float_kernel(_truncated))


@registry.RegisterArrayKernel("RandomUniformInt", needs_context=True)
def _random_uniform_int_kernel(op, backend):
    """Drawn on the host (the op's numpy stream), then copied to the device."""
    dtype = op.get_attr("Tout").as_numpy_dtype
    host, from_host = backend.to_host, backend.from_host

    def compute(ctx, shape, minval, maxval):
        minval, maxval = host(minval), host(maxval)
        if minval >= maxval:
            raise errors.InvalidArgumentError(None, op, f"Need minval < maxval: {minval} >= {maxval}")
        return from_host(np.asarray(_generator(ctx, op).integers(minval, maxval, size=tuple(
            int(d) for d in host(shape)), dtype=dtype)))

    return compute


@registry.RegisterKernel("RandomShuffle", needs_context=True)
def _random_shuffle_kernel(op):
    def compute(ctx, value):
        value = np.asarray(value)
        if value.ndim == 0 or len(value) <= 1:
            return value
        return value[_generator(ctx, op).permutation(len(value))]

    return compute


@registry.RegisterKernel("Multinomial", needs_context=True)
def _multinomial_kernel(op):
    out = op.get_attr("output_dtype").as_numpy_dtype

    def compute(ctx, logits, num_samples):
        if num_samples < 0:
            raise errors.InvalidArgumentError(None, op, f"num_samples should be nonnegative, got {num_samples}")
        logits = np.asarray(logits, dtype=np.float64)
        if logits.shape[1] == 0:
            raise errors.InvalidArgumentError(None, op, "num_classes should be positive, got 0")
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        cdf = np.cumsum(probs, axis=1)
        cdf /= cdf[:, -1:]
        u = _generator(ctx, op).random((logits.shape[0], int(num_samples)))
        samples = [np.searchsorted(row, draws, side="right") for row, draws in zip(cdf, u)]
        return np.minimum(np.asarray(samples, dtype=out).reshape(u.shape), logits.shape[1] - 1)

    return compute


_RANDOM_OPS = ("RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal",
               "RandomShuffle", "Multinomial")
registry.mark_stateful(*_RANDOM_OPS)
for _op_type in _RANDOM_OPS:
    registry.NotDifferentiable(_op_type)


# -- public constructors -----------------------------------------------------------
def random_uniform(shape: TensorLike, minval: TensorLike = 0, maxval: TensorLike = None,
                   dtype: DTypeLike = dtypes.float32, seed: int | None = None, name: str | None = None) -> Tensor:
    """Uniform samples in ``[minval, maxval)`` of ``shape`` (a list or 1-D int32 tensor).

    Floats: ``RandomUniform * (maxval - minval) + minval``; ints: ``RandomUniformInt``.
    Raises:
        ValueError: a dtype other than float16/32/64, int32/64, or an integer dtype without ``maxval``.
        InvalidArgumentError (at run time): integer ``minval >= maxval``.
    Source: ``tensorflow/python/ops/random_ops.py``.
    """
    dtype = dtypes.as_dtype(dtype).base_dtype
    if dtype not in _UNIFORM_TYPES:
        raise ValueError(f"Invalid dtype {dtype!r}")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        maxval = 1
    with name_scope(name, "random_uniform", [shape, minval, maxval]) as scope:
        shape = _shape_tensor(shape)
        minval = convert_to_tensor(minval, dtype=dtype, name="min")
        maxval = convert_to_tensor(maxval, dtype=dtype, name="max")
        attrs = _seed_attrs(seed)
        if dtype.is_integer:
            attrs.update(Tout=dtype, T=shape.dtype.base_dtype)
            return apply_op1("RandomUniformInt", [shape, minval, maxval], attrs, scope)
        attrs.update(dtype=dtype, T=shape.dtype.base_dtype)
        rnd = apply_op1("RandomUniform", [shape], attrs, "RandomUniform")
        return math_ops.add(rnd * (maxval - minval), minval, name=scope)


def _scaled_normal(op_type, default_name, shape, mean, stddev, dtype, seed, name):
    dtype = dtypes.as_dtype(dtype).base_dtype
    if dtype not in _FLOAT_TYPES:
        raise ValueError(f"Invalid dtype {dtype!r}")
    with name_scope(name, default_name, [shape, mean, stddev]) as scope:
        shape = _shape_tensor(shape)
        mean = convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        attrs = _seed_attrs(seed)
        attrs.update(dtype=dtype, T=shape.dtype.base_dtype)
        rnd = apply_op1(op_type, [shape], attrs, op_type)
        return math_ops.add(rnd * stddev, mean, name=scope)


def random_normal(shape: TensorLike, mean: TensorLike = 0.0, stddev: TensorLike = 1.0,
                  dtype: DTypeLike = dtypes.float32, seed: int | None = None, name: str | None = None) -> Tensor:
    """Normal samples ``RandomStandardNormal * stddev + mean`` of ``shape``.

    Raises:
        ValueError: a non-float dtype.
    Source: ``tensorflow/python/ops/random_ops.py``.
    """
    return _scaled_normal("RandomStandardNormal", "random_normal", shape, mean, stddev, dtype, seed, name)


def truncated_normal(shape: TensorLike, mean: TensorLike = 0.0, stddev: TensorLike = 1.0,
                     dtype: DTypeLike = dtypes.float32, seed: int | None = None, name: str | None = None) -> Tensor:
    """Normal samples with those beyond two standard deviations redrawn (``TruncatedNormal``).

    Raises:
        ValueError: a non-float dtype.
    Source: ``tensorflow/python/ops/random_ops.py``.
    """
    return _scaled_normal("TruncatedNormal", "truncated_normal", shape, mean, stddev, dtype, seed, name)


def random_shuffle(value: TensorLike, seed: int | None = None, name: str | None = None) -> Tensor:
    """``value`` with its first dimension randomly permuted (``RandomShuffle``); same shape and dtype.

    Source: ``tensorflow/python/ops/random_ops.py``.
    """
    graph = graph_of([value])
    with graph.as_default():
        value = convert_to_tensor(value)
        attrs = _seed_attrs(seed)
        attrs["T"] = value.dtype.base_dtype
        return apply_op1("RandomShuffle", [value], attrs, name or "RandomShuffle")


def multinomial(logits: TensorLike, num_samples: TensorLike, seed: int | None = None, name: str | None = None,
                output_dtype: DTypeLike | None = None) -> Tensor:
    """Class indices ``[batch, num_samples]`` drawn from ``softmax(logits)`` row by row (int64 by default).

    Args:
        logits: a ``[batch, num_classes]`` float tensor of unnormalized log-probabilities.
        num_samples: a scalar int32 count.
    Raises:
        InvalidArgumentError: logits not of rank 2 (graph construction).
    Source: ``tensorflow/python/ops/random_ops.py``.
    """
    with name_scope(name, "multinomial", [logits]):
        logits = convert_to_tensor(logits, name="logits")
        num_samples = convert_to_tensor(num_samples, dtype=dtypes.int32, name="num_samples")
        attrs = _seed_attrs(seed)
        attrs.update(T=logits.dtype.base_dtype, output_dtype=dtypes.as_dtype(output_dtype or dtypes.int64).base_dtype)
        return apply_op1("Multinomial", [logits, num_samples], attrs, "Multinomial")


uniform = random_uniform
normal = random_normal
shuffle = random_shuffle
