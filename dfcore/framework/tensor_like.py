"""``TensorLike``: the type of an argument an op converts with ``convert_to_tensor``, and ``DTypeLike``: what
``as_dtype`` takes; for annotations.

``convert_to_tensor`` takes a Tensor, a numpy array or scalar, a Python number, bool, string or nested list,
and any type with a registered conversion function (a ``Variable``, a ``PartitionedVariable``): an open set,
so ``TensorLike`` names the intent for the reader and is ``Any`` for the type checker (an op's body uses
its argument through the operators and attributes the conversion gives it).

Source: TF's ``tensorflow/python/types/core.py`` (``TensorLike``) and ``dtypes.py`` (``DTypeLike``).
"""

from typing import Any, TypeAlias

import numpy as np

from .dtypes import DType

TensorLike: TypeAlias = Any
DTypeLike: TypeAlias = DType | np.dtype | type | str
