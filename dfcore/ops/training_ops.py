"""Fused optimizer update ops: ``ApplyGradientDescent``, ``ApplyMomentum``, ``ApplyAdam``, and the
machinery every ``Apply*`` op shares (:func:`register_update`, :func:`apply_update`).

Source: ``tensorflow/core/ops/training_ops.cc`` (signatures, shape functions)
and ``core/kernels/training_ops.cc`` (update formulas). Each op takes its
variable and slot variables as references (inputs ``var``, ``accum``, ``m``,
``v``), reads them through the step's transaction, stages the new values and
outputs the new value of ``var``. The adaptive optimizers' ops (Adagrad, RMSProp,
Adadelta, Ftrl) live in :mod:`dfcore.ops.training_ops_adaptive` and register the same way.

Concurrent steps: every staged write carries a ``redo`` that recomputes the
whole update from the newest committed values (slots are staged before
``var``, so the ``var`` redo sees the redone slots), which is TF's
``use_locking=True`` behaviour: updates are serialized, none is lost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import backends, errors
from ..framework import registry
from ..framework.graph import graph_of
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from . import common_shapes, training_blocks
from .op_util import apply_op

if TYPE_CHECKING:
    from ..framework.tensor_like import TensorLike

__all__ = []


class _UpdateDef:
    """The inputs of one Apply* op: names, how many leading refs, which are scalars."""

    def __init__(self, names, num_refs, scalars, fn):
        self.names = names
        self.num_refs = num_refs
        self.scalars = frozenset(scalars)
        self.fn = fn


def _gradient_descent(attrs, backend, var, alpha, delta):
    xp = backend.xp
    new = xp.asarray(xp.multiply(delta, alpha))  # one fresh buffer (0-d for a scalar var), then the new value in it
    return (xp.subtract(var, new, out=new) if backend.supports_out else xp.subtract(var, new),)


def _momentum(attrs, backend, var, accum, lr, grad, momentum):
    if training_blocks.applies(backend, training_blocks.OUT_FORMS_BYTES, var, accum, grad):
        return training_blocks.momentum(var, accum, lr, grad, momentum, attrs["use_nesterov"])
    accum = accum * momentum + grad
    if attrs["use_nesterov"]:
        var = var - (grad * lr + accum * momentum * lr)
    else:
        var = var - accum * lr
    return var, accum


def _adam(attrs, backend, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
    sqrt = backend.xp.sqrt
    alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
    if training_blocks.applies(backend, training_blocks.OUT_FORMS_BYTES, var, m, v, grad):
        return training_blocks.adam(var, m, v, alpha, beta1, beta2, epsilon, grad, attrs["use_nesterov"])
    m = m + (grad - m) * (1 - beta1)
    v = v + (grad * grad - v) * (1 - beta2)
    if attrs["use_nesterov"]:
        var = var - (grad * (1 - beta1) + beta1 * m) * alpha / (sqrt(v) + epsilon)
    else:
        var = var - m * alpha / (sqrt(v) + epsilon)
    return var, m, v


_UPDATES: dict[str, Any] = {}
NUMPY = backends.get(backends.NUMPY)  # the allocator's out= kernel below runs on numpy only


def register_update(op_type: str, names: Sequence[str], num_refs: int, scalars: Sequence[str],
                    fn: Callable[..., Any]) -> None:
    """Register the ``Apply*`` op ``op_type``: shape function, kernel, stateful, ref inputs, no gradient.

    Args:
        names: the op's input names in order (``("var", "accum", "lr", "grad")``).
        num_refs: how many leading inputs are variable references (``var`` and the slots).
        scalars: the names of the inputs that must be scalars.
        fn: ``fn(attrs, backend, *values) -> (new var, new slot, ...)`` on arrays of ``backend``
            (:mod:`dfcore.backends`; the array API through ``backend.xp``), in ``names`` order.
    """
    _UPDATES[op_type] = _UpdateDef(tuple(names), num_refs, scalars, fn)
    registry.RegisterShape(op_type)(_shape_fn)
    registry.RegisterArrayKernel(op_type, needs_context=True)(_kernel_factory)
    registry.mark_stateful(op_type)
    registry.register_ref_inputs(op_type, *range(num_refs))
    registry.NotDifferentiable(op_type)


# -- constructors -----------------------------------------------------------------
def apply_gradient_descent(var: TensorLike, alpha: TensorLike, delta: TensorLike, use_locking: bool = False,
                           name: str | None = None) -> Tensor:
    """``var -= alpha * delta``; returns the new value (shape and dtype of ``var``).

    Args:
        var: a variable reference; ``alpha`` a scalar; ``delta`` the shape of ``var``.
    Raises:
        TypeError: ``var`` is not a reference, or dtypes differ.
        InvalidArgumentError: ``alpha`` is not a scalar or ``delta``'s shape differs.
    Source: TF ``training_ops.cc`` (ApplyGradientDescent).
    """
    return apply_update("ApplyGradientDescent", [var, alpha, delta], {"use_locking": bool(use_locking)}, name)


def apply_momentum(var: TensorLike, accum: TensorLike, lr: TensorLike, grad: TensorLike, momentum: TensorLike,
                   use_locking: bool = False, use_nesterov: bool = False, name: str | None = None) -> Tensor:
    """``accum = accum * momentum + grad``; ``var -= lr * accum`` (Nesterov:
    ``var -= lr * grad + lr * momentum * accum``); returns the new ``var``.

    Raises:
        TypeError / InvalidArgumentError: as :func:`apply_gradient_descent`.
    Source: TF ``training_ops.cc`` (ApplyMomentum).
    """
    attrs = {"use_locking": bool(use_locking), "use_nesterov": bool(use_nesterov)}
    return apply_update("ApplyMomentum", [var, accum, lr, grad, momentum], attrs, name)


def apply_adam(var: TensorLike, m: TensorLike, v: TensorLike, beta1_power: TensorLike, beta2_power: TensorLike,
               lr: TensorLike, beta1: TensorLike, beta2: TensorLike, epsilon: TensorLike, grad: TensorLike,
               use_locking: bool = False, use_nesterov: bool = False, name: str | None = None) -> Tensor:
    """Adam: ``lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)``,
    ``m += (grad - m) * (1 - beta1)``, ``v += (grad² - v) * (1 - beta2)``,
    ``var -= lr_t * m / (sqrt(v) + epsilon)`` (Nesterov uses
    ``grad * (1 - beta1) + beta1 * m`` for ``m``); returns the new ``var``.

    Raises:
        TypeError / InvalidArgumentError: as :func:`apply_gradient_descent`.
    Source: TF ``training_ops.cc`` (ApplyAdam).
    """
    attrs = {"use_locking": bool(use_locking), "use_nesterov": bool(use_nesterov)}
    return apply_update("ApplyAdam", [var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad], attrs,
                        name)


def apply_update(op_type: str, inputs: Sequence[TensorLike], attrs: dict[str, Any], name: str | None) -> Tensor:
    """Create the registered ``Apply*`` op ``op_type``; returns its output (the new ``var``).

    The leading ``num_refs`` inputs (Variables or refs) are taken by reference; the others are
    converted to the variable's dtype unless they are Tensors already. ``attrs`` gains ``T``.
    """
    num_refs = _UPDATES[op_type].num_refs
    refs = [x._ref() if hasattr(x, "_ref") else x for x in inputs[:num_refs]]
    dtype = refs[0].dtype.base_dtype
    attrs["T"] = dtype
    with graph_of(inputs).as_default():
        others = [x if isinstance(x, Tensor) else convert_to_tensor(x, dtype=dtype) for x in inputs[num_refs:]]
    return apply_op(op_type, refs + others, attrs, name or op_type).outputs[0]


# -- registration -----------------------------------------------------------------
def _shape_fn(op):
    update = _UPDATES[op.type]
    var = op.inputs[0]
    dtype = var.dtype.base_dtype
    for i, (name, tensor) in enumerate(zip(update.names, op.inputs)):
        if i < update.num_refs and not tensor.dtype.is_ref:
            raise TypeError(f"'{op.type}' Op requires that input '{name}' be a mutable tensor (e.g.: a tf.Variable)")
        if tensor.dtype.base_dtype is not dtype:
            raise TypeError(f"Input '{name}' of '{op.type}' Op has type {tensor.dtype.base_dtype.name} that does "
                            f"not match type {dtype.name} of argument 'var'.")
    shape = var.shape
    for name, tensor in zip(update.names[1:], op.inputs[1:]):
        if name in update.scalars:
            if tensor.shape.ndims not in (None, 0):
                raise common_shapes.shape_error(op, f"Shape must be rank 0 but is rank {tensor.shape.ndims}")
        elif not shape.is_compatible_with(tensor.shape):
            raise common_shapes.shape_error(op, _merge_message(shape, tensor.shape))
        else:
            shape = shape.merge_with(tensor.shape)
    return [(dtype, shape)]


def _merge_message(a, b):
    if a.ndims != b.ndims:
        return f"Shapes must be equal rank, but are {a.ndims} and {b.ndims}"
    for i, (x, y) in enumerate(zip(a.as_list(), b.as_list())):
        if x is not None and y is not None and x != y:
            return (f"Dimension {i} in both shapes must be equal, but are {x} and {y}. "
                    f"Shapes are {a.tf_str()} and {b.tf_str()}.")
    return "Shapes are incompatible"


def _kernel_factory(op, backend):
    """The ``Apply*`` kernel: reads the refs through the step's transaction, checks the runtime shapes, stages the
    new values (slots first, each with its redo) and returns the new ``var``. On numpy the scalar inputs reach the
    update as numpy scalars: an operation between two of them (``1 - beta1``, Adam's ``alpha``) costs 0.13 us, 1.7 us
    between 0-d arrays (the same float operation, so the same bits; this project's 2-core EPYC, load 1.6)."""
    update = _UPDATES[op.type]
    n = update.num_refs
    dtype = backend.dtype(op.inputs[0].dtype.as_numpy_dtype)
    attrs = op.attrs
    fn = update.fn
    convert = _converter(backend, dtype)
    unwrap = backend.xp.asarray is np.asarray
    scalars = tuple(i for i, name in enumerate(update.names) if name in update.scalars)
    shaped = tuple(i for i, name in enumerate(update.names) if i and name not in update.scalars)
    order = (*range(1, n), 0)  # slots first, var last: see the module docstring

    def compute(ctx, *args):
        txn = ctx.txn
        refs = args[:n]
        values = [txn.read(ref) for ref in refs]
        values += [convert(x) for x in args[n:]]
        shape = values[0].shape
        for i in shaped:
            if values[i].shape != shape:
                _check_runtime_shapes(update, values[0], values[1:n], values[n:])
        for i in scalars:
            if values[i].ndim:
                _check_runtime_shapes(update, values[0], values[1:n], values[n:])
            if unwrap:
                values[i] = values[i][()]
        new = [convert(x) for x in fn(attrs, backend, *values)]
        run = (fn, attrs, backend, convert, values[:n], values[n:])
        for j in order:
            txn.write(refs[j], new[j], redo=partial(_redo, run, j))
        return new[0]

    return compute


def _converter(backend, dtype):
    """``x`` as an array of ``backend`` and ``dtype``: ``backend.xp.asarray(x, dtype=dtype)``, with numpy arrays
    of ``dtype`` passed through as they are (what ``asarray`` returns for them, a tenth of its 0.5 us)."""
    asarray = backend.xp.asarray
    if asarray is not np.asarray:
        return lambda x: asarray(x, dtype=dtype)
    ndarray = np.ndarray
    return lambda x: x if type(x) is ndarray and x.dtype == dtype else asarray(x, dtype=dtype)


def _redo(run, j, current):
    """Recompute ref ``j`` after a concurrent commit of ``current``: ``run`` is ``(fn, attrs, backend, convert,
    base, others)`` of the update, ``base`` collecting the newest values seen."""
    fn, attrs, backend, convert, base, others = run
    base[j] = current
    return convert(fn(attrs, backend, *base, *others)[j])


def _check_runtime_shapes(update, var, slots, others):
    """Raise TF's error for the first input (after ``var``) that is not a scalar where ``update`` wants one, or
    not of ``var``'s shape."""
    for name, value in zip(update.names[1:], list(slots) + others):
        if name in update.scalars:
            if value.ndim != 0:
                raise errors.InvalidArgumentError(None, None, f"{name} is not a scalar: {_shape_str(value)}")
        elif value.shape != var.shape:
            raise errors.InvalidArgumentError(
                None, None, f"var and {name} do not have the same shape{_shape_str(var)} {_shape_str(value)}")


def _shape_str(value):
    return "[" + ",".join(str(d) for d in value.shape) + "]"


register_update("ApplyGradientDescent", ("var", "alpha", "delta"), 1, ("alpha",), _gradient_descent)


@registry.RegisterOutKernel("ApplyGradientDescent", needs_context=True)
def _gradient_descent_out(op):
    """``ApplyGradientDescent`` writing the new ``var`` into a buffer of the device's allocator (as
    :func:`_gradient_descent`, bit for bit); the value it replaces goes back to the allocator once the step
    commits, if no reader holds it (see :mod:`dfcore.runtime.allocator`)."""
    update = _UPDATES[op.type]
    dtype = op.inputs[0].dtype.as_numpy_dtype
    attrs = op.attrs
    convert = _converter(NUMPY, NUMPY.dtype(dtype))

    def compute(ctx, allocator, ref, alpha, delta):
        others = [np.asarray(alpha, dtype=dtype), np.asarray(delta, dtype=dtype)]
        base = [ctx.txn.read(ref)]
        _check_runtime_shapes(update, base[0], [], others)
        new = training_blocks.gradient_descent_into(allocator.allocate(base[0].shape, base[0].dtype), base[0],
                                                    others[0], others[1])
        ctx.txn.write(ref, new, redo=partial(_redo, (update.fn, attrs, NUMPY, convert, base, others), 0),
                      retire=allocator.deallocate, done_with=(others[1],))
        return new

    return compute
register_update("ApplyMomentum", ("var", "accum", "lr", "grad", "momentum"), 2, ("lr", "momentum"), _momentum)
register_update("ApplyAdam", ("var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"),
                3, ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"), _adam)
