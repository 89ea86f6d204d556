"""``_FusedMatMul``: ``MatMul`` followed by ``BiasAdd`` and optionally ``Relu``, as one kernel.

Source: ``tensorflow/core/ops/math_ops.cc`` (``REGISTER_OP("_FusedMatMul")``) and
``core/kernels/matmul_op_fused.cc``. Only the graph optimizer's remapper creates it
(:mod:`dfcore.runtime.grappler.remapper`); it has no gradient, as in TF. Inputs ``a`` [m, k] (``transpose_a``:
[k, m]), ``b`` [k, n] (``transpose_b``: [n, k]) and ``num_args`` = 1 bias [n], all of dtype ``T`` (float16,
float32, float64); output [m, n] of ``T``. Attrs: ``fused_ops`` (``["BiasAdd"]`` or ``["BiasAdd", "Relu"]``),
``epsilon`` (unused by these fusions), ``transpose_a``, ``transpose_b``, ``T``. The kernel does exactly what
the three kernels it replaces do, in the same order (``matmul``, ``+ bias``, ``maximum(·, 0)``), so
its output is bit for bit theirs; an array kernel (:mod:`dfcore.backends`).

Raises (at run time): ``InvalidArgumentError`` when the bias length is not the output's last dimension
(``BiasAdd``'s wording).
"""

from .. import errors
from ..framework import registry
from ..framework.tensor_shape import TensorShape

FUSED_OPS = (("BiasAdd",), ("BiasAdd", "Relu"))


@registry.RegisterShape("_FusedMatMul")
def _fused_matmul_shape(op):
    a, b = op.inputs[0].shape, op.inputs[1].shape
    rows = (a.as_list() if a.ndims else [None, None])[1 if op.get_attr("transpose_a") else 0]
    cols = (b.as_list() if b.ndims else [None, None])[0 if op.get_attr("transpose_b") else 1]
    return [(op.inputs[0].dtype.base_dtype, TensorShape([rows, cols]))]


@registry.RegisterArrayKernel("_FusedMatMul")
def _fused_matmul_kernel(op, backend):
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    fused = tuple(op.get_attr("fused_ops"))
    if fused not in FUSED_OPS:
        raise errors.UnimplementedError(None, op, f"Fusion is not implemented: [{','.join(fused)}]")
    relu = fused == ("BiasAdd", "Relu")
    xp, matmul = backend.xp, backend.matmul
    zero = xp.zeros((), dtype=backend.dtype(op.get_attr("T").as_numpy_dtype))

    def compute(a, b, bias):
        product = matmul(a, b, ta, tb)
        if bias.shape != (product.shape[-1],):
            raise errors.InvalidArgumentError(
                None, op, f"Must provide as many biases as the last dimension of the input tensor: "
                f"[{','.join(map(str, bias.shape))}] vs. [{','.join(map(str, product.shape))}]")
        out = product + bias
        return xp.maximum(out, zero) if relu else out

    return compute
