"""The global step: an int64 scalar variable ``global_step`` counting training steps.

Source: ``tensorflow/python/training/training_util.py``. The variable is
non-trainable, in the ``GLOBAL_VARIABLES`` and ``GLOBAL_STEP`` collections,
initialized to 0; optimizers increment it when passed as ``global_step``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..framework import dtypes
from ..framework.graph import GraphKeys, get_default_graph
from ..framework.tensor import Tensor
from ..ops import array_ops, variables

if TYPE_CHECKING:
    from ..framework.graph import Graph
    from ..framework.tensor_like import TensorLike
    from ..ops.variables import Variable
    from ..runtime.session import Session


def global_step(sess: Session, global_step_tensor: TensorLike) -> int:
    """The current value of ``global_step_tensor`` in ``sess``, as a Python int."""
    return int(sess.run(global_step_tensor))


def get_global_step(graph: Graph | None = None) -> Variable | Tensor | None:
    """The global step of ``graph`` (default graph): the only member of the ``GLOBAL_STEP``
    collection, else the tensor ``global_step:0``, else None.

    Raises:
        TypeError: the found global step is not an integer scalar Variable or Tensor (TF's wording).
    """
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) == 1:
        step = found[0]
    elif not found:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    else:
        logging.getLogger(__name__).error("Multiple tensors in global_step collection.")
        return None
    assert_global_step(step)
    return step


def create_global_step(graph: Graph | None = None) -> Variable:
    """Create the global step variable of ``graph`` (named ``global_step``, at the root name scope).

    Raises:
        ValueError: the graph already has one ('"global_step" already exists.').
    """
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(""):
        return variables.Variable(lambda: array_ops.zeros([], dtypes.int64, name="zeros"), trainable=False,
                                  name=GraphKeys.GLOBAL_STEP,
                                  collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph: Graph | None = None) -> Variable | Tensor:
    """The global step of ``graph``, created if it has none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


def assert_global_step(global_step_tensor: Any) -> None:
    """Raise TypeError unless ``global_step_tensor`` is an integer scalar Variable or Tensor (TF's wording)."""
    if not isinstance(global_step_tensor, (variables.Variable, Tensor)):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: {global_step_tensor}.')
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: {global_step_tensor.dtype}')
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')


GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


def _get_or_create_global_step_read(graph=None):
    """A ``global_step + 0`` copy of the global step (one per graph, in ``GLOBAL_STEP_READ_KEY``), or None if
    the graph has no global step. It is computed early in a step, so it holds the value from before the step's
    increment, where a fetch of the variable itself may see the increment (TF's hooks call it stale)."""
    graph = graph or get_default_graph()
    cached = graph.get_collection(GLOBAL_STEP_READ_KEY)
    if cached:
        return cached[0]
    step: Any = get_global_step(graph)  # its operators are registered by ops/, unseen by mypy
    if step is None:
        return None
    with graph.as_default(), graph.name_scope(None), graph.name_scope(step.op.name + "/"):
        read = step + 0
    graph.add_to_collection(GLOBAL_STEP_READ_KEY, read)
    return read
