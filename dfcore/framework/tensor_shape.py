"""Static shapes with unknown dimensions, as TF1's ``TensorShape`` and ``Dimension``.

Source: ``tensorflow/python/framework/tensor_shape.py``. A dimension is an int
or ``None`` (unknown); a shape may also have unknown rank (``dims is None``).
"""


class Dimension:
    """One dimension of a static shape; ``value`` is an int or None (unknown)."""

    __slots__ = ("_value",)

    def __init__(self, value):
        if isinstance(value, Dimension):
            value = value.value
        if value is not None:
            value = int(value)
            if value < 0:
                raise ValueError(f"Dimension {value} must be >= 0")
        self._value = value

    @property
    def value(self):
        return self._value

    def __int__(self):
        if self._value is None:
            raise TypeError("Cannot convert an unknown Dimension to an int")
        return self._value

    __index__ = __int__

    def is_compatible_with(self, other):
        other = as_dimension(other)
        return self._value is None or other.value is None or self._value == other.value

    def merge_with(self, other):
        other = as_dimension(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {other} are not compatible")
        return Dimension(self._value if self._value is not None else other.value)

    def _binary(self, other, fn):
        other = as_dimension(other)
        if self._value is None or other.value is None:
            return Dimension(None)
        return Dimension(fn(self._value, other.value))

    def __add__(self, other):
        return self._binary(other, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, other):
        return self._binary(other, lambda a, b: a - b)

    def __mul__(self, other):
        return self._binary(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        return self._binary(other, lambda a, b: a // b)

    def __eq__(self, other):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other.value is None:
            return None
        return self._value == other.value

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is None or eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self._value)

    def __repr__(self):
        return f"Dimension({self._value})"

    def __str__(self):
        return "?" if self._value is None else str(self._value)


def as_dimension(value):
    return value if isinstance(value, Dimension) else Dimension(value)


class TensorShape:
    """A possibly partial static shape.

    ``TensorShape(None)`` has unknown rank; ``TensorShape([None, 784])`` has rank 2
    with an unknown batch dimension. Indexing returns a :class:`Dimension` (TF1).
    """

    __slots__ = ("_dims",)

    def __init__(self, dims):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        else:
            try:
                items = list(dims)
            except TypeError:
                items = [dims]
            self._dims = tuple(as_dimension(d).value for d in items)

    @property
    def dims(self):
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def as_tuple(self):
        """The dims as a tuple of ints/None, or None for unknown rank (dfcore helper)."""
        return self._dims

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        assert self._dims is not None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other):
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other):
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def concatenate(self, other):
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def with_rank(self, rank):
        if self._dims is None:
            return TensorShape([None] * rank)
        if len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def with_rank_at_least(self, rank):
        """This shape, checked to have at least ``rank`` dimensions (unknown rank passes).

        Raises:
            ValueError: fewer dimensions (TF's wording).
        """
        if self._dims is not None and len(self._dims) < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of Shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(Dimension(d) for d in self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return TensorShape(None) if isinstance(key, slice) else Dimension(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except TypeError:
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self._dims)

    def __bool__(self):
        return self._dims is not None

    def __repr__(self):
        if self._dims is None:
            return "TensorShape(None)"
        return f"TensorShape([{', '.join(repr(Dimension(d)) for d in self._dims)}])"

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return f"({Dimension(self._dims[0])},)"
        return "(" + ", ".join(str(Dimension(d)) for d in self._dims) + ")"

    def tf_str(self):
        """TF's bracket form used in op error messages: ``[2,3]``, ``[?,784]``, ``?``."""
        if self._dims is None:
            return "?"
        return "[" + ",".join("?" if d is None else str(d) for d in self._dims) + "]"


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(rank=None):
    return TensorShape(None if rank is None else [None] * rank)


def scalar():
    return TensorShape([])
