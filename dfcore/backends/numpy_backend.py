"""The numpy backend: host arrays, the allocator's ``out=`` kernels, and the fastest path.

Source: numpy >= 2 implements the array API standard in its main namespace (``np.concat``, ``np.permute_dims``,
``np.astype``...), so kernels call ``numpy`` itself and pay no wrapper per call; an older numpy gets
``array_api_compat.numpy``. See :mod:`dfcore.backends` for the contract.

The small-kernel calls skip numpy's Python wrappers and give the same bits: ``np.sum(x, axis)`` is
``_wrapreduction`` around ``np.add.reduce(x, axis)``, ``np.reshape`` is ``_wrapfunc`` around the method, and
``x * mask`` casts the bool mask inside the ufunc loop exactly as ``astype`` would. Per call on [64, 10]
float32 (numpy 2.4, a 2-core AMD EPYC shared with other jobs, load ~0.8): ``np.max`` 16 us,
``np.maximum.reduce`` 8.7; ``np.sum`` 10.8, ``np.add.reduce`` 6.2; ``np.reshape`` 2.6, the method 0.2. Per-row
columns of [16, 10]: ``x[np.arange(16), c] += 1`` 7.6 us, on the flat view at ``row_starts + c`` 4.6 (the
starts kept per shape).
``divide`` by a 0-d divisor of magnitude >= 1 can raise no float error, so it skips ``np.errstate`` (2.2 us to
enter and leave); by a power of two it multiplies by the reciprocal (the same exact value, hence the same bits;
[784, 256] float32: ``np.divide`` 32-34 us, ``np.multiply`` 27-29). TF's constant folding turns ``x / c`` into
``x * (1 / c)`` for any constant ``c`` (a ``Mul`` by ``ConstantFolding/<name>_recip`` in TF 2.21's partition
graphs: the ``Mul`` of its traces, with other bits for c = 3); here only where the bits stay the division's.
"""

from __future__ import annotations

import contextlib
import math
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
        rows, width = x.shape
        return x.reshape(-1)[_row_starts(rows, width) + columns]  # a copy if x is not contiguous: still read right

    def add_to_columns(self, x: Any, columns: Any, value: float) -> Any:
        rows, width = x.shape
        if x.flags.c_contiguous:
            x.reshape(-1)[_row_starts(rows, width) + columns] += value  # a view: in place
        else:
            x[np.arange(rows), columns] += value
        return x

    def divide(self, x: Any, y: Any) -> Any:
        if getattr(y, "ndim", 1) == 0 and y.dtype.kind == "f":
            d = float(y)
            if 1.0 <= abs(d) < math.inf:  # |x / d| <= |x|, no 0/0, no inf/inf, quiet nan: no float error to hide
                if abs(math.frexp(d)[0]) == 0.5:  # d = +-2**k: x * 2**-k is the same exact value, rounded once
                    return np.multiply(x, y.dtype.type(1.0 / d))
                return np.divide(x, y)
        with self.quiet():
            return np.divide(x, y)

    def reducer(self, name: str) -> Any:
        return _REDUCERS[name]

    def reshape(self, x: Any, shape: tuple[int, ...]) -> Any:
        return x.reshape(shape)

    def multiply_mask(self, x: Any, mask: Any) -> Any:
        return np.multiply(x, mask)


_REDUCERS = {"sum": np.add.reduce, "max": np.maximum.reduce, "min": np.minimum.reduce, "prod": np.multiply.reduce}
_STARTS: dict[tuple[int, int], np.ndarray] = {}
_STARTS_KEPT = 64  # shapes remembered (a program uses a few batch sizes); beyond that, made per call


def _row_starts(rows: int, width: int) -> np.ndarray:
    """``np.arange(rows) * width`` (each row's first flat index), read-only and shared between threads (a dict
    read or write is atomic under the GIL; two threads may both make one, which is harmless)."""
    starts = _STARTS.get((rows, width))
    if starts is None:
        starts = np.arange(rows) * width
        starts.flags.writeable = False
        if len(_STARTS) < _STARTS_KEPT:
            _STARTS[rows, width] = starts
    return starts


BACKEND = NumpyBackend()
