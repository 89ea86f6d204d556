"""``tf.nn.rnn_cell``: ``RNNCell``, ``BasicRNNCell``, ``BasicLSTMCell`` and ``LSTMStateTuple``.

Source: ``tensorflow/python/ops/rnn_cell_impl.py`` (TF 1.x): the same equations, variable
names (``<scope>/basic_rnn_cell/kernel``, ``…/bias``; ``basic_lstm_cell`` for the LSTM, gates
in the order i, j, f, o) and shapes (kernel ``[input_depth + num_units, k * num_units]``).
A cell creates its variables on its first call (in the caller's variable scope, e.g. ``rnn``)
and reuses them on later calls.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from ..framework import dtypes, scopes
from ..framework.tensor_conversion import convert_to_tensor
from . import array_ops, array_ops_join, init_ops, math_ops, math_ops_unary, nn_ops, variable_scope
from .math_ops_matmul import matmul

__all__ = ["RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMStateTuple"]


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM state: ``c`` (cell state) and ``h`` (output), each ``[batch, num_units]``."""

    __slots__ = ()

    @property
    def dtype(self) -> Any:
        if self.c.dtype != self.h.dtype:
            raise TypeError(f"Inconsistent internal state: {self.c.dtype} vs {self.h.dtype}")
        return self.c.dtype


class RNNCell:
    """An RNN cell: ``output, new_state = cell(inputs, state)``; subclasses define ``state_size``,
    ``output_size`` and :meth:`call`."""

    _default_name = "rnn_cell"

    def __init__(self, name: str | None = None, reuse: Any = None, dtype: Any = None) -> None:
        self._name = name or self._default_name
        self._reuse = reuse
        self._dtype = dtype
        self._built_scope: Any = None

    @property
    def state_size(self) -> Any:
        raise NotImplementedError

    @property
    def output_size(self) -> int:
        raise NotImplementedError

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        """Zeros of the state's structure, ``[batch_size, size]`` each."""
        with scopes.name_scope(f"{type(self).__name__}ZeroState"):
            size = self.state_size
            if isinstance(size, LSTMStateTuple):
                return LSTMStateTuple(*(array_ops.zeros(array_ops_join.stack([batch_size, s]), dtype=dtype)
                                        for s in size))
            return array_ops.zeros(array_ops_join.stack([batch_size, size]), dtype=dtype)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        """Run the cell once: its variables live in ``<current variable scope>/<cell name>``, made on the first call."""
        inputs = convert_to_tensor(inputs)
        reuse = True if self._built_scope is not None else self._reuse
        with variable_scope.variable_scope(scope or self._name, reuse=reuse):
            self._built_scope = True
            return self.call(inputs, state)

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def _weights(self, inputs: Any, num_rows_out: int) -> tuple[Any, Any]:
        depth = inputs.shape.as_tuple()[-1]
        if depth is None:
            raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs.shape}")
        dtype = inputs.dtype.base_dtype
        kernel = variable_scope.get_variable("kernel", [depth + self.output_size, num_rows_out], dtype=dtype)
        bias = variable_scope.get_variable("bias", [num_rows_out], dtype=dtype,
                                           initializer=init_ops.zeros_initializer(dtype=dtype))
        return kernel, bias


class BasicRNNCell(RNNCell):
    """``output = new_state = activation(W [inputs, state] + b)`` (default activation ``tanh``)."""

    _default_name = "basic_rnn_cell"

    def __init__(self, num_units: int, activation: Callable[[Any], Any] | None = None, reuse: Any = None,
                 name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name, reuse, dtype)
        self._num_units = int(num_units)
        self._activation = activation or math_ops_unary.tanh

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def call(self, inputs, state):
        kernel, bias = self._weights(inputs, self._num_units)
        output = self._activation(nn_ops.bias_add(matmul(array_ops_join.concat([inputs, state], 1), kernel), bias))
        return output, output


class BasicLSTMCell(RNNCell):
    """The LSTM of Zaremba et al. 2014 (no peepholes): gates ``i, j, f, o = split(W [x, h] + b, 4)``,
    ``c' = c·σ(f + forget_bias) + σ(i)·tanh(j)``, ``h' = tanh(c')·σ(o)``; state ``LSTMStateTuple(c, h)``."""

    _default_name = "basic_lstm_cell"

    def __init__(self, num_units: int, forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Callable[[Any], Any] | None = None, reuse: Any = None, name: str | None = None,
                 dtype: Any = None) -> None:
        if not state_is_tuple:
            raise ValueError("dfcore's BasicLSTMCell supports state_is_tuple=True only")
        super().__init__(name, reuse, dtype)
        self._num_units = int(num_units)
        self._forget_bias = float(forget_bias)
        self._activation = activation or math_ops_unary.tanh

    @property
    def state_size(self) -> LSTMStateTuple:
        return LSTMStateTuple(self._num_units, self._num_units)

    @property
    def output_size(self) -> int:
        return self._num_units

    def call(self, inputs, state):
        c, h = state
        kernel, bias = self._weights(inputs, 4 * self._num_units)
        gates = nn_ops.bias_add(matmul(array_ops_join.concat([inputs, h], 1), kernel), bias)
        i, j, f, o = array_ops_join.split(gates, 4, axis=1)
        forget = math_ops.cast(self._forget_bias, dtypes.as_dtype(gates.dtype))
        new_c = c * math_ops_unary.sigmoid(f + forget) + math_ops_unary.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * math_ops_unary.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)
