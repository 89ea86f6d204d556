"""The dtypes each math op accepts, checked when the op is built.

Source: the ``T: {...}`` type constraints of ``core/ops/math_ops.cc`` and the
check in ``op_def_library.py``, with TF's wording and TF's order of type names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..framework import dtypes

if TYPE_CHECKING:
    from ..framework.dtypes import DType
    from ..framework.operation import Operation

FLOAT = (dtypes.float16, dtypes.float32, dtypes.float64)
REAL = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8,
        dtypes.int64, dtypes.float16)
SIGNED = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
BOOL = (dtypes.bool,)
INDEX = (dtypes.int32, dtypes.int64)


def check_input(op: Operation, index: int, allowed: Sequence[DType], param: str) -> DType:
    """Raise TF's TypeError if input ``index`` of ``op`` has a dtype outside ``allowed``.

    Raises:
        TypeError: ``Value passed to parameter 'x' has DataType bool not in list of allowed values: ...``.
    """
    dtype = op.inputs[index].dtype.base_dtype
    if dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise TypeError(
            f"Value passed to parameter '{param}' has DataType {dtype.name} not in list of allowed values: {names}"
        )
    return dtype
