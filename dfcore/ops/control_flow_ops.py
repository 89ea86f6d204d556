"""Grouping and ordering ops: ``no_op``, ``group``, ``tuple``, ``with_dependencies``; ``Assert``.

Source: ``tensorflow/python/ops/control_flow_ops.py`` (and ``core/kernels/logging_ops.cc`` for
``Assert``'s message). ``group`` is a ``NoOp`` with control inputs, on its inputs' device when they
share one (``_GroupControlDeps``); ``tuple`` makes every output wait for all inputs.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.graph import _as_operation, graph_of
from ..framework.scopes import name_scope
from ..framework.tensor_conversion import convert_to_tensor
from . import common_shapes
from .op_util import apply_op

if TYPE_CHECKING:
    from ..framework.operation import Operation
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

registry.RegisterShape("NoOp")(common_shapes.no_outputs)
registry.RegisterArrayKernel("NoOp")(lambda op, backend: lambda: None)
registry.NotDifferentiable("NoOp")
registry.RegisterShape("Assert")(common_shapes.no_outputs)
registry.NotDifferentiable("Assert")
registry.mark_stateful("Assert")


def Assert(condition: TensorLike, data: Sequence[TensorLike], summarize: int | None = None,  # TF's name
           name: str | None = None) -> Operation:
    """The op raising ``InvalidArgumentError("assertion failed: [<data 0>] [<data 1>] …")`` when the bool
    scalar ``condition`` is False (at most ``summarize`` values of each tensor, default 3); run it with
    ``tf.control_dependencies``. Source: ``tensorflow/python/ops/control_flow_ops.py``."""
    with name_scope(name, "Assert", [condition]) as scope:
        condition = convert_to_tensor(condition, dtype=dtypes.bool, name="Condition")
        data = [convert_to_tensor(x) for x in data]
        return apply_op("Assert", [condition] + data, {"T": [x.dtype.base_dtype for x in data],
                                                       "summarize": 3 if summarize is None else int(summarize)},
                        scope)


@registry.RegisterKernel("Assert")
def _assert_kernel(op):
    summarize = op.get_attr("summarize")

    def compute(condition, *data):
        if np.ndim(condition) != 0:
            raise errors.InvalidArgumentError(None, None, f"In[0] should be a scalar: {list(np.shape(condition))}")
        if not bool(condition):
            raise errors.InvalidArgumentError(
                None, op, "assertion failed: " + " ".join(f"[{_summarize(d, summarize)}]" for d in data))

    return compute


def _summarize(value, summarize):
    """TF's ``Tensor::SummarizeValue``: the first ``summarize`` values, space separated, ``...`` if more."""
    flat = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in np.ravel(value)]
    text = " ".join(str(v) for v in flat[:summarize])
    return text + "..." if len(flat) > summarize else text


def no_op(name: str | None = None) -> Operation:
    """An op that does nothing; useful as a control-dependency anchor."""
    return apply_op("NoOp", [], {}, name or "NoOp")


def group(*inputs: Any, name: str | None = None) -> Operation:
    """A ``NoOp`` named ``name`` (default ``group_deps``) that runs after all ``inputs`` (Tensors or Operations,
    nested lists allowed). As TF 1.x: when every input requests the same device the ``NoOp`` requests it too;
    otherwise each device's inputs get a ``NoOp`` there (``<name>/NoOp``, ``<name>/NoOp_1``… by sorted device)
    and the returned ``NoOp`` waits for those. Source: ``control_flow_ops.group``, ``_GroupControlDeps``.

    Raises:
        ValueError: ``inputs`` come from different graphs.
    """
    ops = [_as_operation(x, strict=True) for x in _flatten(inputs) if x is not None]
    graph = graph_of(ops)
    with graph.as_default(), graph.name_scope(name or "group_deps") as scope:
        by_device: dict[Any, list[Any]] = {}
        for op in ops:
            by_device.setdefault(op.device, []).append(op)
        if len(by_device) == 1:
            ((device, deps),) = by_device.items()
            return _group_control_deps(graph, device, deps, scope)
        deps = [_group_control_deps(graph, device, by_device[device]) for device in sorted(by_device)]
        return _group_control_deps(graph, None, deps, scope)


def _group_control_deps(graph, device, deps, name=None):
    """A ``NoOp`` after ``deps``, requesting ``device`` (None: the caller's device scope)."""
    with graph.control_dependencies(deps):
        if device is None:
            return no_op(name=name)
        with graph.device(device):
            return no_op(name=name)


def _flatten(inputs):
    for x in inputs:
        if isinstance(x, (list, builtins.tuple)):
            yield from _flatten(x)
        else:
            yield x


def with_dependencies(dependencies: Sequence[Any], output_tensor: TensorLike, name: str | None = None) -> Tensor:
    """``output_tensor`` passed through an Identity that runs after ``dependencies``."""
    from . import array_ops

    graph = graph_of([output_tensor])
    with graph.as_default(), graph.name_scope(name or "control_dependency"), graph.control_dependencies(dependencies):
        return array_ops.identity(output_tensor, name="Identity")


def tuple(tensors: Sequence[TensorLike | None], name: str | None = None,
          control_inputs: Sequence[Any] | None = None) -> list[Tensor | None]:
    """Identities of ``tensors`` that are available only after all of them are computed."""
    tensors = list(tensors)
    live = [t for t in tensors if t is not None]
    graph = graph_of(live)
    with graph.as_default(), graph.name_scope(name or "tuple"):
        gate = group(*(live + list(control_inputs or [])))
        return [None if t is None else with_dependencies([gate], t) for t in tensors]

