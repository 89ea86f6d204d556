"""What a kernel's exception becomes: the one place the executor turns them into ``OpError`` s.

Source: TF's ``OpKernelContext::allocate_tensor`` (``core/framework/op_kernel.cc``: ``OOM when
allocating tensor with shape[...] and type ... on ... by allocator ...``) and the node suffix
``[[node <name>]]`` TF's executor appends to an op's error.

* an ``OpError`` keeps its class and gains the node suffix;
* an allocation failure — numpy's ``MemoryError``, or its ``ValueError`` for a size no index
  can count (``array is too big``, ``Maximum allowed size exceeded``) — is a
  ``ResourceExhaustedError`` in TF's OOM wording: numpy's shape and dtype when it gives them,
  else the op's static output shape (``?`` where unknown) and dtype;
* numpy's ``ValueError``/``TypeError``/``IndexError``/``ArithmeticError`` (a runtime shape
  mismatch, say) is an ``InvalidArgumentError`` naming the op, its type and input shapes;
* anything else is an ``InternalError`` (a kernel bug) naming the op, so the step still ends
  on every device instead of losing the exception on a pool thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..framework import dtypes
from ..framework.tensor_shape import TensorShape
from .device_set import allocator_name

if TYPE_CHECKING:
    from .compiled_partition import CompiledNode

_NUMPY_SIZE_ERRORS = ("array is too big", "Maximum allowed size exceeded")


def kernel_error(error: Exception, node: CompiledNode, args: Sequence[Any], device: str) -> errors.OpError:
    """The step's error for ``error``, raised by the kernel of ``node`` (a CompiledNode) given ``args`` on
    ``device``."""
    if isinstance(error, errors.OpError):
        return with_node(error, node)
    if isinstance(error, MemoryError) or (
            isinstance(error, ValueError) and any(text in str(error) for text in _NUMPY_SIZE_ERRORS)):
        return _out_of_memory(error, node, args, device)
    if isinstance(error, (ValueError, TypeError, IndexError, ArithmeticError, np.linalg.LinAlgError)):
        return errors.InvalidArgumentError(
            None, _op(node), f"{error} ({_describe(node, args)})\n\t [[node {node.name}]]")
    return errors.InternalError(
        None, _op(node), f"{type(error).__name__}: {error} ({_describe(node, args)})\n\t [[node {node.name}]]")


def async_error(error: Any, node: CompiledNode) -> errors.OpError:
    """What an asynchronous kernel of ``node`` reported through its ``done`` callback, as the step's error:
    an ``OpError`` with the node suffix (anything else becomes an ``InternalError``)."""
    if not isinstance(error, errors.OpError):
        error = errors.InternalError(None, None, str(error))
    return with_node(error, node)


def with_node(error: errors.OpError, node: CompiledNode) -> errors.OpError:
    """``error`` with TF's node suffix ``[[node <name>]]`` (unchanged if it has one)."""
    if "[[node" in error.message:
        return error
    source = node.source
    node_def = getattr(source, "node_def", None)
    return type(error)(node_def, _op(node), f"{error.message}\n\t [[node {node.name}]]")


def _out_of_memory(error, node, args, device):
    shape, dtype = getattr(error, "shape", None), getattr(error, "dtype", None)
    if shape is None:
        outputs = getattr(node.source, "outputs", ())
        shape, dtype = (outputs[0].shape, outputs[0].dtype) if outputs else (TensorShape(None), dtype)
    type_name = dtypes.tf_type_name(dtype) if dtype is not None else "unknown"
    return errors.ResourceExhaustedError(
        None, _op(node),
        f"{oom_message(shape, type_name, device)} ({_describe(node, args)}; numpy: {error}). Make the tensor smaller "
        f"(a smaller batch or shape), or place the op on a device with more memory.\n\t [[node {node.name}]]")


def oom_message(shape: Any, type_name: str, device: str) -> str:
    """TF's ``OOM when allocating tensor with shape[2,3] and type float on <device> by allocator <name>``
    (``op_kernel.cc``); ``shape`` anything :class:`TensorShape` takes, ``type_name`` as ``dtypes.tf_type_name``."""
    return (f"OOM when allocating tensor with shape{TensorShape(shape).tf_str()} and type {type_name} on {device} "
            f"by allocator {allocator_name(device)}")


def _describe(node, args):
    shapes = ", ".join(_shape_str(a) for a in args)
    return f"op '{node.name}' of type {node.op_type} with input shapes: {shapes}"


def _op(node):
    source = node.source
    return source if hasattr(source, "graph") else getattr(source, "original", None)


def _shape_str(value):
    shape = getattr(value, "shape", None)
    return "[" + ",".join(str(d) for d in shape) + "]" if shape is not None else type(value).__name__
