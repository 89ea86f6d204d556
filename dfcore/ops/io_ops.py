"""``tf.matching_files``: the file names matching a glob pattern (op ``MatchingFiles``).

Source: ``tensorflow/python/ops/io_ops.py`` and ``core/kernels/matching_files_op.cc``: every match of
each pattern, sorted; no match gives an empty vector. dfcore matches with Python's ``glob`` (``*``,
``?``, ``[...]``), which, unlike TF, skips names starting with a dot unless the pattern names the dot.
"""

from __future__ import annotations

import glob
from typing import TYPE_CHECKING

import numpy as np

from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["matching_files"]

registry.RegisterShape("MatchingFiles")(lambda op: [(dtypes.string, TensorShape([None]))])
registry.NotDifferentiable("MatchingFiles")
registry.mark_stateful("MatchingFiles")  # reads the file system: never folded or cached


def matching_files(pattern: TensorLike, name: str | None = None) -> Tensor:
    """A string vector ``[?]``: the sorted file names matching ``pattern`` (a string scalar or vector)."""
    return apply_op1("MatchingFiles", [pattern], {}, name or "MatchingFiles", dtype=dtypes.string)


@registry.RegisterKernel("MatchingFiles")
def _matching_files_kernel(op):
    def compute(pattern):
        names = sorted({path for p in np.ravel(np.asarray(pattern, dtype=object))
                        for path in glob.glob(p.decode("utf-8") if isinstance(p, bytes) else str(p))})
        array = np.empty(len(names), dtype=object)
        array[:] = names
        return array

    return compute
