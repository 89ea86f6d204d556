"""The strict pass, in steps: kernels that need a step (variables, optimizer updates, random streams, loops,
all-reduce) run in a Session on simulated GPUs backed by ``array_api_strict`` and give the numpy-backed GPU's
results; the digits MLP trains on a strict GPU:0 with numpy's losses (to 1e-6); a numpy call slipped into an
array kernel fails the pass; every array kernel has a case here or in tests/unit/test_array_api_kernels.py."""

import numpy as np
import pytest
from _requirements import require_module
from test_array_api_kernels import CASES, F32, NUMPY, POS, RNG, STRICT, _op, _run

import dfcore as tf
from dfcore import backends
from dfcore.framework import registry

require_module("array_api_strict")

#: Array kernels neither file's tables call directly, and where they are checked instead.
ELSEWHERE: dict[str, str] = {}


# -- kernels that need a step (variables, updates, random streams): run in a Session on a simulated GPU ----------
def _optimizer_case(make_optimizer):
    def build():
        var = tf.Variable(tf.truncated_normal([3, 4], seed=1), name="var")
        loss = tf.reduce_sum(tf.square(var - tf.constant(F32)))
        train = make_optimizer().minimize(loss)
        return tf.global_variables_initializer(), train, var

    return build


def _assign_case(update):
    def build():
        var = tf.Variable(tf.constant(F32), name="var")
        return tf.global_variables_initializer(), update(var, tf.constant(POS)), var

    return build


def _loop_case(out):
    return tf.no_op(), out, out  # the loop runs in the traced steps


def _random_case(draw):
    return lambda: (tf.no_op(), tf.no_op(), draw())


SESSION_CASES = {
    "ApplyGradientDescent": _optimizer_case(lambda: tf.train.GradientDescentOptimizer(0.1)),
    "ApplyMomentum": _optimizer_case(lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True)),
    "ApplyAdam": _optimizer_case(lambda: tf.train.AdamOptimizer(0.1)),
    "ApplyAdagrad": _optimizer_case(lambda: tf.train.AdagradOptimizer(0.1)),
    "ApplyRMSProp": _optimizer_case(lambda: tf.train.RMSPropOptimizer(0.1, momentum=0.5)),
    "ApplyCenteredRMSProp": _optimizer_case(lambda: tf.train.RMSPropOptimizer(0.1, centered=True)),
    "ApplyAdadelta": _optimizer_case(lambda: tf.train.AdadeltaOptimizer(1.0)),
    "ApplyFtrl": _optimizer_case(lambda: tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01)),
    "ApplyFtrlV2": _optimizer_case(lambda: tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=0.1)),
    "AssignAdd": _assign_case(tf.assign_add),
    "AssignSub": _assign_case(tf.assign_sub),
    "IsVariableInitialized": lambda: (tf.no_op(), tf.no_op(), tf.is_variable_initialized(tf.Variable(1.0))),
    "ReverseV2": _assign_case(lambda var, _: tf.reverse(var, [1])),  # of a variable: nothing to fold
    "RandomUniform": _random_case(lambda: tf.random_uniform([3, 4], seed=3)),
    "RandomStandardNormal": _random_case(lambda: tf.random_normal([3, 4], seed=3)),
    "RandomUniformInt": _random_case(lambda: tf.random_uniform([3, 4], 0, 10, dtype=tf.int32, seed=3)),
    "Switch": lambda: _loop_case(tf.while_loop(lambda i, x: i < 4, lambda i, x: (i + 1, x * 1.5),
                                               [tf.constant(0), tf.constant(F32)])[1]),
}
LOOP = {"Enter", "Merge", "Switch", "LoopCond", "NextIteration", "Exit"}
#: op types the cases above run besides their own (each on GPU:0 too)
ALSO_RUN = {"VariableV2", "Assign", "TruncatedNormal", "NoOp", "_Send"} | LOOP
ELSEWHERE["RefSwitch"] = "Switch's kernel itself (one function)"
ELSEWHERE["ControlTrigger"] = "computes nothing (no outputs, never dead)"
ELSEWHERE["Placeholder"] = "never computes (it raises for an unfed placeholder): the session's feed tests"
ELSEWHERE["_Recv"] = "test_digits_mlp_on_a_strict_gpu_matches_numpy (the GPU receives the fed batch)"


