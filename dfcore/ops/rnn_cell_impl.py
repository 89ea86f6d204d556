"""``tf.nn.rnn_cell``: ``RNNCell``, ``BasicRNNCell``, ``BasicLSTMCell``, ``LSTMCell``, ``GRUCell``,
``MultiRNNCell`` and ``LSTMStateTuple``.

Source: ``tensorflow/python/ops/rnn_cell_impl.py`` (TF 1.x): the same equations, variable
names (``<scope>/basic_rnn_cell/kernel``, ``…/bias``; ``basic_lstm_cell`` / ``lstm_cell`` for the
LSTMs, gates in the order i, j, f, o; ``gru_cell/gates/…`` and ``gru_cell/candidate/…``;
``multi_rnn_cell/cell_<k>/…``) and shapes (kernel ``[input_depth + num_units, k * num_units]``).
A cell creates its variables on its first call (in the caller's variable scope, e.g. ``rnn``)
and reuses them on later calls.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..framework import dtypes, scopes
from ..framework.tensor_conversion import convert_to_tensor
from . import array_ops, array_ops_join, init_ops, math_ops, math_ops_unary, nn_ops, variable_scope
from .math_ops_matmul import matmul

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike

__all__ = ["RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell", "LSTMStateTuple"]


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

    def _weights(self, inputs: Any, num_rows_out: int, bias_value: float = 0.0) -> tuple[Any, Any]:
        depth = inputs.shape.as_tuple()[-1]
        if depth is None:
            raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs.shape}")
        dtype = inputs.dtype.base_dtype
        kernel = variable_scope.get_variable("kernel", [depth + self.output_size, num_rows_out], dtype=dtype)
        bias = variable_scope.get_variable("bias", [num_rows_out], dtype=dtype,
                                           initializer=init_ops.constant_initializer(bias_value, dtype=dtype))
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

    def call(self, inputs: TensorLike, state: Any) -> tuple[Tensor, Tensor]:
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

    def call(self, inputs: TensorLike, state: Any) -> tuple[Tensor, Any]:
        c, h = state
        kernel, bias = self._weights(inputs, 4 * self._num_units)
        gates = nn_ops.bias_add(matmul(array_ops_join.concat([inputs, h], 1), kernel), bias)
        i, j, f, o = array_ops_join.split(gates, 4, axis=1)
        forget = math_ops.cast(self._forget_bias, dtypes.as_dtype(gates.dtype))
        new_c = c * math_ops_unary.sigmoid(f + forget) + math_ops_unary.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * math_ops_unary.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


class LSTMCell(BasicLSTMCell):
    """TF's ``LSTMCell`` without its options: the ``BasicLSTMCell`` equations under the name ``lstm_cell``.

    Raises:
        ValueError: ``use_peepholes``, ``cell_clip``, ``num_proj`` or ``state_is_tuple=False`` (not in dfcore).
    """

    _default_name = "lstm_cell"

    def __init__(self, num_units: int, use_peepholes: bool = False, cell_clip: Any = None, initializer: Any = None,
                 num_proj: Any = None, proj_clip: Any = None, num_unit_shards: Any = None, num_proj_shards: Any = None,
                 forget_bias: float = 1.0, state_is_tuple: bool = True, activation: Callable[[Any], Any] | None = None,
                 reuse: Any = None, name: str | None = None, dtype: Any = None) -> None:
        if use_peepholes or cell_clip is not None or num_proj is not None or proj_clip is not None:
            raise ValueError("dfcore's LSTMCell has no peepholes, clipping or projection")
        del initializer, num_unit_shards, num_proj_shards
        super().__init__(num_units, forget_bias, state_is_tuple, activation, reuse, name, dtype)


class GRUCell(RNNCell):
    """The GRU of Cho et al. 2014: ``r, u = σ(W_g [x, h] + b_g)`` (``gates/``, bias 1),
    ``c = tanh(W_c [x, r·h] + b_c)`` (``candidate/``), ``h' = u·h + (1 − u)·c``."""

    _default_name = "gru_cell"

    def __init__(self, num_units: int, activation: Callable[[Any], Any] | None = None, reuse: Any = None,
                 kernel_initializer: Any = None, bias_initializer: Any = None, name: str | None = None,
                 dtype: Any = None) -> None:
        super().__init__(name, reuse, dtype)
        del kernel_initializer, bias_initializer
        self._num_units = int(num_units)
        self._activation = activation or math_ops_unary.tanh

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def call(self, inputs: TensorLike, state: Any) -> tuple[Tensor, Tensor]:
        with variable_scope.variable_scope("gates"):
            kernel, bias = self._weights(inputs, 2 * self._num_units, bias_value=1.0)
        gates = math_ops_unary.sigmoid(nn_ops.bias_add(matmul(array_ops_join.concat([inputs, state], 1), kernel), bias))
        r, u = array_ops_join.split(gates, 2, axis=1)
        with variable_scope.variable_scope("candidate"):
            kernel, bias = self._weights(inputs, self._num_units)
        c = self._activation(nn_ops.bias_add(matmul(array_ops_join.concat([inputs, r * state], 1), kernel), bias))
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class MultiRNNCell(RNNCell):
    """Cells stacked: cell ``k`` (variables in ``multi_rnn_cell/cell_<k>/``) reads cell ``k − 1``'s output;
    the state is the tuple of the cells' states."""

    _default_name = "multi_rnn_cell"

    def __init__(self, cells: list[RNNCell], state_is_tuple: bool = True) -> None:
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not state_is_tuple:
            raise ValueError("dfcore's MultiRNNCell supports state_is_tuple=True only")
        super().__init__()
        self._cells = list(cells)

    @property
    def state_size(self) -> tuple:
        return tuple(cell.state_size for cell in self._cells)

    @property
    def output_size(self) -> int:
        return self._cells[-1].output_size

    def zero_state(self, batch_size: Any, dtype: Any) -> tuple:
        return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)

    def call(self, inputs: TensorLike, state: Any) -> tuple[Tensor, tuple[Any, ...]]:
        output, states = inputs, []
        for k, cell in enumerate(self._cells):
            with variable_scope.variable_scope(f"cell_{k}"):
                output, new = cell(output, state[k])
            states.append(new)
        return output, tuple(states)
