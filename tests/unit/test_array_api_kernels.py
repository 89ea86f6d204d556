"""The strict pass: every array kernel (``RegisterArrayKernel``) runs on the numpy backend and on
``array_api_strict`` over a table of sample inputs (dtypes, broadcasting, edge cases) and gives numpy's
result (same dtype, shape and values); a numpy-only call slipped into a ported kernel fails here.
References: a numpy expression per case written independently of the kernel, and the numpy backend's
own result (plain numpy) for the strict run. Kernels that need a step: tests/unit/test_array_api_steps.py."""

import numpy as np
import pytest
from _requirements import require_module

import dfcore as tf
from dfcore import backends
from dfcore.framework import registry
from dfcore.ops.array_ops import constant_value
from dfcore.ops.op_util import apply_op

require_module("array_api_strict")

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



def _op(op_type, attrs=None, num_outputs=1):
    """Builder of one ``op_type`` node on placeholders; ``num_outputs`` of its outputs are compared."""

    def build(*inputs):
        return apply_op(op_type, list(inputs), dict(attrs or {}), op_type.lstrip("_"))

    build.num_outputs = num_outputs
    return build


def _public(fn, num_outputs=1):
    """Builder through a public function (``tf.nn.bias_add``): its op is the one compared."""

    def build(*inputs):
        return fn(*inputs).op

    build.num_outputs = num_outputs
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


def _xent(x, labels):
    log_probs = x - np.max(x, axis=1, keepdims=True)
    log_probs = log_probs - np.log(np.sum(np.exp(log_probs), axis=1, keepdims=True))
    return -np.sum(labels * log_probs, axis=1), np.exp(log_probs) - labels


def _sparse_xent(x, labels):
    return _xent(x, np.eye(x.shape[1], dtype=x.dtype)[labels])


def _softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


BATCH = RNG.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
IMAGE = RNG.uniform(-1, 1, (2, 3, 2, 2)).astype(np.float32)
ONE_HOT = np.eye(4, dtype=np.float32)[[3, 0, 1]]
I32V = lambda *v: np.array(v, np.int32)  # noqa: E731 - a shape or index vector
LRELU = {"alpha": 0.3}

