"""``tf.py_func``: a Python function run as an op (``PyFunc`` / ``PyFuncStateless``).

Source: TF 1.15 ``tensorflow/python/ops/script_ops.py`` (``FuncRegistry``: the function is
kept in a process-wide registry under a ``token`` string attr) and
``core/kernels/py_func_op.cc`` / ``python/lib/core/py_func.cc`` (how a Python exception
becomes a status). The op runs on the CPU only (``placer.CPU_ONLY_OP_TYPES``); its outputs have
unknown shapes unless the caller sets them. It is the usual stand-in for work the graph cannot express, e.g. a JPEG
decoder in an input pipeline (``dataset.map(lambda x: tf.py_func(decode, [x], tf.float32))``).
"""

import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from .op_util import apply_op

__all__ = ["py_func"]

_FUNCS: dict[str, Callable] = {}
_LOCK = threading.Lock()
_TOKENS = itertools.count()

# TF's py_func.cc: which Python exceptions become which status (everything else: UnknownError).
_STATUS = ((ValueError, errors.InvalidArgumentError), (TypeError, errors.InvalidArgumentError),
           (StopIteration, errors.OutOfRangeError), (IndexError, errors.OutOfRangeError),
           (MemoryError, errors.ResourceExhaustedError), (NotImplementedError, errors.UnimplementedError))


def py_func(func: Callable, inp: Sequence[Any], Tout: Any, stateful: bool = True, name: str | None = None) -> Any:
    """Wrap ``func`` (numpy arrays in, numpy arrays out) as an op of the graph.

    Args:
        func: called with one numpy array per input; returns one value, or a list for a list ``Tout``.
        inp: the input Tensors (or convertible values).
        Tout: one ``tf.DType`` (then one output Tensor is returned) or a list of them (a list of Tensors).
        stateful: False makes a ``PyFuncStateless`` op (dfcore runs both alike).

    Returns:
        A Tensor (``Tout`` a DType) or a list of Tensors, of unknown shape.

    Raises (at run time):
        InvalidArgumentError: ``func`` raised ValueError or TypeError, or returned the wrong number of values;
        OutOfRangeError (StopIteration, IndexError), ResourceExhaustedError (MemoryError),
        UnimplementedError (NotImplementedError), UnknownError (anything else): the message is
        ``"<ExceptionType>: <message>"`` as in TF.
    """
    single = isinstance(Tout, dtypes.DType) or not isinstance(Tout, (list, tuple))
    types = [dtypes.as_dtype(t) for t in ([Tout] if single else Tout)]
    with _LOCK:
        token = f"pyfunc_{next(_TOKENS)}"
        _FUNCS[token] = func
    op = apply_op("PyFunc" if stateful else "PyFuncStateless", list(inp), {"token": token, "Tout": types},
                  name or "PyFunc")
    return op.outputs[0] if single else list(op.outputs)


def _shape(op):
    return [(t, TensorShape(None)) for t in op.get_attr("Tout")]


def _kernel(op):
    token, types = op.get_attr("token"), op.get_attr("Tout")

    def compute(*inputs):
        func = _FUNCS.get(token)
        if func is None:
            raise errors.InvalidArgumentError(None, op, f"Could not find callback with key={token} in the registry.")
        try:
            result = func(*inputs)
        except Exception as error:  # a user function's exception becomes the op's status, as TF
            status = next((s for kind, s in _STATUS if isinstance(error, kind)), errors.UnknownError)
            raise status(None, op, f"{type(error).__name__}: {error}") from error
        values = [result] if len(types) == 1 and not isinstance(result, (list, tuple)) else list(result)
        if len(values) != len(types):
            raise errors.InvalidArgumentError(
                None, op, f"pyfunc_{token} returns {len(values)} values, but expects to see {len(types)} values.")
        outputs = tuple(np.asarray(v, dtype=t.as_numpy_dtype) for v, t in zip(values, types))
        return outputs[0] if len(outputs) == 1 else outputs

    return compute


for _op_type in ("PyFunc", "PyFuncStateless"):
    registry.RegisterShape(_op_type)(_shape)
    registry.RegisterKernel(_op_type)(_kernel)
    registry.NotDifferentiable(_op_type)
registry.mark_stateful("PyFunc")