def _run_on_gpu(build, backend_name, monkeypatch):
    """``build`` placed on GPU:0 (of ``backend_name``); 3 steps; the fetched value and the op types GPU:0 ran."""
    monkeypatch.setenv(backends.SIMULATED_GPU_BACKEND_ENV, backend_name)
    graph = tf.Graph()
    with graph.as_default(), tf.device("/device:GPU:0"):
        tf.set_random_seed(0)
        setup, step, fetch = build()
    config = tf.ConfigProto(device_count={"CPU": 1, "GPU": 1})
    names = set()
    with tf.Session(graph=graph, config=config) as sess:
        assert sess.list_devices()[1].backend == backend_name
        for fetches in [setup] + [step] * 3:
            metadata = tf.RunMetadata()
            sess.run(fetches, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
            names |= {n.node_name for d in metadata.step_stats.dev_stats if d.device.endswith("GPU:0")
                      for n in d.node_stats}
        value = sess.run(fetch)
    return value, {op.type for op in graph.get_operations() if op.name in names}


@pytest.mark.parametrize("op_type", sorted(SESSION_CASES))
def test_stateful_array_kernel_gives_numpys_result_on_a_strict_gpu(op_type, monkeypatch):
    on_numpy, ran = _run_on_gpu(SESSION_CASES[op_type], "numpy", monkeypatch)
    on_strict, ran_strict = _run_on_gpu(SESSION_CASES[op_type], "array_api_strict", monkeypatch)
    assert type(on_strict) is type(on_numpy)
    np.testing.assert_allclose(on_strict, on_numpy, rtol=1e-6, atol=1e-6)
    if op_type == "Switch":
        np.testing.assert_allclose(on_strict, F32 * 1.5 ** 4, rtol=1e-6)
        assert LOOP <= ran_strict
    if op_type not in ("RandomUniform", "RandomStandardNormal", "RandomUniformInt", "IsVariableInitialized", "Switch"):
        assert op_type in ran_strict and ran_strict == ran
    if op_type == "ApplyAdam":
        assert ALSO_RUN - {"_Send"} - LOOP <= ran_strict


def test_every_array_kernel_has_a_case():
    portable = {t for t, k in registry._KERNELS.items() if k.portable}
    covered = {p.values[0] for p in CASES} | set(SESSION_CASES) | ALSO_RUN | set(ELSEWHERE)
    assert sorted(portable - covered) == []


# -- end to end, and a numpy-only call caught ----------------------------------------------------------------
def _digits_losses(backend_name, monkeypatch, steps=25):
    """The first ``steps`` losses of the digits MLP (dfcore.examples.digits) trained with Adam; its ops on the
    default GPU:0 (``backend_name``), the batches fed from the CPU."""
    from dfcore.examples.digits import build_mlp
    from dfcore.examples.digits_data import batches, load_digits_split

    monkeypatch.setenv(backends.SIMULATED_GPU_BACKEND_ENV, backend_name)
    data = load_digits_split(seed=0)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [None, data.num_features])
        y = tf.placeholder(tf.int64, [None])
        logits = build_mlp(x, 32, data.num_classes, 0)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf.train.AdamOptimizer(0.003).minimize(loss)
        init = tf.global_variables_initializer()
    losses, rng = [], np.random.default_rng(0)
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        for _, (xb, yb) in zip(range(steps), batches(data.x_train, data.y_train, 32, rng)):
            metadata = tf.RunMetadata()
            _, value = sess.run([train, loss], {x: xb, y: yb}, run_metadata=metadata,
                                options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
            assert type(value) is np.float32 or isinstance(value, np.ndarray)
            losses.append(float(value))
    on_gpu = {n.node_name for d in metadata.step_stats.dev_stats if d.device.endswith("GPU:0") for n in d.node_stats}
    return losses, {op.type for op in graph.get_operations() if op.name in on_gpu}


def test_digits_mlp_on_a_strict_gpu_matches_numpy(monkeypatch):
    on_numpy, ran_numpy = _digits_losses("numpy", monkeypatch)
    on_strict, ran_strict = _digits_losses("array_api_strict", monkeypatch)
    np.testing.assert_allclose(on_strict, on_numpy, rtol=0, atol=1e-6)
    assert on_numpy[-1] < on_numpy[0]  # it trains
    assert {"MatMul", "Add", "Relu", "ReluGrad", "SparseSoftmaxCrossEntropyWithLogits", "ApplyAdam",
            "Tile", "Mean", "Sum", "Reshape"} <= ran_strict
    assert ran_strict == ran_numpy  # no op left the strict GPU for a CPU


@pytest.fixture
def wrong_tanh():
    """A test op whose kernel claims to be portable but calls numpy."""
    registry.RegisterShape("WrongTanhForTest")(lambda op: [(op.inputs[0].dtype.base_dtype, op.inputs[0].shape)])
    registry.RegisterArrayKernel("WrongTanhForTest")(lambda op, backend: np.tanh)
    yield "WrongTanhForTest"
    del registry._SHAPES["WrongTanhForTest"], registry._KERNELS["WrongTanhForTest"]


def test_a_numpy_call_in_an_array_kernel_fails_the_strict_pass(wrong_tanh):
    with tf.Graph().as_default():
        op = _op(wrong_tanh)(tf.constant(F32))
    np.testing.assert_allclose(_run(op, NUMPY, 1)[0], np.tanh(F32))  # numpy cannot tell
    with pytest.raises(AssertionError, match="WrongTanhForTest on array_api_strict returned a ndarray"):
        _run(op, STRICT, 1)


def test_a_numpy_call_in_an_array_kernel_fails_a_step_on_a_strict_gpu(wrong_tanh, monkeypatch):
    monkeypatch.setenv(backends.SIMULATED_GPU_BACKEND_ENV, "array_api_strict")
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [3, 4])  # fed: nothing to fold on the host
        with tf.device("/device:GPU:0"):
            z = _op(wrong_tanh)(x).outputs[0] * x
    with tf.Session(graph=graph, config=tf.ConfigProto(device_count={"GPU": 1})) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="of type Mul"):
            sess.run(z, {x: F32})


