"""``GradientTape``: gradients of eagerly executed code, from the registered gradient functions.

Source: ``tensorflow/python/eager/backprop.py`` (``GradientTape``: ``watch``, ``gradient``, ``persistent``,
``watch_accessed_variables``, ``stop_recording``, ``reset``, ``watched_variables``) and ``c/eager/tape.h``
(the backward pass). While the tape is active, every eager op with a watched input is recorded; its
outputs are watched in turn. ``gradient`` replays the recorded ops backwards, calling the same gradient
functions ``tf.gradients`` uses (``RegisterGradient``), which run eagerly — so a tape active around
another tape's ``gradient`` call records the backward ops too, and gives second derivatives.

In a graph (a ``tf.function`` being traced) the tape records nothing and ``gradient`` builds the backward
graph with :func:`dfcore.ops.gradients_impl.gradients`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Literal

from ..framework import graph as graph_lib, nest
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..ops import array_ops, gradients_impl
from ..ops.variables import Variable
from . import tape as tape_lib


class GradientTape:
    """Record operations for automatic differentiation.

    Args:
        persistent: allow several ``gradient`` calls (the recorded ops are kept until the tape is dropped).
        watch_accessed_variables: watch every trainable variable read while the tape is active.
    Raises (``gradient``):
        RuntimeError: a second ``gradient`` call on a non-persistent tape (TF's wording).
        LookupError: a recorded op type has no registered gradient.
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._tape = tape_lib.Tape(persistent, watch_accessed_variables)
        self._persistent = persistent
        self._recording = False
        self._used = False

    def __enter__(self) -> GradientTape:
        self._push()
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        if self._recording:
            self._pop()
        return False

    def _push(self) -> None:
        self._tape.recording = True
        tape_lib.push(self._tape)
        self._recording = True

    def _pop(self) -> None:
        tape_lib.pop(self._tape)
        self._recording = False

    def watch(self, tensor: Any) -> None:
        """Watch ``tensor`` (an EagerTensor, a variable, or a nested structure of them).

        Raises:
            ValueError: something that is neither a tensor nor a variable.
        """
        for item in nest.flatten(tensor):
            if isinstance(item, Variable) and getattr(item, "_is_eager", False):
                tape_lib.watch_variable(self._tape, item)
            elif isinstance(item, (Tensor, Variable)):
                self._tape.watch(item)
            else:
                raise ValueError(f"Passed in object of type {type(item)}, not tf.Tensor")

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Ops run inside the block are not recorded by this tape.

        Raises:
            RuntimeError: the tape is not recording (TF's wording).
        """
        if not self._recording:
            raise RuntimeError("Trying to stop recording a tape which is not recording.")
        self._tape.recording = False
        try:
            yield
        finally:
            self._tape.recording = True

    def reset(self) -> None:
        """Forget everything recorded and watched so far; keep recording."""
        self._tape.ops.clear()
        self._tape.watched.clear()
        self._tape.keep.clear()
        self._tape.variables.clear()

    def watched_variables(self) -> tuple[Any, ...]:
        """The variables this tape watches, in the order first watched."""
        return tuple(self._tape.variables)

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None) -> Any:
        """d(sum of ``target``)/d``sources``, in the structure of ``sources`` (None where unconnected).

        Args:
            target: a tensor (or nested structure of tensors) computed while the tape recorded.
            sources: tensors or variables (nested structure).
            output_gradients: the gradients of ``target`` (default ones), in ``target``'s structure.
        Raises:
            RuntimeError: ``gradient`` was already called on this non-persistent tape.
        """
        if self._used and not self._persistent:
            raise RuntimeError("GradientTape.gradient can only be called once on non-persistent tapes.")
        flat_sources = nest.flatten(sources)
        flat_targets = [t.value() if isinstance(t, Variable) else t for t in nest.flatten(target)]
        flat_out = [None] * len(flat_targets) if output_gradients is None else nest.flatten(output_gradients)
        if graph_lib.executing_eagerly():
            paused = self._recording and self._tape.recording
            if paused:
                self._tape.recording = False
            try:
                grads = _eager_gradients(self._tape, flat_targets, flat_sources, flat_out)
            finally:
                if paused:
                    self._tape.recording = True
        else:
            grads = _graph_gradients(flat_targets, flat_sources, flat_out)
        if not self._persistent:  # its records are spent; watched_variables() still answers (as TF)
            self._used = True
            self._tape.ops.clear()
            self._tape.watched.clear()
            self._tape.keep.clear()
        return nest.pack_sequence_as(sources, grads)


def _source_key(source: Any) -> Any:
    """What the tape watches for ``source``: an eager variable's handle, else the tensor itself."""
    return source._ref() if isinstance(source, Variable) and source._is_eager else source


def _eager_gradients(tape, targets, sources, output_gradients):
    grads: dict[int, list[Any]] = {}
    for target, grad in zip(targets, output_gradients):
        target = convert_to_tensor(target)
        grad = array_ops.ones_like(target) if grad is None else convert_to_tensor(grad, dtype=target.dtype)
        grads.setdefault(id(target), []).append(grad)
    for op in reversed(tape.ops):
        out_grads = [_summed(grads, id(t)) for t in op._outputs]
        if all(g is None for g in out_grads):
            continue
        in_grads = gradients_impl.op_gradients(op, out_grads)
        if in_grads is None:
            continue
        for tensor, grad in zip(op._inputs, in_grads):
            if grad is not None and gradients_impl.is_differentiable(tensor):
                grads.setdefault(id(tensor), []).append(grad)
    return [_summed(grads, id(_source_key(s))) for s in sources]


def _summed(grads, key):
    found = grads.get(key)
    if not found:
        return None
    if len(found) > 1:
        found[:] = [gradients_impl.aggregate_gradients(found)]
    return found[0]


def _graph_gradients(targets, sources, output_gradients):
    graph = graph_lib.get_default_graph()
    capture = getattr(graph, "capture", None)

    def in_graph(value):
        value = _source_key(value)
        if getattr(value, "_is_eager", False) and capture is not None:
            return capture(value)
        return value._ref() if isinstance(value, Variable) else value

    grad_ys = None if all(g is None for g in output_gradients) else output_gradients
    return gradients_impl.gradients(targets, [in_graph(s) for s in sources], grad_ys=grad_ys)
