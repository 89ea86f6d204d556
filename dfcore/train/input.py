"""TF 1.x's queue-based input pipeline: input producers and batching (``tf.train.batch`` & co).

Source: ``tensorflow/python/training/input.py``. Each function builds a queue, its enqueue
op(s) and a :class:`~dfcore.train.queue_runner.QueueRunner` added to the graph's
``queue_runners`` collection (start them with ``tf.train.start_queue_runners``), plus TF's
``fraction_of_<capacity>_full`` scalar summary of the queue's fill. ``num_epochs`` counts
in a *local* variable (``<scope>/limit_epochs/epochs``), so ``tf.local_variables_initializer()``
must run first — else the runner reports TF's ``FailedPreconditionError`` — and after the
last epoch the queue closes and its consumers get ``OutOfRangeError``.

``dynamic_pad`` batches through a ``PaddingFIFOQueue``. Not supported: the ``maybe_*`` variants
(``keep_input``) and sparse tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..framework import dtypes as dtypes_lib
from ..framework.graph import GraphKeys
from ..framework.scopes import control_dependencies, name_scope
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from ..ops import (
    array_ops,
    array_ops_gather,
    control_flow_ops,
    data_flow_ops,
    io_ops,
    math_ops,
    random_ops,
    variables,
)
from ..ops.math_ops_binary import maximum
from ..summary import summary
from .queue_runner import QueueRunner, add_queue_runner

if TYPE_CHECKING:
    from ..framework.operation import Operation
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import TensorLike
    from ..ops.data_flow_ops import QueueBase
    from ..ops.variables import Variable

__all__ = ["match_filenames_once", "limit_epochs", "input_producer", "string_input_producer", "range_input_producer",
           "slice_input_producer", "batch", "batch_join", "shuffle_batch", "shuffle_batch_join"]


def match_filenames_once(pattern: TensorLike, name: str | None = None) -> Variable:
    """A local variable holding the sorted file names matching ``pattern`` (a string vector ``[?]``), fixed when
    ``tf.local_variables_initializer()`` runs (TF's ``matching_filenames`` variable)."""
    with name_scope(name, "matching_filenames", [pattern]) as scope:
        return variables.Variable(io_ops.matching_files(pattern), name=scope, trainable=False, validate_shape=False,
                                  collections=[GraphKeys.LOCAL_VARIABLES])


def limit_epochs(tensor: TensorLike, num_epochs: int | None = None, name: str | None = None) -> Tensor:
    """``tensor``, which raises ``OutOfRangeError`` once evaluated ``num_epochs`` times (None: no limit).

    Raises:
        ValueError: ``num_epochs`` not positive (TF's wording).
    """
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    with name_scope(name, "limit_epochs", [tensor]) as scope:
        epochs = variables.Variable(convert_to_tensor(0, dtype=dtypes_lib.int64), name="epochs", trainable=False,
                                    collections=[GraphKeys.LOCAL_VARIABLES])
        counter = epochs.count_up_to(num_epochs)
        with control_dependencies([counter]):
            return array_ops.identity(tensor, name=scope)


def input_producer(input_tensor: TensorLike, element_shape: Any = None, num_epochs: int | None = None,
                   shuffle: bool = True, seed: int | None = None, capacity: int = 32, shared_name: str | None = None,
                   summary_name: str | None = None, name: str | None = None,
                   cancel_op: Operation | None = None) -> QueueBase:
    """A FIFOQueue of the rows of ``input_tensor`` (shuffled per epoch if ``shuffle``), refilled by a queue runner.

    Args:
        input_tensor: a tensor of rank >= 1; its rows are the queue's elements.
        element_shape: the rows' shape, if ``input_tensor``'s is not fully defined.
        num_epochs: how many times to produce every row (None: forever).
        summary_name: if given, a scalar summary of the queue's fill fraction under this name.
    Returns:
        the queue (``dequeue()`` gives one row).
    Raises:
        ValueError: the element shape is not fully defined (TF's wording).
    """
    with name_scope(name, "input_producer", [input_tensor]):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        element_shape = input_tensor.shape.with_rank_at_least(1)[1:].merge_with(TensorShape(element_shape))
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or `element_shape` must be "
                             "specified")
        if shuffle:
            input_tensor = random_ops.random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        queue = data_flow_ops.FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype.base_dtype],
                                        shapes=[element_shape], shared_name=shared_name, name=name or "fifo_queue")
        enqueue = queue.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(queue, [enqueue], cancel_op=cancel_op))
        if summary_name is not None:
            summary.scalar(summary_name, math_ops.to_float(queue.size()) * (1.0 / capacity))
        return queue