@pytest.mark.parametrize("algorithm", ["ring", "recursive_halving_doubling"])
def test_all_reduce_on_strict_gpus_matches_numpy(algorithm, monkeypatch):
    from dfcore.distribute import collective_all_reduce

    def reduce_on(backend_name):
        monkeypatch.setenv(backends.SIMULATED_GPU_BACKEND_ENV, backend_name)
        with tf.Graph().as_default() as graph:
            inputs = []
            for i in range(3):
                with tf.device(f"/device:GPU:{i}"):
                    inputs.append(tf.constant(RNG.uniform(-1, 1, (3, 5)).astype(np.float32)) * 2.0)
            outs = collective_all_reduce(inputs, algorithm=algorithm, reduction="mean")
        with tf.Session(graph=graph, config=tf.ConfigProto(device_count={"GPU": 3})) as sess:
            return sess.run(outs), [np.asarray(backends.to_numpy(v)) for v in sess.run(inputs)]

    outs, ins = reduce_on("array_api_strict")
    for out in outs:
        np.testing.assert_allclose(out, np.mean(ins, axis=0), rtol=1e-6, atol=1e-6)
    assert all(type(out) is np.ndarray for out in outs)


ELSEWHERE["CollectiveAllReduce"] = "test_all_reduce_on_strict_gpus_matches_numpy"
