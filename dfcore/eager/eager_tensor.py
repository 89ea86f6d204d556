"""``EagerTensor``: a Tensor that holds its value, the result of an op run eagerly.

Source: ``tensorflow/python/framework/ops.py`` (``_EagerTensorBase``: ``numpy()``, ``device``, the
``<tf.Tensor: id=…, shape=…, dtype=…, numpy=…>`` repr and ``tf.Tensor(…, shape=…, dtype=…)`` str).
It subclasses :class:`~dfcore.framework.tensor.Tensor`, so the op constructors and the arithmetic
operators take it as they take a graph tensor. Unlike TF (where ``.op`` and ``.name`` raise), ``.op``
is the Operation that computed it, so ``optimizer.apply_gradients(...)`` code written for graphs runs
as is; that op forgets its inputs unless a ``GradientTape`` recorded it, so a long eager loop keeps no
history alive.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import backends
from ..framework import dtypes as dtypes_lib
from ..framework.tensor import Tensor
from ..framework.tensor_shape import TensorShape
from ..runtime.variable_store import VarRef


class _NoConsumers(list):
    """An eager tensor's consumer list: ops that take it are not remembered (no graph to walk)."""

    def append(self, item: Any) -> None:
        pass


_NO_CONSUMERS = _NoConsumers()


class EagerTensor(Tensor):
    """A concrete value with a dtype and the device whose kernel produced it.

    Attributes:
        dtype: a :class:`~dfcore.framework.dtypes.DType` (a ``*_ref`` dtype for a variable's handle).
        shape: the value's fully defined :class:`TensorShape`.
        device: the full name of the device the op ran on
            (``/job:localhost/replica:0/task:0/device:CPU:0``).
    """

    _is_eager = True

    def __init__(self, value: Any, dtype: dtypes_lib.DType, device: str, op: Any, value_index: int,
                 tensor_id: int, handle_shape: TensorShape | None = None) -> None:
        # no Tensor.__init__: the shape is the value's (a variable handle's: the variable's, given), and
        # there is no consumer list to fill
        self._value = value
        self._handle_shape = handle_shape
        self._dtype = dtype
        self._device = device
        self._op = op
        self._value_index = value_index
        self._id = tensor_id
        self._consumers = _NO_CONSUMERS

    # -- what a graph tensor has ------------------------------------------------------
    @property
    def graph(self):
        return self._op.graph

    @property
    def device(self) -> str:
        return self._device

    @property
    def shape(self) -> TensorShape:
        shape = self._handle_shape
        if shape is None:  # the value never changes: work its shape out once
            shape = self._handle_shape = TensorShape(np.shape(self._value))
        return shape

    def get_shape(self) -> TensorShape:
        return self.shape

    _shape = property(lambda self: self.shape)  # what Tensor's own methods read

    def set_shape(self, shape: Any) -> None:
        """Check ``shape`` against the value's (an eager tensor's shape is known).

        Raises:
            ValueError: the shapes are incompatible (TF's wording).
        """
        if not self.shape.is_compatible_with(shape):
            raise ValueError(f"Tensor's shape {self.shape} is not compatible with supplied shape {TensorShape(shape)}")

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    def eval(self, feed_dict=None, session=None):
        """The value (TF's ``Tensor.eval`` needs a session; an eager tensor already has its value)."""
        return self.numpy()

    # -- the value -------------------------------------------------------------------
    def _read(self) -> Any:
        value = self._value
        if isinstance(value, VarRef):  # a variable's handle: its current value
            value = value.state.value
        return value

    def numpy(self) -> np.ndarray | np.generic:
        """The value as a numpy array (a numpy scalar for shape ``()``), as TF's ``EagerTensor.numpy``."""
        array = np.asarray(backends.to_numpy(self._read()))
        return array[()] if array.ndim == 0 else array

    def __array__(self, dtype=None, copy=None):
        array = np.asarray(backends.to_numpy(self._read()))
        return array if dtype is None else array.astype(dtype)

    def _numpy_text(self, is_repr: bool) -> str:
        value = self.numpy()
        if self._dtype.base_dtype is dtypes_lib.string:
            text = repr(value) if is_repr else str(value)
        elif np.ndim(value) == 0:
            text = str(value)
        else:
            text = repr(value) if is_repr else str(value)
        return "\n" + text if "\n" in text else text

    def __repr__(self) -> str:
        return (f"<tf.Tensor: id={self._id}, shape={_shape_text(self.shape)}, dtype={self._dtype.name}, "
                f"numpy={self._numpy_text(True)}>")

    def __str__(self) -> str:
        return f"tf.Tensor({self._numpy_text(False)}, shape={_shape_text(self.shape)}, dtype={self._dtype.name})"

    # -- Python protocols TF's eager tensors support -------------------------------------
    def __bool__(self) -> bool:
        return bool(self.numpy())

    def __len__(self) -> int:
        shape = np.shape(self._read())
        if not shape:
            raise TypeError("Scalar tensor has no `len()`")
        return shape[0]

    def __float__(self) -> float:
        return float(self.numpy())

    def __int__(self) -> int:
        return int(self.numpy())

    def __index__(self) -> int:
        return int(self.numpy())

    def __format__(self, spec: str) -> str:
        return format(self.numpy(), spec) if spec else str(self)


def _shape_text(shape: TensorShape) -> str:
    """TF's eager repr writes the shape as a tuple: ``()``, ``(3,)``, ``(2, 3)``."""
    return str(tuple(shape.as_list()))
