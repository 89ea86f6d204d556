"""``SaveV2``: the graph op that writes a checkpoint, and the one function that writes checkpoint files.

Source: ``tensorflow/core/ops/io_ops.cc`` (``SaveV2``: inputs ``prefix`` (string scalar), ``tensor_names``
and ``shape_and_slices`` (string vectors), ``tensors`` (a list, attr ``dtypes``); no outputs) and
``python/training/saver.py`` (a Saver's save tensor is ``save/control_dependency:0``: its filename tensor
behind a control edge from ``SaveV2``). dfcore's kernel writes dfcore's ``<prefix>.npz`` checkpoint
(:mod:`dfcore.train.checkpoint_format`), atomically, as :meth:`~dfcore.train.saver.Saver.save` does; it
updates no ``checkpoint`` state file (nor does TF's op). Only whole tensors are saved: a non-empty
shape-and-slice raises ``UnimplementedError``.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import errors
from ..framework import registry
from ..framework.graph import get_default_graph
from ..framework.operation import Operation
from ..framework.tensor import Tensor
from ..ops import common_shapes
from ..ops.constant_op import constant
from ..ops.op_util import apply_op
from . import checkpoint_format, file_io

registry.RegisterShape("SaveV2")(common_shapes.no_outputs)
registry.mark_stateful("SaveV2")
registry.NotDifferentiable("SaveV2")


def write_checkpoint(prefix: str, values: Mapping[str, np.ndarray]) -> None:
    """Write ``{key: array}`` to ``<prefix>.npz`` atomically (a reader sees the old file or the new one).

    Raises:
        PermissionDeniedError, ResourceExhaustedError, ...: the file cannot be written (nothing changed).
    """
    file_io.atomic_write(prefix + checkpoint_format.SUFFIX, lambda f: checkpoint_format.write_tensors(f, values))


def save_v2(prefix: Tensor, tensor_names: Sequence[str], tensors: Sequence[Tensor], name: str = "SaveV2") -> Operation:
    """A ``SaveV2`` op saving ``tensors`` (any dtypes) under ``tensor_names`` to the checkpoint ``prefix``
    (a string scalar Tensor); whole tensors only (``shape_and_slices`` all empty, as TF's Saver writes them).

    Raises:
        ValueError: ``tensor_names`` and ``tensors`` differ in length.
    """
    if len(tensor_names) != len(tensors):
        raise ValueError(f"SaveV2 got {len(tensor_names)} tensor names for {len(tensors)} tensors")
    graph = get_default_graph()
    with graph.name_scope(name) as scope:
        names = constant(list(tensor_names), name="tensor_names")
        slices = constant([""] * len(tensor_names), name="shape_and_slices")
        return apply_op("SaveV2", [prefix, names, slices, *tensors],
                        {"dtypes": [t.dtype.base_dtype for t in tensors]}, name=scope)


@registry.RegisterKernel("SaveV2")
def _save_v2_kernel(op):
    def compute(prefix, tensor_names, shape_and_slices, *tensors):
        if any(as_str(s) for s in np.ravel(shape_and_slices)):
            raise errors.UnimplementedError(None, op, "dfcore's SaveV2 saves whole tensors only; got shape_and_slices "
                                                    f"{[as_str(s) for s in np.ravel(shape_and_slices)]}")
        write_checkpoint(as_str(prefix), {as_str(k): v for k, v in zip(np.ravel(tensor_names), tensors)})

    return compute


def as_str(value: Any) -> str:
    """A string tensor element (``str``, ``bytes`` or a 0-d object array) as ``str``."""
    value = value.item() if isinstance(value, np.ndarray) else value
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
