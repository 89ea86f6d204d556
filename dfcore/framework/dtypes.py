"""Data types, named as TensorFlow names them (``tf.float32``, ``tf.int64`` …).

Source: ``tensorflow/python/framework/dtypes.py``. A DType wraps a numpy dtype;
``*_ref`` variants mark the reference-typed output of a ``VariableV2`` op.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np


class DType:
    """A tensor element type.

    Attributes:
        name: TF's name (``"float32"``, ``"float32_ref"``).
        as_numpy_dtype: the numpy scalar type (``np.float32``).
        is_ref: True for the reference type a variable op outputs.
    """

    __slots__ = ("_name", "_np", "_is_ref")

    def __init__(self, name, np_type, is_ref=False):
        self._name = name
        self._np = np_type
        self._is_ref = is_ref

    @property
    def name(self):
        return self._name

    @property
    def as_numpy_dtype(self):
        return self._np

    @property
    def is_ref(self):
        return self._is_ref

    @property
    def base_dtype(self) -> DType:
        return _BY_NAME[self._name[:-4]] if self._is_ref else self

    @property
    def _as_ref(self):
        return self if self._is_ref else _BY_NAME[self._name + "_ref"]

    @property
    def as_datatype_enum(self):
        """TF's ``DataType`` enum value (``types.proto``: ``DT_FLOAT`` = 1; a ref type adds 100)."""
        return _ENUM_BY_NAME[self.base_dtype._name] + (100 if self._is_ref else 0)

    @property
    def is_floating(self):
        return np.issubdtype(self._np, np.floating)

    @property
    def is_integer(self):
        return np.issubdtype(self._np, np.integer)

    @property
    def is_bool(self):
        return self._np is np.bool_

    @property
    def is_numeric(self):
        return self.is_floating or self.is_integer

    @property
    def size(self):
        return np.dtype(self._np).itemsize

    @property
    def min(self):
        return np.finfo(self._np).min if self.is_floating else np.iinfo(self._np).min

    @property
    def max(self):
        return np.finfo(self._np).max if self.is_floating else np.iinfo(self._np).max

    def is_compatible_with(self, other):
        return self.base_dtype is as_dtype(other).base_dtype

    def __eq__(self, other):
        if other is None:
            return False
        try:
            return self is as_dtype(other)
        except TypeError:
            return False

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f"tf.{self._name}"

    def __str__(self):
        return f"<dtype: '{self._name}'>"

    def __reduce__(self):
        return as_dtype, (self._name,)


# (TF name, numpy type, TF's DataType enum from tensorflow/core/framework/types.proto)
_BASE = [
    ("float16", np.float16, 19),
    ("float32", np.float32, 1),
    ("float64", np.float64, 2),
    ("int8", np.int8, 6),
    ("int16", np.int16, 5),
    ("int32", np.int32, 3),
    ("int64", np.int64, 9),
    ("uint8", np.uint8, 4),
    ("bool", np.bool_, 10),
    ("string", np.object_, 7),
]

_BY_NAME = {}
_ENUM_BY_NAME = {name: enum for name, _, enum in _BASE}
for _name, _np_type, _ in _BASE:
    _BY_NAME[_name] = DType(_name, _np_type)
    _BY_NAME[_name + "_ref"] = DType(_name + "_ref", _np_type, is_ref=True)

float16 = half = _BY_NAME["float16"]
float32 = _BY_NAME["float32"]
float64 = double = _BY_NAME["float64"]
int8 = _BY_NAME["int8"]
int16 = _BY_NAME["int16"]
int32 = _BY_NAME["int32"]
int64 = _BY_NAME["int64"]
uint8 = _BY_NAME["uint8"]
bool = _BY_NAME["bool"]
string = _BY_NAME["string"]

_BY_NUMPY: dict[np.dtype, DType] = {np.dtype(t): _BY_NAME[n] for n, t, _ in _BASE if n != "string"}
_BY_ENUM = {enum: _BY_NAME[name] for name, enum in _ENUM_BY_NAME.items()}
_BY_ENUM.update({enum + 100: _BY_NAME[name + "_ref"] for name, enum in _ENUM_BY_NAME.items()})
_BY_NUMPY[np.dtype(np.object_)] = string
_BY_PYTHON = {builtins.float: float32, builtins.int: int32, builtins.bool: bool}


def as_dtype(type_value: Any) -> DType:
    """Convert a DType, numpy dtype or type, TF name (``"float32"``), Python type or TF ``DataType`` enum
    value (``1`` is float32) to a DType.

    Raises:
        TypeError: if the value names no supported type.
    """
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        if type_value in _BY_NAME:
            return _BY_NAME[type_value]
        aliases = {"float": float32, "double": float64, "half": float16}
        if type_value in aliases:
            return aliases[type_value]
    if type_value in _BY_PYTHON:
        return _BY_PYTHON[type_value]
    if isinstance(type_value, (int, np.integer)) and not isinstance(type_value, builtins.bool):
        if int(type_value) in _BY_ENUM:
            return _BY_ENUM[int(type_value)]
        raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.")
    try:
        return _BY_NUMPY[np.dtype(type_value)]
    except (TypeError, KeyError):
        pass
    raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.")


def tf_type_name(dtype):
    """TF's short name in messages: ``float`` for float32, ``double`` for float64."""
    base = as_dtype(dtype).base_dtype
    return {"float32": "float", "float64": "double", "float16": "half"}.get(base.name, base.name)


def first_value_outside(value, array, dtype):
    """The first element of ``array`` that an integer ``dtype`` cannot hold, or None when all fit.

    The one rule for constants and feeds: numpy would wrap such values silently (``2**40`` as int32
    is 0, -1 as uint8 is 255); TF refuses them. Floats count by value (3e9, inf and nan do not fit int32);
    non-integer dtypes and non-numeric arrays are left to the caller.

    Args:
        value: what the user gave; a Python scalar or list gets the element back as a Python number.
        array: ``np.asarray(value)`` (an object array holds Python ints too big for int64).
        dtype: the target :class:`DType`.
    Returns:
        the offending element (``int``/``float`` for Python input, a numpy scalar for numpy input), or None.
    """
    target = np.dtype(dtype.as_numpy_dtype)
    if target.kind not in "iu" or array.size == 0 or array.dtype.kind not in "iufO":
        return None
    info = np.iinfo(target)
    flat = array.reshape(-1)
    if array.dtype.kind == "O":
        found = [v for v in flat if isinstance(v, (builtins.int, np.integer)) and not info.min <= v <= info.max]
        return found[0] if found else None
    if array.dtype.kind != "f" and info.min <= builtins.int(flat.min()) and builtins.int(flat.max()) <= info.max:
        return None
    outside = (flat < info.min) | (flat > info.max)
    if array.dtype.kind == "f":
        outside |= ~np.isfinite(flat)
    outside = np.flatnonzero(outside)
    if not outside.size:
        return None
    first = flat[outside[0]]
    return first if isinstance(value, (np.ndarray, np.generic)) else first.item()


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from ..compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.dtypes", name)
