"""``convert_to_tensor`` and the registry of conversion functions.

Source: ``tensorflow/python/framework/ops.py`` (``convert_to_tensor``,
``register_tensor_conversion_function``). Python and numpy values become
``Const`` ops; Python floats default to float32 and ints to int32, as in TF.
As in TF, ops/ registers the generic conversions: a list or tuple holding Tensors is packed with
``tf.stack`` (``array_ops_join``, priority 99) and any other value becomes ``tf.constant``
(``constant_op``, priority 200), so this module imports nothing above framework/.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from . import dtypes
from .tensor import Tensor

_CONVERSION_FUNCTIONS: list[tuple[int, type | tuple[type, ...], Callable[..., Any]]] = []


def register_tensor_conversion_function(base_type, conversion_func, priority=100):
    """Register ``conversion_func(value, dtype=None, name=None, as_ref=False) -> Tensor`` for values of
    ``base_type``; lower ``priority`` is tried first, and a function that returns ``NotImplemented`` passes
    the value on to the next one (TF's rule)."""
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
                f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype {value.dtype.base_dtype.name}: "
                f"{value!r}"
            )
        return value
    for _, base_type, function in _CONVERSION_FUNCTIONS:
        if not isinstance(value, base_type):
            continue
        if dtype is None and preferred_dtype is not None:
            try:
                result = function(value, dtype=dtypes.as_dtype(preferred_dtype), name=name, as_ref=as_ref)
            except (TypeError, ValueError):
                result = NotImplemented
            if result is not NotImplemented:
                return result
        result = function(value, dtype=dtype, name=name, as_ref=as_ref)
        if result is not NotImplemented:
            return result
    raise TypeError(f"Failed to convert object of type {type(value)} to Tensor. Contents: {value}. Consider casting "
                    "elements to a supported type.")


def contains_tensor(values):
    """True if ``values`` (a nested list/tuple) holds a Tensor or a convertible object like a Variable (a value
    of a type with its own conversion function; the constant conversion of any ``object`` does not count)."""
    for v in values:
        if isinstance(v, (list, tuple)):
            if contains_tensor(v):
                return True
        elif isinstance(v, Tensor) or any(base is not object and isinstance(v, base)
                                          for _, base, _ in _CONVERSION_FUNCTIONS):
            return True
    return False


def infer_dtype(value):
    """The DType TF gives a Python or numpy value: float → float32, int → int32 (int64 when it does not fit).

    Raises:
        TypeError: a Python int beyond int64's range (TF's ``Failed to convert object of type ...``).
    """
    if isinstance(value, (np.ndarray, np.generic)):
        return dtypes.as_dtype(value.dtype)
    array = np.asarray(value)
    if array.dtype == np.object_ and any(isinstance(v, int) for v in array.reshape(-1)):
        raise TypeError(f"Failed to convert object of type {type(value)} to Tensor. Contents: {value}. Consider "
                        "casting elements to a supported type (an integer beyond int64's range needs a float dtype).")
    if array.dtype == np.float64:
        return dtypes.float32
    if array.dtype == np.int64:
        too_big = array.size and (array.max() > np.iinfo(np.int32).max or array.min() < np.iinfo(np.int32).min)
        return dtypes.int64 if too_big else dtypes.int32
    if array.dtype.kind in "US":
        return dtypes.string
    return dtypes.as_dtype(array.dtype)


def to_numpy(value, dtype, op_name="Const"):
    """``value`` as a numpy array of ``dtype``; refuses lossy kinds (float → int) and integers that do not fit.

    Raises:
        TypeError: TF's ``Expected <dtype>, got <value> of type '<type>' instead.``: a string for a
            number, a float that is not a whole number, or a value outside the dtype's range
            (:func:`~dfcore.framework.dtypes.first_value_outside`), whose message adds the range.
    """
    if dtype is dtypes.string:
        return np.asarray(value, dtype=object)
    array = np.asarray(value)
    target = np.dtype(dtype.as_numpy_dtype)
    if array.dtype == target:
        return array
    if array.dtype.kind in "US" or (array.dtype.kind == "c" and target.kind != "c"):
        raise _expected(dtype, value)
    outside = dtypes.first_value_outside(value, array, dtype)
    if outside is not None:
        raise _expected(dtype, outside, f": {dtype.name} holds integers in [{dtype.min}, {dtype.max}] (op "
                                        f"'{op_name}'). "
                                        "Use a wider dtype or values in range.")
    if array.dtype.kind == "f" and target.kind in "iub" and not np.all(np.equal(np.mod(array, 1), 0)):
        raise _expected(dtype, value)
    return array.astype(target)


def _expected(dtype, value, detail=""):
    """TF's ``make_tensor_proto`` TypeError: ``Expected int32, got 2.5 of type 'float' instead.``"""
    shown = str(value) if isinstance(value, np.generic) else repr(value)
    return TypeError(f"Expected {dtype.name}, got {shown} of type '{type(value).__name__}' instead{detail or '.'}")
