"""``Tensor``: a symbolic handle to one output of an Operation.

Source: ``tensorflow/python/framework/ops.py`` (class ``Tensor``). A tensor has no
value; its value exists only while a Session step runs. Its name is
``<op_name>:<output_index>``; its static shape may have unknown dimensions.
"""

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
