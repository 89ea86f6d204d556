"""Static cost estimates per op type, for the cost model and the simulated clock.

Source: the FLOP conventions of TF's ``python/profiler/internal/flops_registry.py``
(``RegisterStatistics(<op>, "flops")``), recast for dfcore's registry.

Contract of a cost function registered with ``registry.RegisterCost(op_type)``::

    fn(input_shapes, output_shapes, attrs) -> (flops, elements_accessed)

* ``input_shapes`` / ``output_shapes``: lists of fully known shapes, one tuple of
  Python ints per input / output, as the executor saw them in this step (``()`` for
  a scalar). Inputs include shape-like operands (``Sum``'s ``axes``).
* ``attrs``: the op's attribute dict (``Operation.attrs``), e.g. ``transpose_a``.
* ``flops``: floating-point operations; ``elements_accessed``: tensor elements read
  plus written. The cost model multiplies elements by the dtype's size to get bytes
  (:func:`dfcore.runtime.cost_model.op_cost`), so cost functions never see dtypes.

Formulas (``|s|`` = elements of shape ``s``; ``IO`` = Σ|inputs| + Σ|outputs|, the
elements accessed by every op below except the bookkeeping ones, which access 0):

* ``MatMul``, a: m×k (k×m if ``transpose_a``), b: k×n (n×k if ``transpose_b``):
  2·m·k·n flops (a multiply and an add per term).
* elementwise (``Add``, ``Sub``, ``Mul``, ``RealDiv``, ``Neg``, ``Exp``, …):
  c·|output|, with c from :data:`FLOPS_PER_ELEMENT` (1 for most; transcendental
  functions count as one op, as in TF's registry).
* ``_FusedMatMul``: ``MatMul``'s flops plus one per output element per fused op (``BiasAdd``, ``Relu``);
  ``MatMul``'s elements plus the bias.
* ``AddN`` of n inputs: (n−1)·|output|.
* ``Sum``, ``Max``, ``Min``, ``Prod``, ``ArgMax``, ``ArgMin``, ``BiasAddGrad``:
  |input| − |output| (one op per pair combined).
* ``Mean``: |input| (the sum, then one divide per output element).
* ``Softmax``, ``LogSoftmax`` over logits: 5·|logits| (shift 2, exp 1, normalise 2).
* ``SoftmaxCrossEntropyWithLogits`` on b×c logits: 9·b·c = softmax 5 + log 1 +
  label·log p and its row sum 2 + backprop p − labels 1.
* ``SparseSoftmaxCrossEntropyWithLogits`` on b×c logits, b labels: 6·b·c + b =
  softmax 5 + backprop 1 per logit, one log per row.
* ``L2Loss``: 3·|x| − 1 (TF's implementation: square, sum, halve).
* ``Assign`` and the element moves of :data:`MOVES` (``ConcatV2``, ``Split``,
  ``Transpose``, ``GatherV2``, ``Fill``, a queue's enqueue, …): 0 flops (a copy), ``IO`` elements.
* ``AccumulateNV2``: as ``AddN``. ``All``, ``Any``: reductions. ``Cumsum``: |input|.
  ``UnsortedSegmentSum``: |data| (one add per element summed); ``InTopKV2`` on b×c
  predictions: b·c (one compare per prediction).
* ``BatchMatMul`` (``adj_x``, ``adj_y``), batch b of m×k by k×n: 2·b·m·k·n.
* ``MatrixInverse`` of b n×n matrices: 2·b·n³ (LU with partial pivoting 2n³/3, then the
  inverse from the factors 4n³/3; Golub & Van Loan, *Matrix Computations*, 4th ed.,
  §3.2 and §3.4); ``MatrixDeterminant``: 2·b·n³/3 (the LU only).
* ``MaxPoolGrad``, ``AvgPoolGrad``: the pool's cost (:mod:`dfcore.ops.nn_pool`).
* bookkeeping (:data:`BOOKKEEPING`: ``Identity``, ``Reshape``, ``Const``, …): 0 and 0.

Op types with no registered function get the cost model's fallback: one flop per
output element, ``IO`` elements (a test keeps every registered op type off it).
"""

