"""tf.function: a trace per input signature, run as a Session step in the eager context.

References: TF's tracing rules (tensorflow/python/eager/def_function.py, function.py: retrace on a new
dtype or shape, Python arguments in the key, captured variables shared with eager code, stateful ops in
program order) and the same computation run eagerly op by op.
"""

import numpy as np
import pytest

import dfcore as tf
from dfcore.eager import eager_mode

GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"


def test_results_equal_eager_and_trace_once_per_signature():
    with eager_mode():
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))

        @tf.function
        def f(x):
            return tf.nn.relu(tf.matmul(x, w) - 3.0)

        x = np.ones((2, 3), np.float32)
        out = f(tf.constant(x))
        np.testing.assert_allclose(out.numpy(), tf.nn.relu(tf.matmul(tf.constant(x), w) - 3.0).numpy())
        f(tf.constant(x * 2))
        assert f.experimental_get_tracing_count() == 1
        f(np.ones((4, 3), np.float32))  # new shape: retrace
        assert f.experimental_get_tracing_count() == 2
        f(tf.constant(x))
        assert f.experimental_get_tracing_count() == 2
        with pytest.raises(ValueError, match="Incompatible type conversion"):
            f(tf.constant(np.ones((2, 3), np.float64)))  # new dtype: retraced, and the float32 variable refuses it
        double = tf.function(lambda t: t * 2)
        assert double(tf.constant(1.0)).dtype == tf.float32
        assert double(tf.constant(1.0, tf.float64)).dtype == tf.float64
        assert double.experimental_get_tracing_count() == 2


def test_python_arguments_are_part_of_the_signature():
    with eager_mode():
        @tf.function
        def scale(x, factor):
            return x * factor

        assert scale(tf.constant(2.0), 3.0).numpy() == 6.0
        assert scale(tf.constant(2.0), 4.0).numpy() == 8.0
        assert scale.experimental_get_tracing_count() == 2


def test_variables_are_shared_with_eager_code_and_effects_run_in_order():
    with eager_mode():
        v = tf.Variable(1.0)

        @tf.function
        def bump():
            v.assign_add(1.0)
            return v.read_value() * 10.0  # after the update, as in TF (program order)

        assert bump().numpy() == 20.0
        assert v.numpy() == 2.0
        v.assign(5.0)  # eager write, seen by the next call
        assert bump().numpy() == 60.0
        assert v.numpy() == 6.0


def test_device_scopes_inside_a_function():
    with eager_mode(tf.ConfigProto(device_count={"CPU": 1, "GPU": 2})):
        @tf.function
        def f(x):
            with tf.device("/gpu:1"):
                return x * 2.0

        out = f(tf.constant([1.0]))
        assert out.device == GPU1
        run_metadata = tf.RunMetadata()
        concrete = f.get_concrete_function(tf.constant([1.0]))
        concrete([np.array([1.0], np.float32)], run_metadata=run_metadata)
        devices = {d.device for d in run_metadata.step_stats.dev_stats}
        assert GPU1 in devices


def _mlp(x, labels, w1, b1, w2, b2):
    hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
    logits = tf.matmul(hidden, w2) + b2
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def test_mlp_training_step_same_in_eager_function_and_session():
    rng = np.random.default_rng(1)
    x0 = rng.normal(size=(8, 10)).astype(np.float32)
    y0 = rng.integers(0, 3, size=8).astype(np.int32)
    init = [rng.normal(size=(10, 6)).astype(np.float32) * 0.3, np.zeros(6, np.float32),
            rng.normal(size=(6, 3)).astype(np.float32) * 0.3, np.zeros(3, np.float32)]
    with tf.Graph().as_default():
        params = [tf.Variable(p) for p in init]
        loss = _mlp(tf.constant(x0), tf.constant(y0), *params)
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(train)
            want = sess.run(params)
    for compiled in (False, True):
        with eager_mode():
            params = [tf.Variable(p) for p in init]
            opt = tf.train.GradientDescentOptimizer(0.5)

            def step(x, y, params=params, opt=opt):
                with tf.GradientTape() as tape:
                    loss = _mlp(x, y, *params)
                grads = tape.gradient(loss, params)
                opt.apply_gradients(zip(grads, params))
                return loss

            run = tf.function(step) if compiled else step
            for _ in range(3):
                run(tf.constant(x0), tf.constant(y0))
            for got, expected in zip(params, want):
                np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_defun_is_function_and_graph_mode_inlines():
    assert tf.compat.v1.defun(lambda x: x).python_function(3) == 3
    g = tf.Graph()
    with g.as_default():
        out = tf.function(lambda x: x + 1.0)(tf.constant(1.0))
        assert out.graph is g
        with tf.Session() as sess:
            assert sess.run(out) == 2.0


