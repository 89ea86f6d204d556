"""``tf.nn.rnn_cell.DropoutWrapper`` and ``ResidualWrapper``: cells around a cell.

Source: ``tensorflow/python/ops/rnn_cell_impl.py`` (TF 1.x). A wrapper adds no variable scope of its own:
the wrapped cell's variables keep their names (``rnn/basic_lstm_cell/kernel`` with or without a
``DropoutWrapper``). The dropout wrapper drops the cell's inputs, outputs and (by default) every state
part but an LSTM's ``c``, with ``tf.nn.dropout``'s semantics and seed rules; a keep probability of 1
adds no op. The residual wrapper adds the inputs to the outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..framework import nest
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from . import math_ops, nn_ops
from .array_ops import constant_value
from .rnn_cell_impl import LSTMStateTuple, RNNCell

__all__ = ["DropoutWrapper", "ResidualWrapper"]


class _Wrapper(RNNCell):
    """A cell that runs ``self._cell``: sizes and zero state are the wrapped cell's; no scope of its own."""

    def __init__(self, cell: RNNCell) -> None:
        super().__init__()
        self._cell = cell

    @property
    def wrapped_cell(self) -> RNNCell:
        return self._cell

    @property
    def state_size(self) -> Any:
        return self._cell.state_size

    @property
    def output_size(self) -> Any:
        return self._cell.output_size

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        return self._cell.zero_state(batch_size, dtype)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        return self.call(convert_to_tensor(inputs), state, scope)

    def call(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        raise NotImplementedError


def _default_state_filter(substate: Any) -> Any:
    """TF's default: drop every state part but an LSTM's memory ``c``."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


class DropoutWrapper(_Wrapper):
    """Dropout on a cell's inputs, outputs and state (each a keep probability: float or scalar tensor).

    Raises:
        ValueError: a constant keep probability outside ``[0, 1]`` (TF's wording).
        NotImplementedError: ``variational_recurrent=True`` (the same mask each step; not in dfcore).
    """

    def __init__(self, cell: RNNCell, input_keep_prob: Any = 1.0, output_keep_prob: Any = 1.0,
                 state_keep_prob: Any = 1.0, variational_recurrent: bool = False, input_size: Any = None,
                 dtype: Any = None, seed: int | None = None,
                 dropout_state_filter_visitor: Callable[[Any], Any] | None = None) -> None:
        if variational_recurrent:
            raise NotImplementedError("DropoutWrapper(variational_recurrent=True) is not implemented in dfcore")
        super().__init__(cell)
        for label, keep in (("input_keep_prob", input_keep_prob), ("state_keep_prob", state_keep_prob),
                            ("output_keep_prob", output_keep_prob)):
            value = constant_value(keep) if isinstance(keep, Tensor) else keep
            if value is not None and not 0 <= float(value) <= 1:
                raise ValueError(f"Parameter {label} must be between 0 and 1. Received {float(value)}")
        self._input_keep, self._output_keep, self._state_keep = input_keep_prob, output_keep_prob, state_keep_prob
        self._seed = seed
        self._state_filter = dropout_state_filter_visitor or _default_state_filter

    def _dropout(self, values: Any, keep: Any, offset: int, which: Any = None) -> Any:
        if not isinstance(keep, Tensor) and float(keep) == 1.0:
            return values
        seed = None if self._seed is None else self._seed + offset

        def drop(value: Any, chosen: bool = True) -> Any:
            return nn_ops.dropout(value, keep_prob=keep, seed=seed) if chosen else value

        if which is None:
            return nest.map_structure(drop, values)
        return nest.map_structure(drop, values, which)

    def _which(self, structure: Any) -> Any:
        """Which leaves of the state to drop: the filter's answer, traversed as TF's
        ``get_traverse_shallow_structure`` (True on a tuple means: ask again for each part)."""
        answer = self._state_filter(structure)
        if not isinstance(structure, tuple):
            return bool(answer)
        flags = [answer] * len(structure) if isinstance(answer, bool) else list(answer)
        parts = [self._which(part) if flag else nest.map_structure(lambda _: False, part)
                 for part, flag in zip(structure, flags, strict=True)]
        return type(structure)(*parts) if hasattr(structure, "_fields") else tuple(parts)

    def call(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        inputs = self._dropout(inputs, self._input_keep, 0)
        output, new_state = self._cell(inputs, state, scope=scope)
        new_state = self._dropout(new_state, self._state_keep, 1, self._which(new_state))
        return self._dropout(output, self._output_keep, 2), new_state


class ResidualWrapper(_Wrapper):
    """``output = cell output + inputs`` (or ``residual_fn(inputs, output)``); the state is the cell's.

    Raises:
        ValueError: inputs and outputs of different shapes (from the addition).
    """

    def __init__(self, cell: RNNCell, residual_fn: Callable[[Any, Any], Any] | None = None) -> None:
        super().__init__(cell)
        self._residual_fn = residual_fn

    def call(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        output, new_state = self._cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state
        return nest.map_structure(math_ops.add, inputs, output), new_state