def string_input_producer(string_tensor: TensorLike, num_epochs: int | None = None, shuffle: bool = True,
                          seed: int | None = None, capacity: int = 32, shared_name: str | None = None,
                          name: str | None = None, cancel_op: Operation | None = None) -> QueueBase:
    """A queue of the strings of 1-D ``string_tensor`` (e.g. file names), for ``num_epochs`` epochs.

    Raises:
        ValueError: an empty list (TF's wording); an empty tensor makes the runner report TF's
            ``InvalidArgumentError`` (``assertion failed: [string_input_producer requires a non-null input tensor]``).
    """
    not_null_err = "string_input_producer requires a non-null input tensor"
    if isinstance(string_tensor, (list, tuple)) and not string_tensor:
        raise ValueError(not_null_err)
    with name_scope(name, "input_producer", [string_tensor]) as scope:
        string_tensor = convert_to_tensor(string_tensor, dtype=dtypes_lib.string)
        not_empty = control_flow_ops.Assert(math_ops.greater(array_ops.size(string_tensor), 0), [not_null_err])
        with control_dependencies([not_empty]):
            string_tensor = array_ops.identity(string_tensor)
        return input_producer(string_tensor, [], num_epochs, shuffle, seed, capacity, shared_name,
                              f"fraction_of_{capacity}_full", scope, cancel_op)


def range_input_producer(limit: TensorLike, num_epochs: int | None = None, shuffle: bool = True,
                         seed: int | None = None, capacity: int = 32, shared_name: str | None = None,
                         name: str | None = None) -> QueueBase:
    """A queue of the int32 integers ``0 … limit - 1``, for ``num_epochs`` epochs."""
    with name_scope(name, "input_producer", [limit]) as scope:
        range_tensor = math_ops.range_(limit)
        return input_producer(range_tensor, [], num_epochs, shuffle, seed, capacity, shared_name,
                              f"fraction_of_{capacity}_full", scope)