import math
from collections.abc import Sequence

from ..framework import registry

__all__ = []

FLOPS_PER_ELEMENT = {
    # binary, one op per output element (TF's _binary_per_element_op_flops)
    "Add": 1, "AddV2": 1, "Sub": 1, "Mul": 1, "RealDiv": 1, "Div": 1, "FloorDiv": 1,
    "Maximum": 1, "Minimum": 1, "Pow": 1, "BiasAdd": 1,
    "Greater": 1, "GreaterEqual": 1, "Less": 1, "LessEqual": 1, "Equal": 1, "NotEqual": 1,
    "SquaredDifference": 2,
    # unary (TF's _unary_op_flops); transcendental functions count as one op
    "Neg": 1, "Square": 1, "Sqrt": 1, "Rsqrt": 1, "Reciprocal": 1, "Exp": 1, "Log": 1,
    "Abs": 1, "Sign": 1, "Tanh": 1, "Relu": 1,
    "Sigmoid": 4,  # 1 / (1 + exp(-x)): negate, exp, add, divide (textbook count)
    # variable updates read-modify-write one element each
    "AssignAdd": 1, "AssignSub": 1,
    # training updates (training_ops.cc): per element of the variable
    "ApplyGradientDescent": 2, "ApplyMomentum": 4, "ApplyAdam": 12,
    # the adaptive ones (training_ops_adaptive.py), counted from the functors' expressions
    "ApplyAdagrad": 6, "ApplyRMSProp": 11, "ApplyCenteredRMSProp": 16, "ApplyAdadelta": 16,
    "ApplyFtrl": 20, "ApplyFtrlV2": 23,
    # gradient kernels of the ops above
    "ReluGrad": 1, "TanhGrad": 3, "SigmoidGrad": 3, "RsqrtGrad": 4,
    # more elementwise ops the lessons and examples run, one op per element each (a compare-and-select, a
    # rounding, a logical op, a conversion); CheckNumerics tests every element once
    "Ceil": 1, "Floor": 1, "Round": 1, "FloorMod": 1, "Log1p": 1, "Select": 1, "Cast": 1, "CheckNumerics": 1,
    "LogicalAnd": 1, "LogicalOr": 1, "LogicalNot": 1, "Relu6": 1, "Relu6Grad": 1, "LeakyRelu": 1,
    "LeakyReluGrad": 1, "Elu": 1, "EluGrad": 1,
    "Softplus": 2, "SoftplusGrad": 3,  # log(1 + exp x): exp, log1p; its gradient g · sigmoid(x)
    # random generators, nominal ops per sample: one uniform draw (Philox counter, scaled); a normal by
    # Box-Muller (two uniforms, log, sqrt, cos); a truncated normal redraws ~5% more
    "RandomUniform": 1, "RandomUniformInt": 1, "RandomStandardNormal": 4, "TruncatedNormal": 5,
    # a candidate sampler draws each sample as a uniform mapped through the distribution's inverse (log-uniform:
    # an exp and a log) and writes each expected count with its formula, about 4 ops per output element
    "LogUniformCandidateSampler": 4, "UniformCandidateSampler": 1,
    # a bilinear resize weighs the 4 nearest input pixels of each output element: 4 multiplies, 3 adds, and
    # the interpolation weights
    "ResizeBilinear": 8,
}

