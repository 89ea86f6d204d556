"""Parsing ``tf.train.Example`` records: ``FixedLenFeature``, ``parse_example``, ``parse_single_example``.

Source: ``tensorflow/python/ops/parsing_ops.py`` (API, checks) and ``core/ops/parsing_ops.cc`` /
``core/util/example_proto_fast_parsing.cc`` (op types ``ParseExample`` and ``ParseSingleExample``,
their attrs and error messages). A feature's list kind must match its dtype: ``bytes_list`` for
``tf.string`` (values come back as ``bytes``), ``float_list`` for ``tf.float32``, ``int64_list`` for
``tf.int64``; it must hold exactly as many values as its shape has elements. A missing feature takes its
``default_value``, or is an error without one. dfcore has no ``SparseTensor``, so ``VarLenFeature``
(and TF's sparse outputs of these ops, ``Nsparse``/``num_sparse`` = 0 here) is not offered.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from google.protobuf.message import DecodeError

from .. import errors
from ..framework import dtypes, registry
from ..framework.protos import Example
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from .op_util import apply_op

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["FixedLenFeature", "parse_example", "parse_single_example"]

_KINDS = {dtypes.string: "bytes_list", dtypes.float32: "float_list", dtypes.int64: "int64_list"}


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature of fixed ``shape`` and ``dtype`` (``tf.float32``, ``tf.int64`` or ``tf.string``) to parse;
    ``default_value`` (anything reshapeable to ``shape``) stands in when a record lacks it (None: required)."""

    __slots__ = ()

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


def _dense_config(features):
    """``(keys, dtypes, shapes, defaults)`` of ``features``, sorted by key as TF does.

    Raises:
        ValueError: no features, a feature that is not a FixedLenFeature, or a shape not fully defined;
        TypeError: a dtype other than float32, int64 or string (TF's wording).
    """
    if not features:
        raise ValueError("Missing: features was empty.")
    keys, types, shapes, defaults = [], [], [], []
    for key in sorted(features):
        feature = features[key]
        if not isinstance(feature, FixedLenFeature):
            raise ValueError(f"Invalid feature {key}:{feature}. dfcore parses FixedLenFeature only (no "
                             "SparseTensor, so no VarLenFeature).")
        dtype = dtypes.as_dtype(feature.dtype).base_dtype
        if dtype not in _KINDS:
            raise TypeError(f"Value passed to parameter 'dense_defaults' has DataType {dtype.name} not in list of "
                            "allowed values: float32, int64, string")
        shape = TensorShape(feature.shape)
        if not shape.is_fully_defined():
            raise ValueError(f"Missing shape for feature {key}.")
        if feature.default_value is None:
            default = convert_to_tensor(np.zeros([0], dtype=dtype.as_numpy_dtype), dtype=dtype)
        else:
            value = np.asarray(feature.default_value, dtype=dtype.as_numpy_dtype)
            default = convert_to_tensor(value.reshape(shape.as_list()), dtype=dtype, name=f"key_{key}")
        keys.append(key)
        types.append(dtype)
        shapes.append(shape)
        defaults.append(default)
    return keys, types, shapes, defaults


def parse_example(serialized: TensorLike, features: Mapping[str, Any], name: str | None = None,
                  example_names: TensorLike = None) -> dict[str, Tensor]:
    """Parse a 1-D batch of serialized ``Example`` protos (op ``ParseExample``).

    Args:
        serialized: a string vector ``[batch]`` of serialized ``tf.train.Example`` messages.
        features: a dict ``{key: FixedLenFeature}``.
        example_names: an optional string vector ``[batch]`` naming the records in error messages.
    Returns:
        ``{key: Tensor}``, each ``[batch] + shape`` of the feature's dtype.
    Raises:
        InvalidArgumentError (when run): a record that does not parse, a missing required feature, a list of the
            wrong kind or length (TF's wording).
    """
    keys, types, shapes, defaults = _dense_config(features)
    with name_scope(name, "ParseExample", [serialized]) as scope:
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        names = convert_to_tensor(example_names if example_names is not None else np.zeros([0], dtype=object),
                                  dtype=dtypes.string, name="names")
        dense_keys = [convert_to_tensor(k, dtype=dtypes.string, name=f"dense_keys_{i}") for i, k in enumerate(keys)]
        op = apply_op("ParseExample", [serialized, names] + dense_keys + defaults,
                      {"Nsparse": 0, "Ndense": len(keys), "sparse_types": [], "Tdense": types,
                       "dense_shapes": shapes}, scope)
    return dict(zip(keys, op.outputs))


