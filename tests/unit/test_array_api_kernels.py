"""The strict pass: every array kernel (``RegisterArrayKernel``) runs on the numpy backend and on
``array_api_strict`` over a table of sample inputs (dtypes, broadcasting, edge cases) and gives numpy's
result (same dtype, shape and values); a numpy-only call slipped into a ported kernel fails here.
References: a numpy expression per case written independently of the kernel, and the numpy backend's
own result (plain numpy) for the strict run."""

import numpy as np
import pytest

import dfcore as tf
from dfcore import backends
from dfcore.framework import registry
from dfcore.ops.op_util import apply_op

pytest.importorskip("array_api_strict")

NUMPY = backends.get("numpy")
STRICT = backends.get("array_api_strict")
RNG = np.random.RandomState(7)
F32 = RNG.uniform(-2, 2, (3, 4)).astype(np.float32)
F64 = RNG.uniform(-2, 2, (3, 4))
POS = RNG.uniform(0.5, 2, (3, 4)).astype(np.float32)
ROW = RNG.uniform(-2, 2, (4,)).astype(np.float32)
COL = RNG.uniform(-2, 2, (3, 1))
I32 = RNG.randint(-5, 6, (3, 4)).astype(np.int32)
NZ_I32 = np.where(I32 == 0, 3, I32).astype(np.int32)
BOOLS = RNG.rand(3, 4) > 0.5
EMPTY = np.zeros((0, 4), np.float32)
HALVES = np.array([0.5, 1.5, -2.5, 2.4], np.float32)
LABELS = np.array([3, 0, 1], np.int64)

#: Array kernels the table does not call directly, and where they are checked instead.
ELSEWHERE = {
    "_Recv": "the runtime's transfer; test_digits_mlp_on_a_strict_gpu_matches_numpy",
}


def _op(op_type, attrs=None, num_outputs=1):
    """Builder of one ``op_type`` node on placeholders; ``num_outputs`` of its outputs are compared."""

    def build(*inputs):
        op = apply_op(op_type, list(inputs), dict(attrs or {}), op_type)
        return op

    build.num_outputs = num_outputs
    return build


def _public(fn):
    """Builder through a public function (``tf.nn.bias_add``): its op is the one compared."""

    def build(*inputs):
        return fn(*inputs).op

    return build


def _case(op_type, build, inputs, ref):
    shapes = "-".join(f"{np.asarray(v).dtype}{list(np.shape(v))}" for v in inputs)
    return pytest.param(op_type, build, inputs, ref, id=f"{op_type}-{shapes}")


UNARY = [("Neg", F32, np.negative), ("Neg", I32, np.negative), ("Square", F64, np.square),
         ("Sqrt", POS, np.sqrt), ("Rsqrt", POS, lambda x: 1 / np.sqrt(x)), ("Exp", F32, np.exp),
         ("Log", POS, np.log), ("Log1p", POS, np.log1p), ("Abs", I32, np.abs), ("Sign", F32, np.sign),
         ("Reciprocal", POS, np.reciprocal), ("Reciprocal", NZ_I32, lambda x: np.where(np.abs(x) == 1, x, 0)),
         ("Sigmoid", F64, lambda x: 1 / (1 + np.exp(-x))), ("Tanh", F32, np.tanh), ("Floor", F32, np.floor),
         ("Ceil", F64, np.ceil), ("Round", HALVES, np.rint), ("Exp", EMPTY, np.exp),
         ("Sigmoid", np.float32(-3.0), lambda x: 1 / (1 + np.exp(-x))), ("LogicalNot", BOOLS, np.logical_not)]
BINARY = [("Add", F32, ROW, np.add), ("AddV2", I32, NZ_I32, np.add), ("Sub", F64, COL, np.subtract),
          ("Mul", F32, np.float32(2.5), np.multiply), ("RealDiv", F32, POS, np.divide),
          ("Maximum", I32, NZ_I32, np.maximum),
          ("Minimum", F32, ROW, np.minimum), ("Pow", POS, F32, np.power),
          ("SquaredDifference", F32, ROW, lambda x, y: (x - y) ** 2), ("FloorDiv", I32, NZ_I32, np.floor_divide),
          ("FloorDiv", F32, POS, np.floor_divide), ("FloorMod", I32, NZ_I32, np.mod),
          ("LogicalAnd", BOOLS, BOOLS[:1], np.logical_and), ("LogicalOr", BOOLS, ~BOOLS, np.logical_or),
          ("Greater", F32, ROW, np.greater), ("GreaterEqual", I32, NZ_I32, np.greater_equal),
          ("Less", F32, ROW, np.less), ("LessEqual", F32, F32, np.less_equal), ("Equal", I32, NZ_I32, np.equal),
          ("NotEqual", BOOLS, ~BOOLS, np.not_equal)]

CASES = ([_case(t, _op(t), [x], ref) for t, x, ref in UNARY]
         + [_case(t, _op(t), [x, y], ref) for t, x, y, ref in BINARY])


def _run(op, inputs, backend, num_outputs):
    kernel_def = registry.kernel(op.type, backend.name)
    assert kernel_def is not None and kernel_def.portable, f"{op.type} has no array kernel"
    compute = kernel_def.build(op, backend)
    result = compute(*[backend.from_host(np.asarray(v)) for v in inputs])
    results = tuple(result)[:num_outputs] if num_outputs > 1 else (result,)
    for r in results:
        assert backend.is_native(r), f"{op.type} on {backend.name} returned a {type(r).__name__}"
    return [np.asarray(backend.to_host(r)) for r in results]


@pytest.mark.parametrize("op_type,build,inputs,ref", CASES)
def test_array_kernel_gives_numpys_result_on_numpy_and_on_strict(op_type, build, inputs, ref):
    with tf.Graph().as_default():
        op = build(*[tf.constant(np.asarray(v)) for v in inputs])
    assert op.type == op_type
    num_outputs = getattr(build, "num_outputs", 1)
    with np.errstate(all="ignore"):
        expected = ref(*inputs)
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    on_numpy = _run(op, inputs, NUMPY, num_outputs)
    on_strict = _run(op, inputs, STRICT, num_outputs)
    for want, got_np, got_strict, out in zip(expected, on_numpy, on_strict, op.outputs):
        want = np.asarray(want)
        dtype = np.dtype(out.dtype.base_dtype.as_numpy_dtype)
        assert got_np.dtype == dtype and got_strict.dtype == dtype
        assert got_np.shape == want.shape and got_strict.shape == want.shape
        np.testing.assert_allclose(got_np, want.astype(dtype), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got_strict, got_np, rtol=1e-6, atol=1e-6)


def test_every_array_kernel_has_a_case():
    portable = {t for t, k in registry._KERNELS.items() if k.portable}
    covered = {p.values[0] for p in CASES} | set(ELSEWHERE)
    assert sorted(portable - covered) == []