# Ops that only move elements (gather, slice, concatenate, fill, permute): 0 flops, ``IO`` elements.
MOVES = (
    "ConcatV2", "Split", "SplitV", "Pack", "Unpack", "Tile", "Slice", "StridedSlice", "StridedSliceGrad",
    "Transpose", "GatherV2", "OneHot", "Pad", "PadV2", "MirrorPad", "MirrorPadGrad", "Fill", "ZerosLike",
    "OnesLike", "Where", "InvertPermutation", "Range", "RandomShuffle", "Multinomial",
    # a queue's or accumulator's enqueue and dequeue copy the elements in or out; a checkpoint write and an
    # example parse touch each element once; a Python function's work is unknown to the model: its
    # inputs and outputs are what it is charged
    "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2", "QueueDequeueManyV2", "QueueDequeueUpToV2",
    "AccumulatorApplyGradient", "AccumulatorTakeGradient", "StackPushV2", "StackPopV2", "IteratorGetNext",
    "ReaderReadV2", "ReaderReadUpToV2", "SaveV2", "ParseExample", "ParseSingleExample", "PyFunc",
    "PyFuncStateless",
    # reversing, reinterpreting raw bytes and a nearest-neighbour resize (and its gradient) copy elements
    "ReverseV2", "DecodeRaw", "ResizeNearestNeighbor", "ResizeNearestNeighborGrad",
)

REDUCTIONS = ("Sum", "Max", "Min", "Prod", "ArgMax", "ArgMin", "BiasAddGrad", "All", "Any")

# Ops that move no data and compute nothing: views, graph plumbing, state handles.
BOOKKEEPING = (
    "NoOp", "Identity", "StopGradient", "Reshape", "Shape", "Const", "Placeholder",
    "PlaceholderWithDefault", "VariableV2", "IsVariableInitialized", "BroadcastGradientArgs",
    "_Send", "_Recv",  # their cost is the transfer, which the simulated clock charges to the link
    "_Arg", "_Retval",  # a feed or fetch taken from or put in the step's call frame
    "ExpandDims", "Squeeze", "Rank", "Size", "ShapeN", "ConcatOffset", "ReducedShape",  # views and shape math
    # control flow routes a value to a frame or a branch without touching it (TF's executor forwards it)
    "Switch", "RefSwitch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "ControlTrigger", "Assert",
    # handles to state and host-side bookkeeping: queues, accumulators, mutexes, stacks, iterators, readers
    "FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2", "QueueCloseV2", "QueueSizeV2",
    "ConditionalAccumulator", "AccumulatorNumAccumulated", "AccumulatorSetGlobalStep", "MutexV2", "MutexLock",
    "ConsumeMutexLock", "StackV2", "IteratorV2", "MakeIterator", "OneShotIterator", "IteratorToStringHandle",
    "IteratorFromStringHandleV2", "IdentityReaderV2", "TFRecordReaderV2", "WholeFileReaderV2",
    "ReaderNumRecordsProducedV2", "ReaderNumWorkUnitsCompletedV2", "ReaderResetV2", "MatchingFiles", "CountUpTo",
    "FixedLengthRecordReaderV2",
    # summaries are serialised on the host after the step's math (not on a device's clock)
    "ScalarSummary", "HistogramSummary", "ImageSummary", "MergeSummary", "TensorSummaryV2",
)


def num_elements(shape: Sequence[int]) -> int:
    """Number of elements of a shape tuple (1 for a scalar ``()``)."""
    return math.prod(shape)


def io_elements(input_shapes: Sequence[Sequence[int]], output_shapes: Sequence[Sequence[int]]) -> int:
    """Σ|inputs| + Σ|outputs|: every input read once, every output written once."""
    return sum(map(num_elements, input_shapes)) + sum(map(num_elements, output_shapes))


def _per_element(flops_per_element):
    def cost(input_shapes, output_shapes, attrs):
        return flops_per_element * num_elements(output_shapes[0]), io_elements(input_shapes, output_shapes)

    return cost


for _op_type, _c in FLOPS_PER_ELEMENT.items():
    registry.RegisterCost(_op_type)(_per_element(_c))


@registry.RegisterCost("MatMul")
def _matmul_cost(input_shapes, output_shapes, attrs):
    a, b = input_shapes[0], input_shapes[1]
    m, k = (a[1], a[0]) if attrs.get("transpose_a") else a
    n = b[0] if attrs.get("transpose_b") else b[1]
    return 2 * m * k * n, io_elements(input_shapes, output_shapes)