def parse_single_example(serialized: TensorLike, features: Mapping[str, Any], name: str | None = None,
                         example_names: TensorLike = None) -> dict[str, Tensor]:
    """Parse one serialized ``Example`` proto (op ``ParseSingleExample``); usable in ``Dataset.map``.

    Args:
        serialized: a string scalar, one serialized ``tf.train.Example``.
        features: a dict ``{key: FixedLenFeature}``.
        example_names: unused, as in TF 1.x's single-example path.
    Returns:
        ``{key: Tensor}`` of the features' shapes and dtypes.
    Raises:
        InvalidArgumentError (when run): as :func:`parse_example`.
    """
    del example_names
    keys, types, shapes, defaults = _dense_config(features)
    with name_scope(name, "ParseSingleExample", [serialized]) as scope:
        serialized = convert_to_tensor(serialized, dtype=dtypes.string, name="serialized")
        op = apply_op("ParseSingleExample", [serialized] + defaults,
                      {"num_sparse": 0, "sparse_keys": [], "dense_keys": keys, "sparse_types": [], "Tdense": types,
                       "dense_shapes": shapes}, scope)
    return dict(zip(keys, op.outputs))


# -- shapes and kernels -----------------------------------------------------------------
registry.NotDifferentiable("ParseExample")
registry.NotDifferentiable("ParseSingleExample")


@registry.RegisterShape("ParseExample")
def _parse_example_shape(op):
    batch = op.inputs[0].shape.with_rank_at_least(1)[:1]
    if op.inputs[0].shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {op.inputs[0].shape.ndims} for '{op.name}' "
                         "(op: 'ParseExample')")
    return [(t, batch.concatenate(s)) for t, s in zip(op.get_attr("Tdense"), op.get_attr("dense_shapes"))]


@registry.RegisterShape("ParseSingleExample")
def _parse_single_example_shape(op):
    if op.inputs[0].shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {op.inputs[0].shape.ndims} for '{op.name}' "
                         "(op: 'ParseSingleExample')")
    return list(zip(op.get_attr("Tdense"), op.get_attr("dense_shapes")))


def _as_bytes(record):
    return record.encode("utf-8") if isinstance(record, str) else bytes(record)


def _parse_record(record, keys, types, shapes, defaults, prefix):
    """The dense values of one serialized Example; ``prefix`` starts error messages (``"Name: <n>, "``)."""
    try:
        example = Example.FromString(_as_bytes(record))
    except DecodeError:
        raise errors.InvalidArgumentError(None, None, f"Could not parse example input, value: '{record!r}'") from None
    values = []
    for key, dtype, shape, default in zip(keys, types, shapes, defaults):
        type_name = dtypes.tf_type_name(dtype)
        feature = example.features.feature.get(key)
        kind = feature.WhichOneof("kind") if feature is not None else None
        if kind is None:
            if default.size == 0 and shape.num_elements() != 0:
                raise errors.InvalidArgumentError(
                    None, None, f"{prefix}Feature: {key} (data type: {type_name}) is required but could not be found.")
            values.append(np.asarray(default).reshape(shape.as_list()))
            continue
        if kind != _KINDS[dtype]:
            raise errors.InvalidArgumentError(
                None, None, f"{prefix}Feature: {key}.  Data types don't match. Expected type: {type_name}")
        items = list(getattr(feature, kind).value)
        if len(items) != shape.num_elements():
            raise errors.InvalidArgumentError(
                None, None, f"{prefix}Key: {key}, Index: 0.  Number of {type_name} values != expected.  Values "
                f"size: {len(items)} but output shape: {shape.tf_str()}")
        array = np.empty(len(items), dtype=object) if dtype == dtypes.string else None
        if array is not None:
            array[:] = items
        else:
            array = np.asarray(items, dtype=dtype.as_numpy_dtype)
        values.append(array.reshape(shape.as_list()))
    return values


def _config(op, keys):
    return keys, op.get_attr("Tdense"), op.get_attr("dense_shapes")


def _outputs(values):
    """The kernel's result: the array itself for one output (the executor's convention), else a tuple."""
    return values[0] if len(values) == 1 else tuple(values)


def _text(value):
    value = np.asarray(value, dtype=object).item()
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


@registry.RegisterKernel("ParseExample")
def _parse_example_kernel(op):
    ndense = op.get_attr("Ndense")

    def compute(serialized, names, *rest):
        keys, defaults = [_text(k) for k in rest[:ndense]], [np.asarray(d) for d in rest[ndense:]]
        keys, types, shapes = _config(op, keys)
        serialized, names = np.asarray(serialized, dtype=object).reshape(-1), np.asarray(names, dtype=object)
        rows = [_parse_record(record, keys, types, shapes, defaults,
                              f"Name: {names[i] if names.size else '<unknown>'}, ")
                for i, record in enumerate(serialized)]
        return _outputs([np.stack([row[d] for row in rows]) if rows else
                         np.zeros([0] + shapes[d].as_list(), dtype=types[d].as_numpy_dtype) for d in range(ndense)])

    return compute


@registry.RegisterKernel("ParseSingleExample")
def _parse_single_example_kernel(op):
    keys, types, shapes = _config(op, op.get_attr("dense_keys"))

    def compute(serialized, *defaults):
        return _outputs(_parse_record(np.asarray(serialized, dtype=object).item(), keys, types, shapes,
                                      [np.asarray(d) for d in defaults], ""))

    return compute
