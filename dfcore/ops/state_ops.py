"""Variable state ops: ``VariableV2``, ``Assign``, ``AssignAdd``, ``AssignSub``,
``IsVariableInitialized``, ``CountUpTo``.

Source: ``tensorflow/core/ops/state_ops.cc`` and ``python/ops/state_ops.py``.
``VariableV2`` outputs a reference (dtype ``*_ref``) into the session's
variable store; the update ops stage their writes in the step's transaction
(see :mod:`dfcore.runtime.variable_store`) and output the new value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from . import common_shapes
from .op_util import apply_op1

if TYPE_CHECKING:
    from ..framework.tensor import Tensor
    from ..framework.tensor_like import DTypeLike, TensorLike

registry.mark_stateful("VariableV2", "Assign", "AssignAdd", "AssignSub", "IsVariableInitialized", "CountUpTo")
for _op_type in ("Assign", "AssignAdd", "AssignSub", "IsVariableInitialized", "CountUpTo"):
    registry.register_ref_inputs(_op_type, 0)
    registry.NotDifferentiable(_op_type)
registry.NotDifferentiable("VariableV2")


def variable_op_v2(shape: TensorLike, dtype: DTypeLike, name: str = "Variable", container: str = "",
                   shared_name: str = "") -> Tensor:
    attrs = {"shape": TensorShape(shape), "dtype": dtypes.as_dtype(dtype).base_dtype,
             "container": container, "shared_name": shared_name}
    return apply_op1("VariableV2", [], attrs, name)


def assign(ref: TensorLike, value: TensorLike, validate_shape: bool | None = None, use_locking: bool | None = None,
           name: str | None = None) -> Tensor:
    """Stage ``ref = value``; the output is the new value.

    Raises:
        ValueError: static shapes differ while ``validate_shape`` (TF's wording).
    """
    if hasattr(ref, "assign") and not _is_tensor(ref):
        return ref.assign(value, use_locking=use_locking, name=name)
    validate = True if validate_shape is None else bool(validate_shape)
    return apply_op1("Assign", [ref, value], {"validate_shape": validate, "use_locking": bool(use_locking)},
                     name or "Assign", dtype=ref.dtype.base_dtype)


def assign_add(ref: TensorLike, value: TensorLike, use_locking: bool | None = None, name: str | None = None) -> Tensor:
    """Stage ``ref += value``; the output is the new value."""
    if hasattr(ref, "assign_add") and not _is_tensor(ref):
        return ref.assign_add(value, use_locking=use_locking, name=name)
    return apply_op1("AssignAdd", [ref, value], {"use_locking": bool(use_locking)}, name or "AssignAdd",
                     dtype=ref.dtype.base_dtype)


def assign_sub(ref: TensorLike, value: TensorLike, use_locking: bool | None = None, name: str | None = None) -> Tensor:
    """Stage ``ref -= value``; the output is the new value."""
    if hasattr(ref, "assign_sub") and not _is_tensor(ref):
        return ref.assign_sub(value, use_locking=use_locking, name=name)
    return apply_op1("AssignSub", [ref, value], {"use_locking": bool(use_locking)}, name or "AssignSub",
                     dtype=ref.dtype.base_dtype)


def is_variable_initialized(ref: TensorLike, name: str | None = None) -> Tensor:
    """A bool scalar: whether the variable has a value in this session."""
    ref = getattr(ref, "_variable", ref)
    return apply_op1("IsVariableInitialized", [ref], {}, name or "IsVariableInitialized")


def count_up_to(ref: TensorLike, limit: TensorLike, name: str | None = None) -> Tensor:
    """The value of int32/int64 scalar variable ``ref`` before incrementing it (op ``CountUpTo``).

    Two steps counting at once both increment (dfcore's transactions redo the update) but may both see the
    same value, so the limit holds exactly for one counting thread (an input producer's runner).

    Raises (when run):
        OutOfRangeError: the value already reached ``limit`` (TF's wording: ``Reached limit of <limit>``);
        FailedPreconditionError: the variable is uninitialized.

    Source: ``tensorflow/python/ops/state_ops.py``, ``core/kernels/count_up_to_op.cc``.
    """
    ref = getattr(ref, "_variable", ref)
    return apply_op1("CountUpTo", [ref], {"limit": int(limit)}, name or "CountUpTo")


def _is_tensor(value):
    from ..framework.tensor import Tensor

    return isinstance(value, Tensor)


# -- shapes ---------------------------------------------------------------------
@registry.RegisterShape("VariableV2")
def _variable_shape(op):
    return [(op.get_attr("dtype")._as_ref, op.get_attr("shape"))]


def _check_ref(op):
    ref = op.inputs[0]
    if not ref.dtype.is_ref:
        raise TypeError(f"'{op.type}' Op requires that input 'ref' be a mutable tensor (e.g.: a tf.Variable)")
    value = op.inputs[1]
    if value.dtype.base_dtype is not ref.dtype.base_dtype:
        raise TypeError(
            f"Input 'value' of '{op.type}' Op has type {value.dtype.base_dtype.name} that does not match type "
            f"{ref.dtype.base_dtype.name} of argument 'ref'."
        )
    return ref, value


@registry.RegisterShape("Assign")
def _assign_shape(op):
    ref, value = _check_ref(op)
    if op.get_attr("validate_shape"):
        if not ref.shape.is_compatible_with(value.shape):
            raise common_shapes.shape_error(
                op, f"Shapes must be equal rank, but are {ref.shape.ndims} and {value.shape.ndims}"
                if ref.shape.ndims != value.shape.ndims else "Dimensions must be equal")
        return [(ref.dtype.base_dtype, ref.shape.merge_with(value.shape))]
    return [(ref.dtype.base_dtype, value.shape)]


@registry.RegisterShape("AssignAdd")
@registry.RegisterShape("AssignSub")
def _assign_update_shape(op):
    ref, value = _check_ref(op)
    if not ref.shape.is_compatible_with(value.shape):
        raise common_shapes.shape_error(op, "Dimensions must be equal")
    return [(ref.dtype.base_dtype, ref.shape)]


registry.RegisterShape("IsVariableInitialized")(common_shapes.scalar_of(dtypes.bool))


@registry.RegisterShape("CountUpTo")
def _count_up_to_shape(op):
    ref = op.inputs[0]
    if not ref.dtype.is_ref or ref.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"'CountUpTo' Op requires that input 'ref' be a mutable int32 or int64 tensor, got "
                        f"{ref.dtype.name}")
    if not ref.shape.is_compatible_with(TensorShape([])):
        raise common_shapes.shape_error(op, f"Shape must be rank 0 but is rank {ref.shape.ndims}")
    return [(ref.dtype.base_dtype, TensorShape([]))]


# -- kernels --------------------------------------------------------------------
@registry.RegisterArrayKernel("VariableV2", needs_context=True)
def _variable_kernel(op, backend):
    key = op.get_attr("shared_name") or op.name

    def compute(ctx):  # on a cluster the key names the task owning ctx.device too
        return ctx.txn.ref(ctx.resources.variable_key(key, ctx.device))

    return compute


@registry.RegisterArrayKernel("Assign", needs_context=True)
def _assign_kernel(op, backend):
    """The variable keeps its own copy, an array of its device's backend."""
    validate, xp = op.get_attr("validate_shape"), backend.xp
    dtype = backend.dtype(op.inputs[0].dtype.as_numpy_dtype)

    def compute(ctx, ref, value):
        new = xp.asarray(value, dtype=dtype, copy=True)
        if validate and ctx.txn.is_initialized(ref):
            old = ctx.txn.read(ref)
            if old.shape != new.shape:
                raise errors.InvalidArgumentError(
                    None, None,
                    f"Assign requires shapes of both tensors to match. lhs shape= {list(old.shape)} rhs shape= "
                    f"{list(new.shape)}")
        return ctx.txn.write(ref, new)

    return compute


def _update_kernel(name):
    def factory(op, backend):
        xp = backend.xp
        fn, dtype = getattr(xp, name), backend.dtype(op.inputs[0].dtype.as_numpy_dtype)

        def compute(ctx, ref, value):
            new = xp.asarray(fn(ctx.txn.read(ref), value), dtype=dtype)
            return ctx.txn.write(ref, new, redo=lambda current: xp.asarray(fn(current, value), dtype=dtype))

        return compute

    return factory


registry.RegisterArrayKernel("AssignAdd", needs_context=True)(_update_kernel("add"))
registry.RegisterArrayKernel("AssignSub", needs_context=True)(_update_kernel("subtract"))


@registry.RegisterArrayKernel("IsVariableInitialized", needs_context=True)
def _is_initialized_kernel(op, backend):
    return lambda ctx, ref: backend.from_host(np.bool_(ctx.txn.is_initialized(ref)))


@registry.RegisterKernel("CountUpTo", needs_context=True)
def _count_up_to_kernel(op):
    limit = op.get_attr("limit")

    def compute(ctx, ref):
        before = ctx.txn.read(ref)
        if before >= limit:
            raise errors.OutOfRangeError(None, None, f"Reached limit of {limit}")
        ctx.txn.write(ref, before + 1, redo=lambda current: current + 1)
        return np.array(before, copy=True)

    return compute