OTHERS = [
    ("AddN", _public(lambda *xs: tf.add_n(list(xs))), [F32, POS, F32], lambda a, b, c: a + b + c),
    ("AccumulateNV2", _op("AccumulateNV2", {"N": 3, "shape": tf.TensorShape([3, 4])}), [F32, POS, F32],
     lambda a, b, c: a + b + c),
    ("All", _public(lambda x: tf.reduce_all(x, axis=1)), [BOOLS], lambda x: np.all(x, axis=1)),
    ("Any", _public(lambda x: tf.reduce_any(x, axis=0, keepdims=True)), [BOOLS], lambda x: np.any(x, 0, keepdims=True)),
    ("ArgMax", _public(lambda x: tf.argmax(x, 1)), [F32], lambda x: np.argmax(x, 1)),
    ("ArgMin", _public(lambda x: tf.argmin(x, 0, output_type=tf.int32)), [I32], lambda x: np.argmin(x, 0)),
    ("BatchMatMul", _public(lambda a, b: tf.matmul(a, b, adjoint_b=True)), [BATCH, BATCH],
     lambda a, b: a @ np.swapaxes(b, 1, 2)),
    ("BiasAdd", _public(tf.nn.bias_add), [F32, ROW], lambda x, b: x + b),
    ("BiasAdd", _public(lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW")), [IMAGE, ROW[:3]],
     lambda x, b: x + b[:, None, None]),
    ("BiasAddGrad", _op("BiasAddGrad", {"data_format": "NHWC"}), [F32], lambda g: g.sum(0)),
    ("BiasAddGrad", _op("BiasAddGrad", {"data_format": "NCHW"}), [IMAGE], lambda g: g.sum((0, 2, 3))),
    ("BroadcastGradientArgs", _op("BroadcastGradientArgs", num_outputs=2), [I32V(3, 4), I32V(4)],
     lambda a, b: (np.zeros(0, np.int32), I32V(0))),
    ("Cast", _public(lambda x: tf.cast(x, tf.int32)), [F32], lambda x: x.astype(np.int32)),
    ("Cast", _public(lambda x: tf.cast(x, tf.float32)), [BOOLS], lambda x: x.astype(np.float32)),
    ("ConcatV2", _public(lambda a, b: tf.concat([a, b], axis=-1)), [F32, POS], lambda a, b: np.concatenate([a, b], 1)),
    ("Const", _public(lambda: tf.constant(F64)), [], lambda: F64),
    ("Elu", _op("Elu"), [F32], lambda x: np.where(x > 0, x, np.expm1(x))),
    ("EluGrad", _op("EluGrad"), [F32, F32], lambda g, y: np.where(y > 0, g, g * (y + 1))),
    ("ExpandDims", _public(lambda x, d: tf.expand_dims(x, d)), [F32, np.int32(-1)], lambda x, d: x[:, :, None]),
    ("Fill", _op("Fill"), [I32V(2, 3), np.float32(1.5)], lambda d, v: np.full((2, 3), v)),
    ("Identity", _public(tf.identity), [I32], lambda x: x),
    ("StopGradient", _public(tf.stop_gradient), [F32], lambda x: x),
    ("L2Loss", _public(tf.nn.l2_loss), [F64], lambda x: np.sum(x * x) / 2),
    ("LeakyRelu", _op("LeakyRelu", LRELU), [F32], lambda x: np.where(x > 0, x, 0.3 * x)),
    ("LeakyReluGrad", _op("LeakyReluGrad", LRELU), [POS, F32], lambda g, x: np.where(x > 0, g, 0.3 * g)),
    ("LogSoftmax", _public(tf.nn.log_softmax), [F32], lambda x: np.log(_softmax(x))),
    ("Softmax", _public(tf.nn.softmax), [F64], _softmax),
    ("MatMul", _public(tf.matmul), [F32, F32.T.copy()], np.matmul),
    ("MatMul", _public(lambda a, b: tf.matmul(a, b, transpose_a=True)), [F32, POS], lambda a, b: a.T @ b),
    ("MatMul", _public(lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True)), [F64, F64.T.copy()],
     lambda a, b: a.T @ b.T),
    ("_FusedMatMul", _op("_FusedMatMul", {"fused_ops": ["BiasAdd", "Relu"], "T": tf.float32, "transpose_a": False,
                                          "transpose_b": True, "epsilon": 0.0, "num_args": 1}),
     [F32, POS[:2], ROW[:2]], lambda a, b, c: np.maximum(a @ b.T + c, 0)),
    ("Max", _public(lambda x: tf.reduce_max(x, axis=1)), [F32], lambda x: x.max(1)),
    ("Max", _public(lambda x: tf.reduce_max(x, axis=0)), [EMPTY], lambda x: np.full(4, -np.inf, np.float32)),
    ("Min", _public(lambda x: tf.reduce_min(x, axis=0, keepdims=True)), [I32], lambda x: x.min(0, keepdims=True)),
    ("Mean", _public(lambda x: tf.reduce_mean(x, axis=1)), [I32], lambda x: np.trunc(x.sum(1) / 4)),
    ("Mean", _public(tf.reduce_mean), [F32], np.mean),
    ("Prod", _public(lambda x: tf.reduce_prod(x, axis=[0])), [F64], lambda x: x.prod(0)),
    ("Sum", _public(tf.reduce_sum), [I32], np.sum),
    ("Sum", _public(lambda x: tf.reduce_sum(x, axis=[0, -1], keepdims=True)), [F32],
     lambda x: x.sum((0, 1))[None, None]),
    ("OnesLike", _public(tf.ones_like), [F32], np.ones_like),
    ("ZerosLike", _public(tf.zeros_like), [I32], np.zeros_like),
    ("Pack", _public(lambda a, b: tf.stack([a, b], axis=1)), [F32, POS], lambda a, b: np.stack([a, b], 1)),
    ("Unpack", _public(lambda x: tf.unstack(x, axis=1)[0]), [F32], lambda x: x[:, 0]),
    ("Rank", _op("Rank"), [BATCH], lambda x: np.int32(3)),
    ("Shape", _op("Shape", {"out_type": tf.int32}), [BATCH], lambda x: I32V(2, 3, 4)),
    ("ShapeN", _op("ShapeN", {"N": 2, "out_type": tf.int64}, num_outputs=2), [F32, BATCH],
     lambda a, b: (np.array([3, 4]), np.array([2, 3, 4]))),
    ("Size", _op("Size", {"out_type": tf.int32}), [BATCH], lambda x: np.int32(24)),
    ("ReducedShape", _op("ReducedShape"), [I32V(3, 4), I32V(-1)], lambda s, a: I32V(3, 1)),
    ("Reshape", _public(tf.reshape), [F32, I32V(2, -1)], lambda x, s: x.reshape(2, 6)),
    ("Select", _public(tf.where), [BOOLS, F32, POS], np.where),
    ("Select", _public(tf.where), [np.array([True, False, True]), F32, POS],
     lambda c, x, y: np.where(c[:, None], x, y)),
    ("Slice", _public(tf.slice), [F32, I32V(1, 0), I32V(2, 3)], lambda x, b, s: x[1:3, 0:3]),
    ("StridedSlice", _public(lambda x: x[1:, ::-2]), [F32], lambda x: x[1:, ::-2]),
    ("StridedSlice", _public(lambda x: x[..., None, 1]), [BATCH], lambda x: x[..., None, 1]),
    ("Squeeze", _public(tf.squeeze), [F32[:, None, :]], lambda x: x[:, 0]),
    ("Tile", _public(tf.tile), [F32, I32V(2, 1)], lambda x, m: np.tile(x, (2, 1))),
    ("Transpose", _public(tf.transpose), [BATCH, I32V(2, 0, 1)], lambda x, p: x.transpose(2, 0, 1)),
    ("Relu", _op("Relu"), [F32], lambda x: np.maximum(x, 0)),
    ("Relu6", _op("Relu6"), [F32 * 4], lambda x: np.clip(x, 0, 6)),
    ("ReluGrad", _op("ReluGrad"), [POS, F32], lambda g, y: g * (y > 0)),
    ("Relu6Grad", _op("Relu6Grad"), [POS, F32 * 4], lambda g, x: np.where((x > 0) & (x < 6), g, 0)),
    ("Softplus", _op("Softplus"), [F64], lambda x: np.log1p(np.exp(x))),
    ("SoftplusGrad", _op("SoftplusGrad"), [POS, F32], lambda g, x: g / (1 + np.exp(-x))),
    ("SoftmaxCrossEntropyWithLogits", _op("SoftmaxCrossEntropyWithLogits", num_outputs=2), [F32, ONE_HOT], _xent),
    ("SparseSoftmaxCrossEntropyWithLogits", _op("SparseSoftmaxCrossEntropyWithLogits", num_outputs=2), [F32, LABELS],
     _sparse_xent),
    ("Split", _public(lambda x: tf.split(x, 2, axis=1)[1], num_outputs=2), [F32], lambda x: (x[:, :2], x[:, 2:])),
    ("SplitV", _public(lambda x: tf.split(x, [1, -1], axis=0)[1], num_outputs=2), [F32], lambda x: (x[:1], x[1:])),
    ("ConcatOffset", _op("ConcatOffset", {"N": 2}, num_outputs=2), [np.int32(1), I32V(3, 4), I32V(3, 2)],
     lambda d, a, b: (I32V(0, 0), I32V(0, 4))),
    ("PlaceholderWithDefault", _public(lambda x: tf.placeholder_with_default(x, [3, 4])), [F32], lambda x: x),
    ("Range", _public(lambda a, b, c: tf.range(a, b, c)), [np.int32(1), np.int32(10), np.int32(3)],
     lambda a, b, c: np.arange(1, 10, 3, dtype=np.int32)),
    ("OneHot", _public(lambda i: tf.one_hot(i, 4, axis=0)), [LABELS], lambda i: np.eye(4, dtype=np.float32)[:, i]),
    ("StridedSliceGrad", _op("StridedSliceGrad", {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0,
                                                  "new_axis_mask": 0, "shrink_axis_mask": 0}),
     [I32V(3, 4), I32V(1, 0), I32V(3, 4), I32V(1, 2), F32[:2, ::2]],
     lambda s, b, e, st, dy: np.pad(dy.repeat(2, 1) * np.tile([1, 0], 2), ((1, 0), (0, 0)))),
]

