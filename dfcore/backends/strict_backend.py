"""The ``array_api_strict`` backend: arrays that allow only what the array API standard allows.

Source: ``array-api-strict`` (data-apis). No GPU library is installed where CI runs, so a simulated GPU backed
by this library (``DFCORE_SIMULATED_GPU_BACKEND=array_api_strict``) is how a numpy-only call in a kernel that
claims to be portable fails here rather than on a user's GPU. See :mod:`dfcore.backends` for the contract.
"""

from __future__ import annotations

import contextlib
from typing import Any

import array_api_strict as xp
import numpy as np

Array = type(xp.asarray(0))  # the library's array class (not exported by name)
_KINDS = frozenset("biufc")  # numeric and bool numpy kinds: the standard's dtypes


class StrictBackend:
    """Arrays are ``array_api_strict.Array``; numpy values of other dtypes (strings, objects) stay numpy."""

    name = "array_api_strict"
    xp = xp
    supports_out = False

    def from_host(self, value: Any) -> Any:
        value = np.asarray(value)
        if value.dtype.kind not in _KINDS or value.dtype == np.float16:
            return value
        return xp.asarray(value)

    def to_host(self, value: Any) -> np.ndarray:
        return np.asarray(value)

    def is_native(self, value: Any) -> bool:
        return isinstance(value, Array)

    def dtype(self, np_dtype: Any) -> Any:
        return getattr(xp, np.dtype(np_dtype).name)

    def matmul(self, a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False) -> Any:
        return xp.matmul(xp.matrix_transpose(a) if transpose_a else a, xp.matrix_transpose(b) if transpose_b else b)

    def quiet(self) -> contextlib.AbstractContextManager[Any]:
        return np.errstate(divide="ignore", invalid="ignore", over="ignore")

    def take_columns(self, x: Any, columns: Any) -> Any:
        return xp.take_along_axis(x, xp.expand_dims(columns, axis=1), axis=1)[:, 0]

    def add_to_columns(self, x: Any, columns: Any, value: float) -> Any:
        hit = xp.expand_dims(columns, axis=1) == xp.arange(x.shape[1], dtype=columns.dtype)
        return x + xp.astype(hit, x.dtype) * value  # elsewhere x + (-)0.0: x exactly

    def divide(self, x: Any, y: Any) -> Any:
        with self.quiet():
            return xp.divide(x, y)

    def reducer(self, name: str) -> Any:
        return getattr(xp, name)

    def reshape(self, x: Any, shape: tuple[int, ...]) -> Any:
        return xp.reshape(x, shape)

    def multiply_mask(self, x: Any, mask: Any) -> Any:
        return x * xp.astype(mask, x.dtype)


BACKEND = StrictBackend()
