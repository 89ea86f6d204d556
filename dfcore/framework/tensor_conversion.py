"""``convert_to_tensor`` and the registry of conversion functions.

Source: ``tensorflow/python/framework/ops.py`` (``convert_to_tensor``,
``register_tensor_conversion_function``). Python and numpy values become
``Const`` ops; Python floats default to float32 and ints to int32, as in TF.
"""

import numpy as np

from . import dtypes
from .tensor import Tensor

_CONVERSION_FUNCTIONS = []


def register_tensor_conversion_function(base_type, conversion_func, priority=100):
    """Register ``conversion_func(value, dtype=None, name=None, as_ref=False) -> Tensor``."""
    _CONVERSION_FUNCTIONS.append((priority, base_type, conversion_func))
    _CONVERSION_FUNCTIONS.sort(key=lambda item: item[0])


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None, as_ref=False):
    """Convert a Tensor, Variable, numpy array, Python scalar or nested list to a Tensor.

    Raises:
        ValueError: a Tensor whose dtype differs from the requested ``dtype``.
        TypeError: a value that cannot be represented in ``dtype``.
    """
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and not dtype.is_compatible_with(value.dtype):
            raise ValueError(
                f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype {value.dtype.base_dtype.name}: {value!r}"
            )
        return value
    for _, base_type, function in _CONVERSION_FUNCTIONS:
        if isinstance(value, base_type):
            return function(value, dtype=dtype, name=name, as_ref=as_ref)
    if isinstance(value, (list, tuple)) and contains_tensor(value):
        from ..ops import array_ops

        items = list(value) if dtype is None else [convert_to_tensor(v, dtype=dtype) for v in value]
        return array_ops.stack(items, name=name or "packed")
    if dtype is None and preferred_dtype is not None:
        try:
            return _constant(value, dtypes.as_dtype(preferred_dtype), name)
        except (TypeError, ValueError):
            pass
    return _constant(value, dtype, name)


def contains_tensor(values):
    """True if ``values`` (a nested list/tuple) holds a Tensor or a convertible object like a Variable."""
    for v in values:
        if isinstance(v, Tensor) or (isinstance(v, (list, tuple)) and contains_tensor(v)):
            return True
        if any(isinstance(v, base) for _, base, _ in _CONVERSION_FUNCTIONS):
            return True
    return False


def _constant(value, dtype, name):
    from ..ops import constant_op

    return constant_op.constant(value, dtype=dtype, name=name or "Const")


def infer_dtype(value):
    """The DType TF gives a Python or numpy value: float → float32, int → int32."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return dtypes.as_dtype(value.dtype)
    array = np.asarray(value)
    if array.dtype == np.float64:
        return dtypes.float32
    if array.dtype == np.int64:
        too_big = array.size and (array.max() > np.iinfo(np.int32).max or array.min() < np.iinfo(np.int32).min)
        return dtypes.int64 if too_big else dtypes.int32
    if array.dtype.kind in "US":
        return dtypes.string
    return dtypes.as_dtype(array.dtype)


def to_numpy(value, dtype, op_name="Const"):
    """``value`` as a numpy array of ``dtype``; refuses lossy kinds (float → int).

    Raises:
        TypeError: TF's ``Expected <dtype>, got <value> of type '<type>' instead.``
        ValueError: an integer that does not fit ``dtype`` (:func:`~dfcore.framework.dtypes.check_integers_fit`).
    """
    if dtype is dtypes.string:
        return np.asarray(value, dtype=object)
    array = np.asarray(value)
    target = np.dtype(dtype.as_numpy_dtype)
    if array.dtype != target:
        lossy = (array.dtype.kind == "f" and target.kind in "iub") or (array.dtype.kind in "c" and target.kind != "c")
        if lossy and not np.all(np.equal(np.mod(array, 1), 0)):
            raise TypeError(f"Expected {dtype.name}, got {value!r} of type '{type(value).__name__}' instead.")
        if array.dtype.kind in "US":
            raise TypeError(f"Expected {dtype.name}, got {value!r} of type '{type(value).__name__}' instead.")
        dtypes.check_integers_fit(value, array, dtype, f" (op '{op_name}')")
        array = array.astype(target)
    return array
