"""``tf.map_fn``, ``tf.scan``, ``tf.foldl`` and ``tf.foldr`` as ``while_loop`` s.

Source: ``tensorflow/python/ops/functional_ops.py`` and ``map_fn.py`` (TF 1.x signatures and
name scopes ``map``, ``scan``, ``foldl``, ``foldr``). TF reads the elements and collects the
results with ``TensorArray`` s; dfcore has none, so element ``i`` is ``gather(elems, i)`` and
results grow by ``concat`` along axis 0 (a loop variable whose shape changes, declared with a
shape invariant). Every op involved has a gradient, so all four differentiate through
:mod:`dfcore.ops.while_grad`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..framework import nest
from ..framework.graph import graph_of
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import array_ops, array_ops_gather, array_ops_join, array_ops_layout
from .control_flow_while import while_loop

__all__ = ["map_fn", "scan", "foldl", "foldr"]


def _elements(elems):
    flat = [convert_to_tensor(e, name="elem") for e in nest.flatten(elems)]
    if not flat:
        raise ValueError("elems must not be empty")
    for e in flat:
        if e.shape.ndims == 0:
            raise ValueError("Elements in elems must be 1+ dimensional Tensors, not scalars")
    n_static = flat[0].shape.as_tuple()[0] if flat[0].shape.ndims is not None else None
    return flat, array_ops.shape(flat[0])[0], n_static


def _element(elems, flat, i):
    return nest.pack_sequence_as(elems, [array_ops_gather.gather(e, i) for e in flat])


def append_row(acc, value):
    """``acc`` (a stack of rows, possibly empty and shapeless) with ``value`` as its last row."""
    rows = array_ops.reshape(acc, array_ops_join.concat([[-1], array_ops.shape(value)], 0))
    return array_ops_join.concat([rows, array_ops_layout.expand_dims(value, 0)], 0)


def _empty(dtype):
    return array_ops.zeros([0], dtype=dtype)


def _stacked_loop(step, first, elems, flat, start, stop, state, out_dtypes, parallel_iterations, back_prop,
                  swap_memory):
    """Run ``state, out = step(state, element)`` for i in [start, stop) and stack the outs; returns
    (final state, stacked outs as a flat list, the outs' static shapes)."""
    shapes: list[Any] = []
    flat_state = nest.flatten(state)

    def body(i, carried, accs):
        new_state, out = step(nest.pack_sequence_as(state, carried), _element(elems, flat, i))
        out_flat = [convert_to_tensor(o) for o in nest.flatten(out)]
        if len(out_flat) != len(accs):
            raise ValueError(f"The function returned {len(out_flat)} values where {len(accs)} were expected "
                             f"(dtype structure: {out_dtypes})")
        shapes[:] = [o.shape for o in out_flat]
        return i + 1, nest.flatten(new_state), [append_row(a, o) for a, o in zip(accs, out_flat)]

    accs = [_empty(d) for d in out_dtypes] if first is None else [
        array_ops_layout.expand_dims(f, 0) for f in first]
    invariants = (TensorShape([]), [s.shape for s in flat_state], [TensorShape(None)] * len(accs))
    _, final, stacked = while_loop(lambda i, c, a: i < stop, body, (start, flat_state, accs),
                                   shape_invariants=invariants, parallel_iterations=parallel_iterations,
                                   back_prop=back_prop, swap_memory=swap_memory)
    return nest.pack_sequence_as(state, final), stacked, shapes


def _with_static_rows(stacked, shapes, n_static):
    for tensor, shape in zip(stacked, shapes):
        tensor.set_shape(TensorShape([n_static]).concatenate(shape))
    return stacked


def map_fn(fn: Callable[[Any], Any], elems: Any, dtype: Any = None, parallel_iterations: int | None = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True, name: str | None = None) -> Any:
    """``stack([fn(elems[i]) for i in range(n)])`` along axis 0, as a ``while_loop``.

    Args:
        fn: maps one element (a slice along axis 0 of each tensor of ``elems``) to a (nested) result.
        elems: a Tensor or (nested) structure of Tensors, all with the same first dimension ``n``.
        dtype: the result's dtype structure when it differs from ``elems``' (TF's rule).
        parallel_iterations: default 10; back_prop, swap_memory: as ``while_loop``.
    Returns:
        The stacked results (first dimension ``n``), in ``dtype``'s (else ``elems``') structure.
    Raises:
        ValueError: scalar elements, or ``fn``'s result does not match ``dtype``'s structure.
    """
    del infer_shape
    graph = graph_of(nest.flatten(elems))
    with graph.as_default(), graph.name_scope(name or "map"):
        flat, n, n_static = _elements(elems)
        structure = dtype if dtype is not None else elems
        out_dtypes = nest.flatten(dtype) if dtype is not None else [e.dtype for e in flat]
        zero = convert_to_tensor(0, name="i")
        _, stacked, shapes = _stacked_loop(lambda s, x: (s, fn(x)), None, elems, flat, zero, n, (),
                                           out_dtypes, parallel_iterations or 10, back_prop, swap_memory)
        return nest.pack_sequence_as(structure, _with_static_rows(stacked, shapes, n_static))


def scan(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
         back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True, reverse: bool = False,
         name: str | None = None) -> Any:
    """The running results ``a_i = fn(a_{i-1}, elems[i])``, stacked along axis 0 (``a_{-1}`` = ``initializer``,
    else ``elems[0]``, which is then also the first result).

    Raises:
        ValueError: scalar elements; ``reverse=True`` (not supported yet by dfcore).
    """
    del infer_shape
    if reverse:
        raise ValueError("scan(reverse=True) is not supported by dfcore yet")
    graph = graph_of(nest.flatten(elems))
    with graph.as_default(), graph.name_scope(name or "scan"):
        flat, n, n_static = _elements(elems)
        if initializer is None:
            state = _element(elems, flat, 0)
            start, first = convert_to_tensor(1, name="i"), [convert_to_tensor(s) for s in nest.flatten(state)]
        else:
            state = nest.map_structure(convert_to_tensor, initializer)
            start, first = convert_to_tensor(0, name="i"), None
        out_dtypes = [convert_to_tensor(s).dtype for s in nest.flatten(state)]

        def step(a, x):
            out = fn(a, x)
            return out, out

        _, stacked, shapes = _stacked_loop(step, first, elems, flat, start, n, state, out_dtypes,
                                           parallel_iterations, back_prop, swap_memory)
        return nest.pack_sequence_as(state, _with_static_rows(stacked, shapes, n_static))


def _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, default_name, backwards):
    graph = graph_of(nest.flatten(elems))
    with graph.as_default(), graph.name_scope(name or default_name):
        flat, n, _ = _elements(elems)
        last = n - 1
        if initializer is None:
            state = _element(elems, flat, last if backwards else 0)
            start = convert_to_tensor(1, name="i")
        else:
            state = nest.map_structure(convert_to_tensor, initializer)
            start = convert_to_tensor(0, name="i")
        flat_state = [convert_to_tensor(s) for s in nest.flatten(state)]

        def body(i, carried):
            index = last - i if backwards else i
            out = fn(nest.pack_sequence_as(state, carried), _element(elems, flat, index))
            return i + 1, [convert_to_tensor(o) for o in nest.flatten(out)]

        _, final = while_loop(lambda i, c: i < n, body, (start, flat_state), parallel_iterations=parallel_iterations,
                              back_prop=back_prop, swap_memory=swap_memory)
        return nest.pack_sequence_as(state, final)


def foldl(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """``fn(...fn(fn(initializer, elems[0]), elems[1])..., elems[n-1])`` (``initializer`` default ``elems[0]``).

    Raises:
        ValueError: scalar elements.
    """
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, "foldl", False)


def foldr(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """``foldl`` from the last element to the first (``initializer`` default ``elems[n-1]``).

    Raises:
        ValueError: scalar elements.
    """
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, "foldr", True)
