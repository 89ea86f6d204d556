"""``tf.nn.static_rnn``, ``static_bidirectional_rnn`` and ``bidirectional_dynamic_rnn``.

Source: ``tensorflow/python/ops/rnn.py`` (TF 1.x). ``static_rnn`` calls the cell once per element of a
Python list of ``[batch, depth]`` inputs, in variable scope ``rnn`` (the same variables as ``dynamic_rnn``
builds, so the two give the same numbers); with ``sequence_length`` a finished sequence's output is zeros
and its state is copied through. The bidirectional forms run a forward cell in ``<scope>/fw`` and a backward
cell over the reversed sequence in ``<scope>/bw`` (scope default ``bidirectional_rnn``); outputs of
``static_bidirectional_rnn`` are the two concatenated along depth, ``bidirectional_dynamic_rnn`` returns
the pair. The bidirectional forms reverse whole sequences: dfcore has no ``ReverseSequence``, so they
refuse a ``sequence_length``.
"""

from __future__ import annotations

from typing import Any

from ..framework import dtypes, nest
from ..framework.tensor_conversion import convert_to_tensor
from . import array_ops, array_ops_join, array_ops_where, math_ops, variable_scope
from .array_ops_reverse import reverse
from .rnn import dynamic_rnn

__all__ = ["bidirectional_dynamic_rnn", "static_bidirectional_rnn", "static_rnn"]


def _initial_state(cell: Any, first: Any, initial_state: Any, dtype: Any) -> Any:
    if initial_state is not None:
        return initial_state
    if dtype is None:
        raise ValueError("If no initial_state is provided, argument `dtype` must be specified")
    batch = first.shape.as_tuple()[0] if first.shape.ndims else None
    return cell.zero_state(batch if batch is not None else array_ops.shape(first)[0], dtype)


def static_rnn(cell: Any, inputs: Any, initial_state: Any = None, dtype: Any = None, sequence_length: Any = None,
               scope: Any = None) -> tuple[list[Any], Any]:
    """Run ``cell`` over a list of ``T`` inputs ``[batch, depth]``: ``(outputs, state)``, outputs a list of ``T``
    ``[batch, cell.output_size]``, state the final one.

    Raises:
        TypeError: ``inputs`` not a list or tuple; ValueError: it is empty, or no ``initial_state`` and no
            ``dtype`` (TF's wording).
    """
    if not isinstance(inputs, list | tuple):
        raise TypeError(f"Argument `inputs` must be a sequence. Received: {inputs}")
    if not inputs:
        raise ValueError("Argument `inputs` must not be empty.")
    with variable_scope.variable_scope(scope or "rnn") as varscope:
        inputs = [convert_to_tensor(x) for x in inputs]
        state = _initial_state(cell, inputs[0], initial_state, dtype)
        lengths = None
        if sequence_length is not None:
            lengths = math_ops.cast(sequence_length, dtypes.int32, name="sequence_length")
        outputs = []
        for time, step_input in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()
            output, new_state = cell(step_input, state)
            if lengths is not None:
                finished = math_ops.greater_equal(time, lengths)
                output = array_ops_where.where(finished, array_ops.zeros_like(output), output)
                new_state = nest.pack_sequence_as(state, [
                    array_ops_where.where(finished, old, new)
                    for old, new in zip(nest.flatten(state), nest.flatten(new_state), strict=True)])
            outputs.append(output)
            state = new_state
        return outputs, state


def _no_lengths(sequence_length: Any, name: str) -> None:
    if sequence_length is not None:
        raise NotImplementedError(f"{name} with sequence_length needs ReverseSequence, which dfcore lacks")


def static_bidirectional_rnn(cell_fw: Any, cell_bw: Any, inputs: Any, initial_state_fw: Any = None,
                             initial_state_bw: Any = None, dtype: Any = None, sequence_length: Any = None,
                             scope: Any = None) -> tuple[list[Any], Any, Any]:
    """``(outputs, state_fw, state_bw)``: outputs a list of ``[batch, fw.output_size + bw.output_size]``, the
    backward cell's outputs realigned with the inputs' order.

    Raises:
        TypeError/ValueError: as :func:`static_rnn`; NotImplementedError: a ``sequence_length``.
    """
    _no_lengths(sequence_length, "static_bidirectional_rnn")
    if not isinstance(inputs, list | tuple):
        raise TypeError(f"Argument `inputs` must be a sequence. Received: {inputs}")
    with variable_scope.variable_scope(scope or "bidirectional_rnn"):
        with variable_scope.variable_scope("fw") as fw_scope:
            outputs_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype, scope=fw_scope)
        with variable_scope.variable_scope("bw") as bw_scope:
            reversed_bw, state_bw = static_rnn(cell_bw, list(inputs)[::-1], initial_state_bw, dtype, scope=bw_scope)
        outputs = [array_ops_join.concat([fw, bw], 1) for fw, bw in zip(outputs_fw, reversed_bw[::-1], strict=True)]
        return outputs, state_fw, state_bw


def bidirectional_dynamic_rnn(cell_fw: Any, cell_bw: Any, inputs: Any, sequence_length: Any = None,
                              initial_state_fw: Any = None, initial_state_bw: Any = None, dtype: Any = None,
                              parallel_iterations: int | None = None, swap_memory: bool = False,
                              time_major: bool = False, scope: Any = None) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """``((outputs_fw, outputs_bw), (state_fw, state_bw))`` for inputs ``[batch, time, depth]`` (``[time, batch,
    depth]`` if ``time_major``); outputs_bw realigned with the inputs' order.

    Raises:
        ValueError: as :func:`dynamic_rnn`; NotImplementedError: a ``sequence_length``.
    """
    _no_lengths(sequence_length, "bidirectional_dynamic_rnn")
    time_axis = 0 if time_major else 1
    options = {"dtype": dtype, "parallel_iterations": parallel_iterations, "swap_memory": swap_memory,
               "time_major": time_major}
    with variable_scope.variable_scope(scope or "bidirectional_rnn"):
        with variable_scope.variable_scope("fw") as fw_scope:
            outputs_fw, state_fw = dynamic_rnn(cell_fw, inputs, initial_state=initial_state_fw, scope=fw_scope,
                                               **options)
        with variable_scope.variable_scope("bw") as bw_scope:
            reversed_inputs = reverse(inputs, [time_axis])
            reversed_outputs, state_bw = dynamic_rnn(cell_bw, reversed_inputs, initial_state=initial_state_bw,
                                                     scope=bw_scope, **options)
        return (outputs_fw, reverse(reversed_outputs, [time_axis])), (state_fw, state_bw)
