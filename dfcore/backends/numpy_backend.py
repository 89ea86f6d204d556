"""The numpy backend: host arrays, the allocator's ``out=`` kernels, and the fastest path.

Source: numpy >= 2 implements the array API standard in its main namespace (``np.concat``, ``np.permute_dims``,
``np.astype``...), so kernels call ``numpy`` itself and pay no wrapper per call; an older numpy gets
``array_api_compat.numpy``. See :mod:`dfcore.backends` for the contract.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

_XP: Any = np
if int(np.__version__.split(".")[0]) < 2:  # numpy 1.26: the standard's names come from array_api_compat
    import array_api_compat.numpy as _XP


class NumpyBackend:
    """Arrays are ``numpy.ndarray`` (numpy scalars count as native too)."""

    name = "numpy"
    xp = _XP
    supports_out = True

    def from_host(self, value: Any) -> Any:
        return value

    def to_host(self, value: Any) -> np.ndarray:
        return np.asarray(value)

    def is_native(self, value: Any) -> bool:
        return isinstance(value, np.ndarray | np.generic)

    def dtype(self, np_dtype: Any) -> Any:
        return np.dtype(np_dtype)

    def matmul(self, a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False) -> Any:
        if transpose_a:
            a = a.T if a.ndim == 2 else np.swapaxes(a, -1, -2)  # .T: a view, without swapaxes' call overhead
        if transpose_b:
            b = b.T if b.ndim == 2 else np.swapaxes(b, -1, -2)
        return np.matmul(a, b)

    def quiet(self) -> contextlib.AbstractContextManager[Any]:
        return np.errstate(divide="ignore", invalid="ignore", over="ignore")

    def take_columns(self, x: Any, columns: Any) -> Any:
        return x[np.arange(x.shape[0]), columns]

    def add_to_columns(self, x: Any, columns: Any, value: float) -> Any:
        x[np.arange(x.shape[0]), columns] += value
        return x


BACKEND = NumpyBackend()
