"""Grouping and ordering ops: ``no_op``, ``group``, ``tuple``, ``with_dependencies``; and ``Assert``.

Source: ``tensorflow/python/ops/control_flow_ops.py``. ``group`` is a ``NoOp``
with control inputs, on its inputs' device when they share one (``_GroupControlDeps``);
``tuple`` makes every output wait for all inputs.
"""

import builtins

import numpy as np

from .. import errors
from ..framework import registry
from ..framework.graph import _as_operation
from . import common_shapes
from .op_util import graph_of

registry.RegisterShape("NoOp")(common_shapes.no_outputs)
registry.RegisterKernel("NoOp")(lambda op: lambda: None)
registry.NotDifferentiable("NoOp")


def no_op(name=None):
    """An op that does nothing; useful as a control-dependency anchor."""
    from ..framework import graph as graph_lib

    return graph_lib.get_default_graph().create_op("NoOp", [], {}, name or "NoOp")


def group(*inputs, name=None):
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
        by_device = {}
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


def with_dependencies(dependencies, output_tensor, name=None):
    """``output_tensor`` passed through an Identity that runs after ``dependencies``."""
    from . import array_ops

    graph = graph_of([output_tensor])
    with graph.as_default(), graph.name_scope(name or "control_dependency"), graph.control_dependencies(dependencies):
        return array_ops.identity(output_tensor, name="Identity")


def tuple(tensors, name=None, control_inputs=None):
    """Identities of ``tensors`` that are available only after all of them are computed."""
    tensors = list(tensors)
    live = [t for t in tensors if t is not None]
    graph = graph_of(live)
    with graph.as_default(), graph.name_scope(name or "tuple"):
        gate = group(*(live + list(control_inputs or [])))
        return [None if t is None else with_dependencies([gate], t) for t in tensors]


registry.RegisterShape("Assert")(common_shapes.no_outputs)
registry.mark_stateful("Assert")
registry.NotDifferentiable("Assert")


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TF's name
    """An op that fails the step when ``condition`` (a bool scalar) is false, printing ``data``.

    Args:
        data: a list of tensors (or strings, numbers) printed in the message, each as ``[v0 v1 ...]`` with at most
            ``summarize`` (default 3) elements.
    Returns:
        The ``Assert`` Operation (run it, or make other ops depend on it).
    Raises:
        InvalidArgumentError: (when run) ``assertion failed: [<data 0>] [<data 1>] ...`` (TF's ``AssertOp`` format).
    Source: ``control_flow_ops.Assert`` and ``core/kernels/logging_ops.cc``.
    """
    from ..framework import graph as graph_lib
    from ..framework.tensor_conversion import convert_to_tensor

    graph = graph_of([condition] + [d for d in data if hasattr(d, "graph")])
    with graph.as_default(), graph.name_scope(name or "Assert"):
        inputs = [convert_to_tensor(condition)] + [convert_to_tensor(d) for d in data]
        attrs = {"summarize": 3 if summarize is None else int(summarize)}
        return graph_lib.get_default_graph().create_op("Assert", inputs, attrs, "Assert")


@registry.RegisterKernel("Assert")
def _assert_kernel(op):
    summarize = op.get_attr("summarize")

    def compute(condition, *data):
        if not bool(condition):
            message = " ".join(f"[{_summarize(value, summarize)}]" for value in data)
            raise errors.InvalidArgumentError(None, op, f"assertion failed: {message}")

    return compute


def _summarize(value, limit):
    flat = np.asarray(value).ravel()
    items = [v.decode() if isinstance(v, bytes) else str(v) for v in flat[:limit].tolist()]
    return " ".join(items) + ("..." if flat.size > limit else "")
