"""Flatten the ``fetches`` of ``Session.run`` and rebuild results in the same structure.

Source: TF's ``session.py`` (``_FetchMapper``, ``_FetchHandler``). Fetches may
nest lists, tuples, namedtuples and dicts; leaves are Tensors, Operations,
names (``"x:0"``, ``"train_op"``) or objects with ``_as_graph_element``
(Variables). An Operation fetches ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..framework.graph import Graph
from ..framework.operation import Operation
from ..framework.tensor import Tensor


class FetchHandler:
    """Collects the unique tensors and target ops of a fetch structure.

    Raises:
        TypeError: a leaf of an unsupported type (TF's wording).
        ValueError: a leaf that is not an element of ``graph`` or does not exist.
    """

    def __init__(self, graph: Graph, fetches: Any) -> None:
        self._graph = graph
        self.tensors: list[Tensor] = []
        self.targets: list[Operation] = []
        self._index: dict[Tensor, int] = {}
        self._structure = self._map(fetches)

    def _map(self, fetch):
        if isinstance(fetch, dict):
            return ("dict", type(fetch), [(k, self._map(v)) for k, v in fetch.items()])
        if isinstance(fetch, tuple) and hasattr(fetch, "_fields"):
            return ("namedtuple", type(fetch), [self._map(v) for v in fetch])
        if isinstance(fetch, (list, tuple)):
            return ("seq", type(fetch), [self._map(v) for v in fetch])
        return ("leaf", self._leaf(fetch))

    def _leaf(self, fetch):
        if fetch is None:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)!r}")
        try:
            element = self._graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except TypeError as error:
            raise TypeError(
                f"Fetch argument {fetch!r} has invalid type {type(fetch)!r}, must be a string or Tensor. ({error})"
            ) from None
        except (ValueError, KeyError) as error:
            message = error.args[0] if error.args else str(error)
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({message})") from None
        if isinstance(element, Operation):
            if element not in self.targets:
                self.targets.append(element)
            return None
        assert isinstance(element, Tensor)
        if element not in self._index:
            self._index[element] = len(self.tensors)
            self.tensors.append(element)
        return self._index[element]

    def build(self, values: Sequence[Any]) -> Any:
        """Rebuild the fetch structure from ``values`` (aligned with :attr:`tensors`)."""
        return _build(self._structure, values)


def _build(node, values):
    kind = node[0]
    if kind == "leaf":
        return None if node[1] is None else values[node[1]]
    _, container, children = node
    if kind == "dict":
        return container((k, _build(v, values)) for k, v in children)
    items = [_build(child, values) for child in children]
    if kind == "namedtuple":
        return container(*items)
    return container(items)
