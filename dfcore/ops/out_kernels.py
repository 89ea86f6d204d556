"""Kernels that write into buffers of the device's allocator (``out=``), for the ops a training step of the
lessons' models runs most: ``MatMul``, ``BiasAdd``, ``Relu``, ``ReluGrad``, elementwise arithmetic,
``Sum``/``Mean``, ``OnesLike``/``ZerosLike`` and ``SparseSoftmaxCrossEntropyWithLogits``
(``ApplyGradientDescent``'s lives with the other update ops, :mod:`dfcore.ops.training_ops`).

Source: TF's kernels ask their ``OpKernelContext`` for output buffers (``allocate_output``) from the
device's allocator (``core/framework/op_kernel.h``). Each function here gives its op's registered kernel
results bit for bit (same numpy ufuncs, same order, same dtypes) and falls back to that kernel for any
case it does not handle (mixed dtypes, 0-d results, an input it would have to validate); temporaries come
from the allocator too and go back to it at once. See :mod:`dfcore.runtime.allocator`.
"""

from typing import Any

import numpy as np

from ..framework import registry
from .math_ops_binary import BINARY

__all__ = []


def _plain(op):
    return registry.kernel(op.type).build(op)


# -- elementwise binary ops ---------------------------------------------------------------------------------
_UFUNCS = {"Add": np.add, "AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.true_divide,
           "Maximum": np.maximum, "Minimum": np.minimum}


def _binary_factory(ufunc, quiet):
    def factory(op):
        plain = _plain(op)

        def compute(allocator, x, y):
            if type(x) is not np.ndarray or type(y) is not np.ndarray or x.dtype != y.dtype:
                return plain(x, y)
            shape = x.shape
            if shape != y.shape and not (y.ndim == 1 and shape and shape[-1] == y.shape[0]):  # else: a bias
                shape = np.broadcast_shapes(shape, y.shape)
            if not shape:
                return plain(x, y)
            out = allocator.allocate(shape, x.dtype)
            if quiet:
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    return ufunc(x, y, out=out)
            return ufunc(x, y, out=out)

        return compute

    return factory


for _op_type, _ufunc in _UFUNCS.items():
    assert _op_type in BINARY, _op_type
    registry.RegisterOutKernel(_op_type)(_binary_factory(_ufunc, quiet=_op_type == "RealDiv"))


# -- MatMul, BiasAdd ------------------------------------------------------------------------------------------
@registry.RegisterOutKernel("MatMul")
def _matmul(op):
    plain = _plain(op)
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")

    def compute(allocator, a, b):
        if type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim != 2 or b.ndim != 2 \
                or a.dtype != b.dtype:
            return plain(a, b)
        a = a.T if ta else a
        b = b.T if tb else b
        if a.shape[1] != b.shape[0]:
            return plain(a.T if ta else a, b.T if tb else b)  # the plain kernel raises numpy's error
        return np.matmul(a, b, out=allocator.allocate((a.shape[0], b.shape[1]), a.dtype))

    return compute


@registry.RegisterOutKernel("BiasAdd")
def _bias_add(op):
    plain = _plain(op)
    last = not op.get_attr("data_format").startswith("NC")

    def compute(allocator, value, bias):
        if (type(value) is not np.ndarray or type(bias) is not np.ndarray or value.dtype != bias.dtype
                or not last or value.ndim < 1 or bias.ndim != 1 or value.shape[-1] != bias.shape[0]):
            return plain(value, bias)
        return np.add(value, bias, out=allocator.allocate(value.shape, value.dtype))

    return compute


_BOOL = np.dtype(np.bool_)


# -- activations --------------------------------------------------------------------------------------------
@registry.RegisterOutKernel("Relu")
def _relu(op):
    plain = _plain(op)

    def compute(allocator, x):
        if type(x) is not np.ndarray or not x.shape:
            return plain(x)
        return np.maximum(x, np.zeros((), x.dtype), out=allocator.allocate(x.shape, x.dtype))

    return compute


