"""``EagerVariable``: what ``tf.Variable(...)`` makes while executing eagerly.

Source: ``tensorflow/python/ops/resource_variable_ops.py`` (``ResourceVariable``: eager variables are
resource variables; every read returns the current value, ``assign*`` change it at once). Its handle is
the output of a ``VariableV2`` op run eagerly: a reference into the eager context's variable store, read
and written by the same ``Identity``/``Assign*``/``Apply*`` kernels graphs use. A ``tf.function`` that
uses the variable captures the handle as a ``VariableV2`` node with the same store key, and runs in the
same store, so eager code and the function see one value.
"""

from __future__ import annotations

from typing import Any

from ..framework import dtypes
from ..framework.tensor_conversion import convert_to_tensor
from ..ops import array_ops, state_ops
from ..ops.variables import Variable, register_eager_variable_class
from . import context as context_lib, tape as tape_lib
from .eager_tensor import EagerTensor


class EagerVariable(Variable):
    """A variable whose value is read and written immediately (made by ``tf.Variable`` in eager mode).

    Args:
        initial_value: a value, Tensor or callable returning one; its shape must be fully defined.
        trainable: watched by a ``GradientTape`` when read (``watch_accessed_variables``) and found by
            ``Optimizer.minimize``'s tape.
        name: the variable's name (default ``Variable``); a name in use gets ``_1``, ``_2`` … (TF eager
            variables may share a name; dfcore's name is their storage key, as in graph mode).
        dtype: the dtype to convert the initial value to.
    Raises:
        ValueError: no initial value, or a dtype that does not match a Tensor initial value.
    """

    _is_eager = True

    def __init__(self, initial_value=None, trainable=True, collections=None, validate_shape=True,
                 caching_device=None, name=None, dtype=None, expected_shape=None, constraint=None,
                 use_resource=None, synchronization=None, aggregation=None, import_scope=None, variable_def=None):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        ctx = context_lib.context()
        assert ctx is not None, "EagerVariable is made only while executing eagerly"
        if callable(initial_value):
            initial_value = initial_value()
        initial = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
        if dtype is not None and initial.dtype.base_dtype is not dtypes.as_dtype(dtype).base_dtype:
            raise ValueError(f"Initial value dtype {initial.dtype.name} does not match dtype "
                             f"{dtypes.as_dtype(dtype).name}")
        base = name or "Variable"
        scope = initial.graph.get_name_scope()
        full_name = f"{scope}/{base}" if scope else base
        key = ctx.variable_key(full_name)
        handle = state_ops.variable_op_v2(initial.shape, initial.dtype.base_dtype, name=key + "/", shared_name=key)
        assert isinstance(handle, EagerTensor), "ops run at once while executing eagerly"
        self._variable: EagerTensor = handle
        self._initializer_op = state_ops.assign(self._variable, initial, name="Assign").op
        self._initial_value = initial
        self._trainable = trainable
        self._constraint = constraint
        self._save_slice_info = None

    @property
    def handle(self) -> Any:
        """The EagerTensor holding the reference to the storage (TF's ``ResourceVariable.handle``)."""
        return self._variable

    @property
    def dtype(self):
        return self._variable.dtype.base_dtype

    def value(self):
        """The current value: a fresh read (an ``Identity`` of the handle, recorded by watching tapes)."""
        tape_lib.variable_accessed(self)
        return array_ops.identity(self._variable, name="read")

    read_value = value

    def numpy(self):
        """The current value as a numpy array (TF's ``ResourceVariable.numpy``)."""
        return self._variable.numpy()

    def assign(self, value, use_locking=False, name=None, read_value=True):
        """Set the value; while executing eagerly returns the variable, in a graph the op's output."""
        out = state_ops.assign(self._variable, value, use_locking=use_locking, name=name)
        return self if context_lib.executing_eagerly() else out

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        out = state_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)
        return self if context_lib.executing_eagerly() else out

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        out = state_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)
        return self if context_lib.executing_eagerly() else out

    def eval(self, session=None):
        return self.numpy()

    def __repr__(self):
        text = self._variable._numpy_text(True)
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, numpy={text}>"


register_eager_variable_class(EagerVariable)
