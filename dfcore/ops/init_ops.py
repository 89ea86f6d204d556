"""Initializers: objects that build a variable's initial value for a shape and dtype.

Source: ``tensorflow/python/ops/init_ops.py`` (TF 1.x). An initializer is called as
``initializer(shape, dtype=None, partition_info=None)`` and returns a Tensor of that
shape; ``tf.get_variable`` calls it inside the variable's ``Initializer`` name scope.
The variance-scaling family follows Glorot & Bengio (AISTATS 2010) and He et al.
(ICCV 2015): ``scale / fan`` is the variance, with the fans of :func:`compute_fans`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..framework import dtypes
from . import array_ops, constant_op, random_ops

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import DTypeLike, TensorLike

#: ``stddev`` of a standard normal truncated at ±2, divided out so a truncated draw keeps ``scale / fan``.
_TRUNCATED_NORMAL_STDDEV = 0.87962566103423978


def _float_dtype(dtype, initializer):
    dtype = dtypes.as_dtype(dtype).base_dtype
    if not dtype.is_floating:
        raise TypeError(f"Cannot create initializer for non-floating point type {dtype.name} ({initializer}).")
    return dtype


class Initializer:
    """The base class: ``__call__(shape, dtype=None, partition_info=None) -> Tensor`` and ``get_config()``."""

    def __call__(self, shape: TensorLike, dtype: DTypeLike | None = None, partition_info: Any = None) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not define __call__")

    def get_config(self) -> dict:
        """The constructor arguments that rebuild this initializer (TF's ``get_config``)."""
        return {}


class _Filled(Initializer):
    """Every element the same: ``fill(shape, dtype)``."""

    fill: Callable[..., Any] | None = None

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype).base_dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        fill: Any = type(self).fill  # each subclass sets it
        return fill(shape, dtype or self.dtype)

    def get_config(self):
        return {"dtype": self.dtype.name}


class Zeros(_Filled):
    """All zeros (``tf.zeros_initializer``)."""

    fill = staticmethod(array_ops.zeros)


class Ones(_Filled):
    """All ones (``tf.ones_initializer``)."""

    fill = staticmethod(array_ops.ones)


class Constant(Initializer):
    """``value`` — a scalar broadcast to the shape, or a list/array with exactly as many elements.

    Raises:
        TypeError: ``value`` is not a scalar, list, tuple or numpy array.
        ValueError (on call): ``verify_shape`` and the value's shape differs from the variable's.
    """

    def __init__(self, value: TensorLike = 0, dtype: DTypeLike = dtypes.float32, verify_shape: bool = False):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError(f"Invalid type for initial value: {type(value).__name__} (expected Python scalar, "
                            "list or tuple of values, or numpy.ndarray).")
        self.value, self.verify_shape = value, verify_shape
        self.dtype = dtypes.as_dtype(dtype).base_dtype

    def __call__(self, shape: TensorLike, dtype: DTypeLike | None = None, partition_info: Any = None) -> Tensor:
        return constant_op.constant(self.value, dtype=dtype or self.dtype, shape=shape,
                                    verify_shape=self.verify_shape)

    def get_config(self) -> dict[str, Any]:
        return {"value": self.value, "dtype": self.dtype.name, "verify_shape": self.verify_shape}


class RandomUniform(Initializer):
    """Uniform in ``[minval, maxval)`` (``tf.random_uniform_initializer``)."""

    def __init__(self, minval: float = 0.0, maxval: TensorLike = None, seed: int | None = None,
                 dtype: DTypeLike = dtypes.float32):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = dtypes.as_dtype(dtype).base_dtype

    def __call__(self, shape: TensorLike, dtype: DTypeLike | None = None, partition_info: Any = None) -> Tensor:
        return random_ops.random_uniform(shape, self.minval, self.maxval, dtype or self.dtype, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed, "dtype": self.dtype.name}


class RandomNormal(Initializer):
    """Normal with ``mean`` and ``stddev`` (``tf.random_normal_initializer``)."""

    def __init__(self, mean: float = 0.0, stddev: float = 1.0, seed: int | None = None,
                 dtype: DTypeLike = dtypes.float32):
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _float_dtype(dtype, type(self).__name__)

    def __call__(self, shape: TensorLike, dtype: DTypeLike | None = None, partition_info: Any = None) -> Tensor:
        return random_ops.random_normal(shape, self.mean, self.stddev, dtype or self.dtype, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed, "dtype": self.dtype.name}


class TruncatedNormal(RandomNormal):
    """Normal with ``mean`` and ``stddev``, draws beyond two ``stddev`` redrawn
    (``tf.truncated_normal_initializer``)."""

    def __call__(self, shape: TensorLike, dtype: DTypeLike | None = None, partition_info: Any = None) -> Tensor:
        return random_ops.truncated_normal(shape, self.mean, self.stddev, dtype or self.dtype, seed=self.seed)


def compute_fans(shape: TensorLike) -> tuple:
    """``(fan_in, fan_out)`` of a weight ``shape``: a matrix ``[in, out]``; a convolution kernel
    ``[..., in, out]`` times its receptive field (the product of the leading dimensions)."""
    shape = [int(d) for d in shape]
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(Initializer):
    """Samples whose variance is ``scale / n``, ``n`` being the fan-in, the fan-out or their mean.

    Args:
        scale: > 0. mode: ``"fan_in"``, ``"fan_out"`` or ``"fan_avg"``.
        distribution: ``"truncated_normal"`` (or ``"normal"``, its old name), ``"untruncated_normal"``
            or ``"uniform"`` (limit ``sqrt(3 * scale / n)``).
    Raises:
        ValueError: ``scale`` ≤ 0, or an unknown ``mode`` or ``distribution`` (TF's wording).
    """

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("normal", "uniform", "truncated_normal", "untruncated_normal")

    def __init__(self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "truncated_normal",
                 seed: int | None = None, dtype: DTypeLike = dtypes.float32):
        if scale <= 0.0:
            raise ValueError("`scale` must be positive float.")
        if mode not in self._MODES:
            raise ValueError(f"Invalid `mode` argument: {mode}")
        if distribution.lower() not in self._DISTRIBUTIONS:
            raise ValueError(f"Invalid `distribution` argument: {distribution}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution.lower(), seed
        self.dtype = _float_dtype(dtype, type(self).__name__)

    def __call__(self, shape: TensorLike, dtype: DTypeLike | None = None, partition_info: Any = None) -> Tensor:
        dtype = dtype or self.dtype
        fan_in, fan_out = compute_fans(shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, fan)
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / _TRUNCATED_NORMAL_STDDEV
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed,
                "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """Uniform in ``±sqrt(6 / (fan_in + fan_out))`` (Glorot & Bengio 2010; TF 1.x's default for floats)."""

    def __init__(self, seed: int | None = None, dtype: DTypeLike = dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Truncated normal with ``stddev = sqrt(2 / (fan_in + fan_out))`` (Glorot & Bengio 2010)."""

    def __init__(self, seed: int | None = None, dtype: DTypeLike = dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


# TF 1.x's spellings: tf.zeros_initializer, ..., and the tf.initializers namespace (see dfcore.initializers).
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal

__all__ = [
    "constant_initializer",
    "glorot_normal_initializer",
    "glorot_uniform_initializer",
    "ones_initializer",
    "random_normal_initializer",
    "random_uniform_initializer",
    "truncated_normal_initializer",
    "variance_scaling_initializer",
    "zeros_initializer",
]