@registry.RegisterOutKernel("ReluGrad")
def _relu_grad(op):
    plain = _plain(op)

    def compute(allocator, g, y):
        if type(g) is not np.ndarray or type(y) is not np.ndarray or g.shape != y.shape or not g.shape:
            return plain(g, y)
        mask = np.greater(y, 0, out=allocator.allocate(y.shape, _BOOL))
        with np.errstate(invalid="ignore"):  # inf * 0 is NaN, as in TF, without numpy's warning
            out = np.multiply(g, mask, out=allocator.allocate(g.shape, g.dtype))
        allocator.deallocate(mask)
        return out

    return compute


# -- reductions, *Like ------------------------------------------------------------------------------------------
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _reduction(fn):
    def factory(op):
        plain = _plain(op)
        keep = op.get_attr("keep_dims")
        shapes: dict = {}  # (input shape, axes bytes) -> (axis, output shape), or None: the plain kernel's case

        def compute(allocator, x, axes):
            if type(x) is not np.ndarray or x.dtype not in _FLOATS or x.size == 0:
                return plain(x, axes)
            key = (x.shape, np.asarray(axes).tobytes())
            found = shapes.get(key, False)
            if found is False:
                found = shapes[key] = _reduced(x.shape, axes, keep)
            if found is None:
                return plain(x, axes)  # the plain kernel raises numpy's error
            axis, shape = found
            return fn(x, axis=axis, keepdims=keep, out=allocator.allocate(shape, x.dtype))

        return compute

    return factory


def _reduced(in_shape, axes, keep):
    """``(axis tuple, output shape)`` of a reduction, or None for axes numpy would reject."""
    ndim = len(in_shape)
    axis = tuple(int(a) for a in np.reshape(axes, -1))
    if any(not -ndim <= a < ndim for a in axis) or len({a % ndim for a in axis}) != len(axis):
        return None
    reduced = {a % ndim for a in axis}
    return axis, tuple(1 if i in reduced else d for i, d in enumerate(in_shape) if keep or i not in reduced)


registry.RegisterOutKernel("Sum")(_reduction(np.add.reduce))  # np.sum without its Python wrapper
registry.RegisterOutKernel("Mean")(_reduction(np.mean))


def _like(value):
    def factory(op):
        dtype = np.dtype(op.get_attr("dtype").as_numpy_dtype)

        def compute(allocator, x):
            out = allocator.allocate(tuple(np.shape(x)), dtype)
            out.fill(value)
            return out

        return compute

    return factory


registry.RegisterOutKernel("OnesLike")(_like(1))
registry.RegisterOutKernel("ZerosLike")(_like(0))


# -- softmax cross-entropy ----------------------------------------------------------------------------------
@registry.RegisterOutKernel("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent(op):
    plain = _plain(op)
    rows_of: dict[Any, Any] = {}

    def compute(allocator, features, labels):
        if (type(features) is not np.ndarray or features.dtype not in _FLOATS or features.ndim != 2
                or type(labels) is not np.ndarray or labels.ndim != 1 or labels.shape[0] != features.shape[0]
                or not labels.size or labels.min() < 0 or labels.max() >= features.shape[1]):
            return plain(features, labels)  # it validates (and raises TF's errors)
        n, dtype = features.shape[0], features.dtype
        rows = rows_of.get(n)
        if rows is None:
            rows = rows_of[n] = np.arange(n)
        row = allocator.allocate((n, 1), dtype)
        log_probs = allocator.allocate(features.shape, dtype)
        backprop = allocator.allocate(features.shape, dtype)
        with np.errstate(invalid="ignore"):  # inf - inf (a row holding inf): nan, silently (TF)
            np.maximum.reduce(features, axis=-1, keepdims=True, out=row)
            np.subtract(features, row, out=log_probs)  # shifted
            np.exp(log_probs, out=backprop)
            np.add.reduce(backprop, axis=-1, keepdims=True, out=row)
            np.log(row, out=row)
            np.subtract(log_probs, row, out=log_probs)
        np.exp(log_probs, out=backprop)
        backprop[rows, labels] -= 1
        loss = np.negative(log_probs[rows, labels], out=allocator.allocate((n,), dtype))
        allocator.deallocate(row)
        allocator.deallocate(log_probs)
        return loss, backprop

    return compute
