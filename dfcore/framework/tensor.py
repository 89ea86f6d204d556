"""``Tensor``: a symbolic handle to one output of an Operation.

Source: ``tensorflow/python/framework/ops.py`` (class ``Tensor``). A tensor has no
value; its value exists only while a Session step runs. Its name is
``<op_name>:<output_index>``; its static shape may have unknown dimensions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import tensor_shape
from .default_session import default_session_for


class Tensor:
    """One output of an :class:`Operation`.

    Attributes:
        op: the producing Operation.
        value_index: the output index within ``op.outputs``.
        dtype: a :class:`~dfcore.framework.dtypes.DType`.
        shape: the static :class:`TensorShape` (possibly partial).
    """

    # Operators are installed by dfcore.ops.math_ops via _override_operator, as TF does; iteration (``unstack``)
    # by dfcore.ops.array_ops_join.
    __array_priority__ = 100
    # An EagerTensor (dfcore.eager) says True: it belongs to no graph, so ops take the default graph.
    _is_eager = False

    def __init__(self, op, value_index, dtype, shape):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = tensor_shape.as_shape(shape)
        self._consumers = []

    @property
    def op(self):
        return self._op

    @property
    def graph(self):
        return self._op.graph

    @property
    def value_index(self):
        return self._value_index

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return f"{self._op.name}:{self._value_index}"

    @property
    def device(self):
        return self._op.device

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    def set_shape(self, shape):
        """Merge ``shape`` into the static shape; raises ValueError if incompatible."""
        self._shape = self._shape.merge_with(shape)

    def consumers(self):
        return list(self._consumers)

    def eval(self, feed_dict=None, session=None):
        """The value of this tensor in ``session`` (default: the default session)."""
        return default_session_for(self, session, "eval()").run(self, feed_dict)

    def __repr__(self):
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __str__(self):
        return f'Tensor("{self.name}", shape={self._shape}, dtype={self._dtype.name})'

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __bool__(self):
        raise TypeError(
            "Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not None:` "
            "instead of `if t:` to test if a tensor is defined, and use TensorFlow ops such as "
            "tf.cond to execute subgraphs conditioned on the value of a tensor."
        )

    def __len__(self):
        raise TypeError(
            f"len is not well defined for symbolic Tensors. ({self.name}) Please call `x.shape` rather than `len(x)` "
            "for shape information."
        )

    @classmethod
    def _override_operator(cls, operator, func):
        setattr(cls, operator, func)

    if TYPE_CHECKING:
        # The operators ops/ installs at import (math_ops' arithmetic, logic and comparisons, array_ops_slice's
        # indexing), declared for the type checker.
        def __getitem__(self, key: Any) -> Tensor: ...
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __floordiv__(self, other: Any) -> Tensor: ...
        def __rfloordiv__(self, other: Any) -> Tensor: ...
        def __mod__(self, other: Any) -> Tensor: ...
        def __rmod__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __rmatmul__(self, other: Any) -> Tensor: ...
        def __and__(self, other: Any) -> Tensor: ...
        def __rand__(self, other: Any) -> Tensor: ...
        def __or__(self, other: Any) -> Tensor: ...
        def __ror__(self, other: Any) -> Tensor: ...
        def __xor__(self, other: Any) -> Tensor: ...
        def __rxor__(self, other: Any) -> Tensor: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __pos__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
