"""An op's attributes as TF's ``AttrValue`` messages, and back.

Source: ``tensorflow/core/framework/attr_value.proto`` and ``python/framework/ops.py``
(``Operation.get_attr``). dfcore keeps attrs as Python values on its ops (``str``, ``int``, ``float``,
``bool``, :class:`~dfcore.framework.dtypes.DType`, :class:`~dfcore.framework.tensor_shape.TensorShape`,
numpy arrays, and lists of those); a NodeDef carries them as AttrValues: strings as bytes, dtypes as
``DataType`` enums, shapes as ``TensorShapeProto``, arrays as ``TensorProto`` (``tensorboard``'s
``make_tensor_proto``/``make_ndarray``). Floats travel as float32, as in TF.
"""

import numpy as np
from tensorboard.util import tensor_util

from . import dtypes
from .protos import AttrValue, TensorShapeProto
from .tensor_shape import TensorShape

_LIST_FIELDS = ("s", "i", "f", "b", "type", "shape", "tensor")


def to_attr_value(value) -> AttrValue:
    """The AttrValue holding ``value``.

    Raises:
        TypeError: ``value`` is of a kind no AttrValue field holds (naming its type).
    """
    if isinstance(value, (list, tuple)):
        attr = AttrValue(list=AttrValue.ListValue())
        for item in value:
            field, encoded = _field(item)
            getattr(attr.list, field).extend([encoded])
        return attr
    field, encoded = _field(value)
    return AttrValue(**{field: encoded})


def from_attr_value(attr: AttrValue):
    """The Python value of ``attr`` (strings decoded as UTF-8 where they are text)."""
    kind = attr.WhichOneof("value")
    if kind == "list":
        for field in _LIST_FIELDS:
            items = getattr(attr.list, field)
            if len(items):
                return [_decode(field, item) for item in items]
        return []
    if kind is None:
        return None
    return _decode(kind, getattr(attr, kind))


def shape_proto(shape: TensorShape) -> TensorShapeProto:
    """``TensorShapeProto`` of ``shape``: unknown rank sets ``unknown_rank``; an unknown dim is ``size: -1``."""
    dims = shape.as_tuple()
    if dims is None:
        return TensorShapeProto(unknown_rank=True)
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=-1 if d is None else d) for d in dims])


def shape_from_proto(proto: TensorShapeProto) -> TensorShape:
    """The :class:`TensorShape` of a ``TensorShapeProto``."""
    if proto.unknown_rank:
        return TensorShape(None)
    return TensorShape([None if d.size < 0 else d.size for d in proto.dim])


def _field(value):
    """``(AttrValue field, encoded value)`` for one scalar attr value."""
    if isinstance(value, bool) or isinstance(value, np.bool_):
        return "b", bool(value)
    if isinstance(value, (int, np.integer)):
        return "i", _as_int64(int(value))
    if isinstance(value, (float, np.floating)):
        return "f", float(value)
    if isinstance(value, str):
        return "s", value.encode("utf-8")
    if isinstance(value, bytes):
        return "s", value
    if isinstance(value, dtypes.DType):
        return "type", value.as_datatype_enum
    if isinstance(value, TensorShape):
        return "shape", shape_proto(value)
    if isinstance(value, np.ndarray):
        return "tensor", tensor_util.make_tensor_proto(value)
    raise TypeError(f"An attr value of type {type(value).__name__} ({value!r}) has no AttrValue field")


def _as_int64(value):
    """A uint64 (a device incarnation) as its int64 bit pattern, as ``graph_partition.cc``'s
    ``static_cast<int64>`` stores ``send_device_incarnation``."""
    return value - 2 ** 64 if 2 ** 63 <= value < 2 ** 64 else value


def _decode(field, item):
    if field == "s":
        try:
            return item.decode("utf-8")
        except UnicodeDecodeError:
            return item
    if field == "type":
        return dtypes.as_dtype(item)
    if field == "shape":
        return shape_from_proto(item)
    if field == "tensor":
        return tensor_util.make_ndarray(item)
    return item