def test_a_failing_call_changes_no_variable_and_leaks_no_thread(no_thread_leak):
    with eager_mode():
        v = tf.Variable([1.0, 2.0])

        @tf.function
        def update_then_fail(indices):
            v.assign_add([10.0, 10.0])
            return tf.gather(v.read_value(), indices)

        np.testing.assert_allclose(update_then_fail(np.array([1], np.int32)).numpy(), [12.0])
        with pytest.raises(tf.errors.InvalidArgumentError):
            update_then_fail(np.array([5], np.int32))  # the gather fails after the update in the same step
        np.testing.assert_allclose(v.numpy(), [11.0, 12.0])  # the failed call's update was not committed


def test_captured_eager_tensors_and_graph_mode_inside_the_trace():
    with eager_mode():
        offset = tf.constant([1.0, 2.0])
        seen = []

        @tf.function
        def f(x):
            seen.append(tf.executing_eagerly())  # False while tracing: the trace builds a graph
            return x + offset

        np.testing.assert_allclose(f(tf.constant([1.0, 1.0])).numpy(), [2.0, 3.0])
        np.testing.assert_allclose(f(tf.constant([2.0, 2.0])).numpy(), [3.0, 4.0])
        assert seen == [False]  # traced once
        types = [op.type for op in f.get_concrete_function(tf.constant([1.0, 1.0])).graph.get_operations()]
        assert types.count("Const") == 1 and "Placeholder" in types  # the capture is a constant of the graph


def test_lesson_01_model_the_optimizer_passes_on_a_traced_function():
    """What lesson 01 checks, fast: a tf.function runs the Grappler-style passes of its session's config."""
    from dfcore.runtime.grappler import no_rewrite_session_config

    layers, width = 3, 8

    def mlp(x, weights, biases):
        with tf.device("/cpu:0"):  # TF's remapper fuses a MatMul only on a CPU, and only under a BiasAdd
            scale = tf.sqrt(tf.constant(2.0)) / tf.sqrt(tf.constant(float(width)))
            h = x
            for w, b in zip(weights, biases):
                h = tf.nn.relu(tf.nn.bias_add(tf.matmul(h, w * scale), b))
            return tf.reduce_sum(h * 1.0)

    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((4, width)).astype(np.float32)
    with eager_mode():
        weights = [tf.Variable(rng.standard_normal((width, width)).astype(np.float32)) for _ in range(layers)]
        biases = [tf.Variable(np.zeros(width, np.float32)) for _ in range(layers)]
        x = tf.constant(x0)
        eager_value = mlp(x, weights, biases).numpy()
        removed = {}
        for label, config in (("off", no_rewrite_session_config()), ("on", None)):
            function = tf.function(mlp, config=config)
            np.testing.assert_allclose(function(x, weights, biases).numpy(), eager_value, rtol=1e-5)
            concrete = function.get_concrete_function(x, weights, biases)
            records = concrete.session.optimizer_records(concrete.fetches, concrete.feed_dict([x0]))
            removed[label] = {r.optimizer: len(r.removed) for r in records if r.iteration == 0}
    assert removed["off"] == {}
    assert removed["on"]["remapper"] == 2 * layers  # MatMul + BiasAdd + Relu -> one _FusedMatMul per layer
    assert removed["on"]["constant_folding"] == 4  # two Const and two Sqrt: the scale is computed once


def test_a_recording_tape_sees_through_a_call():
    with eager_mode():
        v = tf.Variable(3.0)
        square = tf.function(lambda x: x * x * v)
        x = tf.constant(2.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = square(x)
        dx, dv = tape.gradient(y, [x, v])
        assert (y.numpy(), dx.numpy(), dv.numpy()) == (12.0, 12.0, 4.0)
        assert square.experimental_get_tracing_count() == 0  # ran op by op for the tape
        assert square(x).numpy() == 12.0 and square.experimental_get_tracing_count() == 1


def test_adam_inside_a_function_keeps_its_state_in_the_eager_context():
    results = []
    for compiled in (False, True):
        with eager_mode():
            v = tf.Variable([3.0, -2.0])
            adam = tf.train.AdamOptimizer(0.1)

            def step(v=v, adam=adam):
                adam.minimize(lambda: tf.reduce_sum(v * v), var_list=[v])
                return v.read_value()

            run = tf.function(step) if compiled else step
            for _ in range(3):
                out = run()
            results.append(out.numpy())
            assert sorted(x.name for x in adam.variables()) == ["Variable/Adam:0", "Variable/Adam_1:0",
                                                                "beta1_power:0", "beta2_power:0"]
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)  # slots and beta powers made once, eagerly


def test_numpy_arguments_are_fed_not_baked_in():
    with eager_mode():
        double = tf.function(lambda t: t * 2.0)
        assert double(np.float32(1.5)).numpy() == 3.0
        assert double(np.float32(2.5)).numpy() == 5.0
        np.testing.assert_allclose(double(np.ones(3, np.float32)).numpy(), [2.0, 2.0, 2.0])
        assert double.experimental_get_tracing_count() == 2  # one per shape: () and (3,)
        graph = double.get_concrete_function(np.float32(1.0)).graph
        assert [op.type for op in graph.get_operations()] == ["Placeholder", "Const", "Mul"]
