"""``tf.nn.dynamic_rnn``: an RNN cell unrolled by a ``while_loop`` over time.

Source: ``tensorflow/python/ops/rnn.py`` (``dynamic_rnn``, ``_dynamic_rnn_loop``, ``_rnn_step``).
In variable scope ``rnn``: inputs ``[batch, time, depth]`` (``[time, batch, depth]`` when
``time_major``) are read one time step per iteration, the cell's outputs collected along time
(dfcore collects them with ``concat`` where TF uses a ``TensorArray``). With ``sequence_length``,
a finished sequence's output is zeros and its state is copied through, as TF's ``_rnn_step``.
"""

from __future__ import annotations

from typing import Any

from ..framework import dtypes, nest
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from . import array_ops, array_ops_gather, array_ops_layout, array_ops_where, math_ops, variable_scope
from .control_flow_while import while_loop
from .functional_ops import append_row

__all__ = ["dynamic_rnn"]


def dynamic_rnn(cell: Any, inputs: Any, sequence_length: Any = None, initial_state: Any = None, dtype: Any = None,
                parallel_iterations: int | None = None, swap_memory: bool = False, time_major: bool = False,
                scope: Any = None) -> tuple[Any, Any]:
    """Run ``cell`` over the time steps of ``inputs``.

    Args:
        cell: an RNNCell (``tf.nn.rnn_cell.BasicRNNCell``, ``BasicLSTMCell``).
        inputs: a Tensor ``[batch, time, depth]`` (``[time, batch, depth]`` if ``time_major``), depth known.
        sequence_length: optional int vector ``[batch]``: steps past it give zero outputs and keep the state.
        initial_state: the cell's initial state; default ``cell.zero_state(batch, dtype)``.
        dtype: the state's dtype when ``initial_state`` is not given.
        parallel_iterations: default 32 (TF's); swap_memory: accepted.
    Returns:
        ``(outputs, state)``: outputs ``[batch, time, cell.output_size]`` (time-major if asked) and the
        final state.
    Raises:
        ValueError: no ``initial_state`` and no ``dtype``; ``sequence_length`` not a vector; inputs not rank 3
            (TF's wording).
    """
    with variable_scope.variable_scope(scope or "rnn"):
        x = convert_to_tensor(inputs)
        if x.shape.ndims is not None and x.shape.ndims != 3:
            raise ValueError(f"Input must have rank 3 (batch, time, depth) in dfcore, saw shape: {x.shape}")
        if not time_major:
            x = array_ops_layout.transpose(x, [1, 0, 2])
        steps, batch = array_ops.shape(x)[0], array_ops.shape(x)[1]
        static_batch = x.shape.as_tuple()[1] if x.shape.ndims is not None else None
        if initial_state is not None:
            state = initial_state
        else:
            if dtype is None:
                raise ValueError("If there is no initial_state, you must give a dtype.")
            state = cell.zero_state(static_batch if static_batch is not None else batch, dtype)
        lengths = None
        if sequence_length is not None:
            lengths = math_ops.cast(sequence_length, dtypes.int32, name="sequence_length")
            if lengths.shape.ndims not in (None, 1):
                raise ValueError(f"sequence_length must be a vector of length batch_size, but saw shape: "
                                 f"{lengths.shape}")
        flat_state = [convert_to_tensor(s) for s in nest.flatten(state)]
        outputs0 = array_ops.zeros([0], dtype=flat_state[0].dtype)

        def body(time, carried, outputs):
            old = nest.pack_sequence_as(state, carried)
            step_input = array_ops_gather.gather(x, time)
            step_input.set_shape(TensorShape([static_batch]).concatenate(x.shape[2:]))
            output, new = cell(step_input, old)
            new_flat = [convert_to_tensor(s) for s in nest.flatten(new)]
            if lengths is not None:
                finished = time >= lengths
                output = array_ops_where.where(finished, array_ops.zeros_like(output), output)
                new_flat = [array_ops_where.where(finished, o, n) for o, n in zip(carried, new_flat)]
            return time + 1, new_flat, append_row(outputs, output)

        invariants = (TensorShape([]), [s.shape for s in flat_state], TensorShape(None))
        _, final, outputs = while_loop(lambda t, s, o: t < steps, body, (0, flat_state, outputs0),
                                       shape_invariants=invariants, parallel_iterations=parallel_iterations or 32,
                                       swap_memory=swap_memory)
        outputs.set_shape(TensorShape([x.shape.as_tuple()[0] if x.shape.ndims else None, static_batch,
                                       cell.output_size]))
        if not time_major:
            outputs = array_ops_layout.transpose(outputs, [1, 0, 2])
        return outputs, nest.pack_sequence_as(state, final)