CASES = ([_case(t, _op(t), [x], ref) for t, x, ref in UNARY]
         + [_case(t, _op(t), [x, y], ref) for t, x, y, ref in BINARY]
         + [_case(t, build, inputs, ref) for t, build, inputs, ref in OTHERS])


def _run(op, backend, num_outputs):
    """The op's kernel on ``backend``, its inputs (constants) copied there; its outputs back on the host."""
    kernel_def = registry.kernel(op.type, backend.name)
    assert kernel_def is not None and kernel_def.portable, f"{op.type} has no array kernel"
    compute = kernel_def.build(op, backend)
    result = compute(*[backend.from_host(np.asarray(constant_value(t))) for t in op.inputs])
    results = tuple(result)[:num_outputs] if isinstance(result, tuple) else (result,)
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
    on_numpy = _run(op, NUMPY, num_outputs)
    on_strict = _run(op, STRICT, num_outputs)
    for want, got_np, got_strict, out in zip(expected, on_numpy, on_strict, op.outputs):
        want = np.asarray(want)
        dtype = np.dtype(out.dtype.base_dtype.as_numpy_dtype)
        assert got_np.dtype == dtype and got_strict.dtype == dtype
        assert got_np.shape == want.shape and got_strict.shape == want.shape
        np.testing.assert_allclose(got_np, want.astype(dtype), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got_strict, got_np, rtol=1e-6, atol=1e-6)