@registry.RegisterCost("_FusedMatMul")
def _fused_matmul_cost(input_shapes, output_shapes, attrs):
    flops, elements = _matmul_cost(input_shapes[:2], output_shapes, attrs)
    fused = len(attrs.get("fused_ops", ())) * num_elements(output_shapes[0])
    return flops + fused, elements + num_elements(input_shapes[2])


def _add_n_cost(input_shapes, output_shapes, attrs):
    return (len(input_shapes) - 1) * num_elements(output_shapes[0]), io_elements(input_shapes, output_shapes)


registry.RegisterCost("AddN")(_add_n_cost)
registry.RegisterCost("AccumulateNV2")(_add_n_cost)


@registry.RegisterCost("BatchMatMul")
def _batch_matmul_cost(input_shapes, output_shapes, attrs):
    a, b = input_shapes[0], input_shapes[1]
    m, k = (a[-1], a[-2]) if attrs.get("adj_x") else (a[-2], a[-1])
    n = b[-2] if attrs.get("adj_y") else b[-1]
    batch = num_elements(output_shapes[0][:-2])
    return 2 * batch * m * k * n, io_elements(input_shapes, output_shapes)


def _lu_cost(multiplier_thirds):
    def cost(input_shapes, output_shapes, attrs):
        shape = input_shapes[0]
        n = shape[-1]
        return multiplier_thirds * num_elements(shape[:-2]) * n ** 3 // 3, io_elements(input_shapes, output_shapes)

    return cost


registry.RegisterCost("MatrixInverse")(_lu_cost(6))
registry.RegisterCost("MatrixDeterminant")(_lu_cost(2))


def _per_input_element_cost(input_shapes, output_shapes, attrs):
    return num_elements(input_shapes[0]), io_elements(input_shapes, output_shapes)


# one op per input element: a running sum, a segment sum, a top-k membership test, a bilinear resize's gradient
# (each incoming gradient element scattered to its taps) and the accidental-hit test of each true class
for _op_type in ("Cumsum", "UnsortedSegmentSum", "InTopKV2", "ResizeBilinearGrad", "ComputeAccidentalHits"):
    registry.RegisterCost(_op_type)(_per_input_element_cost)


def _reduction_cost(input_shapes, output_shapes, attrs):
    flops = num_elements(input_shapes[0]) - num_elements(output_shapes[0])
    return flops, io_elements(input_shapes, output_shapes)


for _op_type in REDUCTIONS:
    registry.RegisterCost(_op_type)(_reduction_cost)


@registry.RegisterCost("Mean")
def _mean_cost(input_shapes, output_shapes, attrs):
    return num_elements(input_shapes[0]), io_elements(input_shapes, output_shapes)


def _softmax_cost(input_shapes, output_shapes, attrs):
    return 5 * num_elements(input_shapes[0]), io_elements(input_shapes, output_shapes)


registry.RegisterCost("Softmax")(_softmax_cost)
registry.RegisterCost("LogSoftmax")(_softmax_cost)


@registry.RegisterCost("SoftmaxCrossEntropyWithLogits")
def _xent_cost(input_shapes, output_shapes, attrs):
    return 9 * num_elements(input_shapes[0]), io_elements(input_shapes, output_shapes)


@registry.RegisterCost("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_cost(input_shapes, output_shapes, attrs):
    logits = num_elements(input_shapes[0])
    rows = num_elements(input_shapes[1])
    return 6 * logits + rows, io_elements(input_shapes, output_shapes)


@registry.RegisterCost("L2Loss")
def _l2_loss_cost(input_shapes, output_shapes, attrs):
    return max(3 * num_elements(input_shapes[0]) - 1, 0), io_elements(input_shapes, output_shapes)


def _move_cost(input_shapes, output_shapes, attrs):
    return 0, io_elements(input_shapes, output_shapes)


for _op_type in ("Assign", *MOVES):
    registry.RegisterCost(_op_type)(_move_cost)


def _free(input_shapes, output_shapes, attrs):
    return 0, 0


for _op_type in BOOKKEEPING:
    registry.RegisterCost(_op_type)(_free)