def slice_input_producer(tensor_list: Sequence[TensorLike], num_epochs: int | None = None, shuffle: bool = True,
                         seed: int | None = None, capacity: int = 32, shared_name: str | None = None,
                         name: str | None = None) -> list[Tensor]:
    """One row of every tensor of ``tensor_list`` (the same row index in each), for ``num_epochs`` epochs.

    Returns:
        a list of tensors, each one row (dimension 0 dropped) of its input.
    Raises:
        ValueError: an empty ``tensor_list`` (TF's wording).
    """
    with name_scope(name, "input_producer", list(tensor_list)):
        tensor_list = [convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        range_size = array_ops.shape(tensor_list[0])[0]
        queue = range_input_producer(range_size, num_epochs=num_epochs, shuffle=shuffle, seed=seed,
                                     capacity=capacity, shared_name=shared_name)
        index = queue.dequeue()
        return [array_ops_gather.gather(t, index) for t in tensor_list]


# -- batching ---------------------------------------------------------------------------
def _as_tensor_list(tensors):
    return [tensors[k] for k in sorted(tensors)] if isinstance(tensors, dict) else tensors


def _as_original_type(original, dequeued):
    if isinstance(original, dict):
        dequeued = [dequeued] if len(original) == 1 else dequeued
        return {k: dequeued[i] for i, k in enumerate(sorted(original))}
    return dequeued


def _validate(tensor_list, caller):
    tensor_list = [convert_to_tensor(t) for t in tensor_list]
    if not tensor_list:
        raise ValueError(f"Expected at least one tensor in {caller}().")
    return tensor_list


def _validate_join(tensor_list_list):
    tensor_list_list = [[convert_to_tensor(t) for t in _as_tensor_list(tl)] for tl in tensor_list_list]
    if not tensor_list_list:
        raise ValueError("Expected at least one input in batch_join().")
    return tensor_list_list


def _dtypes(tensor_list_list):
    types = [t.dtype.base_dtype for t in tensor_list_list[0]]
    for other in tensor_list_list[1:]:
        if [t.dtype.base_dtype for t in other] != types:
            raise TypeError(f"Expected types to be consistent: {types} vs. "
                            f"{[t.dtype.base_dtype for t in other]}.")
    return types


def _shapes(tensor_list_list, shapes, enqueue_many):
    """The element shape of each component, merged over the lists (TF's ``_shapes``).

    Raises:
        ValueError: a tensor of unknown rank (TF's wording).
    """
    if shapes is not None:
        return shapes
    merged = []
    for i in range(len(tensor_list_list[0])):
        shape = None
        for tensor_list in tensor_list_list:
            if tensor_list[i].shape.ndims is None:
                raise ValueError(f"Cannot infer Tensor's rank: {tensor_list[i]}")
            this = tensor_list[i].shape.with_rank_at_least(1)[1:] if enqueue_many else tensor_list[i].shape
            shape = this if shape is None else shape.merge_with(this)
        merged.append(shape)
    return merged


def _dequeue(queue, batch_size, allow_smaller_final_batch, name):
    if allow_smaller_final_batch:
        return queue.dequeue_up_to(batch_size, name=name)
    return queue.dequeue_many(batch_size, name=name)


def _runner(queue, tensor_list_list, enqueue_many, threads_per_list):
    enqueue = queue.enqueue_many if enqueue_many else queue.enqueue
    ops = [op for tensor_list in tensor_list_list for op in [enqueue(tensor_list)] * threads_per_list]
    add_queue_runner(QueueRunner(queue, ops))


def _fifo_batch(tensors, tensor_list_list, batch_size, threads_per_list, capacity, enqueue_many, shapes,
                dynamic_pad, allow_smaller_final_batch, shared_name, name, default_name):
    with name_scope(name, default_name, [t for tl in tensor_list_list for t in tl]) as scope:
        queue_class = data_flow_ops.PaddingFIFOQueue if dynamic_pad else data_flow_ops.FIFOQueue
        queue = queue_class(capacity, _dtypes(tensor_list_list), _shapes(tensor_list_list, shapes, enqueue_many),
                            shared_name=shared_name)
        _runner(queue, tensor_list_list, enqueue_many, threads_per_list)
        summary.scalar(f"fraction_of_{capacity}_full", math_ops.to_float(queue.size()) * (1.0 / capacity))
        return _as_original_type(tensors, _dequeue(queue, batch_size, allow_smaller_final_batch, scope))


def _shuffle_batch(tensors, tensor_list_list, batch_size, threads_per_list, capacity, min_after_dequeue, seed,
                   enqueue_many, shapes, allow_smaller_final_batch, shared_name, name, default_name):
    with name_scope(name, default_name, [t for tl in tensor_list_list for t in tl]) as scope:
        if capacity <= min_after_dequeue:
            raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue {min_after_dequeue}.")
        queue = data_flow_ops.RandomShuffleQueue(capacity, min_after_dequeue, _dtypes(tensor_list_list),
                                                 _shapes(tensor_list_list, shapes, enqueue_many), seed=seed,
                                                 shared_name=shared_name)
        _runner(queue, tensor_list_list, enqueue_many, threads_per_list)
        full = math_ops.to_float(maximum(0, queue.size() - min_after_dequeue)) * (
            1.0 / (capacity - min_after_dequeue))
        summary.scalar(f"fraction_over_{min_after_dequeue}_of_{capacity - min_after_dequeue}_full", full)
        return _as_original_type(tensors, _dequeue(queue, batch_size, allow_smaller_final_batch, scope))


def batch(tensors: Any, batch_size: TensorLike, num_threads: int = 1, capacity: int = 32, enqueue_many: bool = False,
          shapes: Sequence[Any] | None = None, dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
          shared_name: str | None = None, name: str | None = None) -> Any:
    """Batches of ``batch_size`` elements of ``tensors`` (a list or dict), filled by ``num_threads`` threads.

    Args:
        dynamic_pad: elements may differ in the dimensions their static shape leaves unknown; each batch is
            padded with zeros to its largest element (TF's ``PaddingFIFOQueue``).
    Returns:
        the batched tensors (dimension 0 of size ``batch_size``; unknown with ``allow_smaller_final_batch``,
        which lets the last batch be smaller when the input ends); one tensor for a one-element list, as TF.
    Raises:
        ValueError: no tensors, a tensor of unknown rank, or (without ``dynamic_pad``) element shapes not fully
            defined (TF's wording).
    """
    tensor_list = _validate(_as_tensor_list(tensors), "batch")
    return _fifo_batch(tensors, [tensor_list], batch_size, num_threads, capacity, enqueue_many, shapes,
                       dynamic_pad, allow_smaller_final_batch, shared_name, name, "batch")


def batch_join(tensors_list: Sequence[Any], batch_size: TensorLike, capacity: int = 32, enqueue_many: bool = False,
               shapes: Sequence[Any] | None = None, dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
               shared_name: str | None = None, name: str | None = None) -> Any:
    """Like :func:`batch`, from several lists of tensors (one enqueue thread each; e.g. one reader per file).

    Raises:
        TypeError: the lists' dtypes differ (TF's wording); ValueError: as :func:`batch`.
    """
    tensor_list_list = _validate_join(tensors_list)
    return _fifo_batch(tensors_list[0], tensor_list_list, batch_size, 1, capacity, enqueue_many, shapes,
                       dynamic_pad, allow_smaller_final_batch, shared_name, name, "batch_join")


def shuffle_batch(tensors: Any, batch_size: TensorLike, capacity: int, min_after_dequeue: int, num_threads: int = 1,
                  seed: int | None = None, enqueue_many: bool = False, shapes: Sequence[Any] | None = None,
                  allow_smaller_final_batch: bool = False, shared_name: str | None = None,
                  name: str | None = None) -> Any:
    """Random batches of ``tensors``: elements go through a RandomShuffleQueue holding at least
    ``min_after_dequeue`` after each dequeue (until the input ends), so a batch mixes that many.

    Raises:
        ValueError: ``capacity <= min_after_dequeue`` (TF's wording), or as :func:`batch`.
    """
    tensor_list = _validate(_as_tensor_list(tensors), "shuffle_batch")
    return _shuffle_batch(tensors, [tensor_list], batch_size, num_threads, capacity, min_after_dequeue, seed,
                          enqueue_many, shapes, allow_smaller_final_batch, shared_name, name, "shuffle_batch")


def shuffle_batch_join(tensors_list: Sequence[Any], batch_size: TensorLike, capacity: int, min_after_dequeue: int,
                       seed: int | None = None, enqueue_many: bool = False, shapes: Sequence[Any] | None = None,
                       allow_smaller_final_batch: bool = False, shared_name: str | None = None,
                       name: str | None = None) -> Any:
    """Like :func:`shuffle_batch`, from several lists of tensors (one enqueue thread each)."""
    tensor_list_list = _validate_join(tensors_list)
    return _shuffle_batch(tensors_list[0], tensor_list_list, batch_size, 1, capacity, min_after_dequeue, seed,
                          enqueue_many, shapes, allow_smaller_final_batch, shared_name, name,
                          "shuffle_batch_join")
