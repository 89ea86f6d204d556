"""Optimizers, Apply* kernels and the global step against numpy references and TF1's names."""

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors
from dfcore.framework import registry
from dfcore.ops import training_blocks, training_ops
from dfcore.runtime.executor import StepContext
from dfcore.runtime.variable_store import VariableStore

RNG = np.random.default_rng(0)
INIT = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
GRADS = [RNG.standard_normal(INIT.shape) for _ in range(4)]


def f32(x):
    """A Python float hyperparameter as the optimizer sees it: a float32 constant cast to the variable's dtype."""
    return float(np.float32(x))


def _run_updates(opt, feed_lr=None):
    """Apply GRADS one per step to a float64 variable; return its value after each step."""
    w = tf.Variable(INIT, name="w")
    g = tf.placeholder(tf.float64, INIT.shape, name="g")
    train = opt.apply_gradients([(g, w)])
    seen = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for grad in GRADS:
            feed = {g: grad}
            if feed_lr is not None:
                feed[feed_lr[0]] = feed_lr[1]
            sess.run(train, feed)
            seen.append(sess.run(w))
    return w, seen


# -- updates vs numpy -------------------------------------------------------------
def test_gradient_descent_matches_numpy():
    _, seen = _run_updates(tf.train.GradientDescentOptimizer(0.1))
    ref = INIT.copy()
    for grad, got in zip(GRADS, seen):
        ref = ref - f32(0.1) * grad
        np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_learning_rate_may_be_a_placeholder():
    lr = tf.placeholder(tf.float32, [], name="lr")
    _, seen = _run_updates(tf.train.GradientDescentOptimizer(lr), feed_lr=(lr, 0.5))
    np.testing.assert_allclose(seen[0], INIT - 0.5 * GRADS[0], rtol=1e-12)


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_matches_numpy(nesterov):
    _, seen = _run_updates(tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=nesterov))
    lr, mu = f32(0.05), f32(0.9)
    var, accum = INIT.copy(), np.zeros_like(INIT)
    for grad, got in zip(GRADS, seen):
        accum = mu * accum + grad
        var = var - lr * (grad + mu * accum) if nesterov else var - lr * accum
        np.testing.assert_allclose(got, var, rtol=1e-12)


def test_adam_matches_numpy_with_bias_correction():
    opt = tf.train.AdamOptimizer(0.01, 0.9, 0.999, 1e-8)
    lr, b1, b2, eps = f32(0.01), f32(0.9), f32(0.999), f32(1e-8)
    w = tf.Variable(INIT, name="w")
    g = tf.placeholder(tf.float64, INIT.shape)
    train = opt.apply_gradients([(g, w)])
    beta1_power, beta2_power = opt._get_beta_accumulators()
    m, v, var = np.zeros_like(INIT), np.zeros_like(INIT), INIT.copy()
    b1p, b2p = np.float32(b1), np.float32(b2)  # TF keeps the powers in float32 variables
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for grad in GRADS:
            sess.run(train, {g: grad})
            m = b1 * m + (1 - b1) * grad
            v = b2 * v + (1 - b2) * grad**2
            var = var - lr * np.sqrt(1 - float(b2p)) / (1 - float(b1p)) * m / (np.sqrt(v) + eps)
            b1p, b2p = b1p * np.float32(b1), b2p * np.float32(b2)
            np.testing.assert_allclose(sess.run(opt.get_slot(w, "m")), m, rtol=1e-12)
            np.testing.assert_allclose(sess.run(opt.get_slot(w, "v")), v, rtol=1e-12)
            np.testing.assert_allclose(sess.run(w), var, rtol=1e-12)
            assert sess.run(beta1_power) == b1p and sess.run(beta2_power) == b2p


def _adam_op(var0, m0, v0, grad, scalars, nesterov):
    """One ApplyAdam on variables initialized to ``var0, m0, v0``: the new var, m and v."""
    with tf.Graph().as_default():
        var, m, v = (tf.Variable(x) for x in (var0, m0, v0))
        out = training_ops.apply_adam(var, m, v, *scalars, tf.constant(grad), use_nesterov=nesterov)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(out)
            return got, *sess.run([m, v])


def _adam_formula(var0, m0, v0, grad, scalars, nesterov):
    """TF's ApplyAdam (training_ops.cc) in whole-array numpy, in its order: the new var, m and v."""
    b1p, b2p, lr, b1, b2, eps = scalars
    alpha = lr * np.sqrt(1 - b2p) / (1 - b1p)
    m1 = m0 + (grad - m0) * (1 - b1)
    v1 = v0 + (grad * grad - v0) * (1 - b2)
    step = (grad * (1 - b1) + b1 * m1) if nesterov else m1
    return var0 - step * alpha / (np.sqrt(v1) + eps), m1, v1


def test_adam_kernel_exact_formula_including_epsilon_and_nesterov():
    var0, m0, v0, grad = INIT, np.full(INIT.shape, 0.1), np.full(INIT.shape, 0.2), GRADS[0]
    scalars = (0.81, 0.998, 0.01, 0.9, 0.999, 1e-3)
    for nesterov in (False, True):
        got = _adam_op(var0, m0, v0, grad, scalars, nesterov)[0]
        np.testing.assert_allclose(got, _adam_formula(var0, m0, v0, grad, scalars, nesterov)[0], rtol=1e-12)


def test_adam_on_a_large_float32_variable_is_the_formula_bit_for_bit():
    """A variable of several cache blocks and a partial one (the blocked numpy kernel, from
    ``OUT_FORMS_BYTES``): var, m and v equal the formula evaluated in float32 with whole-array numpy, exactly."""
    shape = (3, training_blocks.OUT_FORMS_BYTES // 12 + 7)
    var0, m0, grad = (RNG.standard_normal(shape).astype(np.float32) for _ in range(3))
    v0 = np.abs(RNG.standard_normal(shape)).astype(np.float32)
    scalars = tuple(np.float32(x) for x in (0.81, 0.998, 0.01, 0.9, 0.999, 1e-3))
    for nesterov in (False, True):
        got = _adam_op(var0, m0, v0, grad, scalars, nesterov)
        for value, want in zip(got, _adam_formula(var0, m0, v0, grad, scalars, nesterov)):
            assert value.dtype == np.float32
            np.testing.assert_array_equal(value, want)


def test_float32_variable_with_float32_updates():
    w = tf.Variable(np.ones(3, np.float32))
    train = tf.train.MomentumOptimizer(0.5, 0.5).apply_gradients([(tf.constant(np.ones(3, np.float32)), w)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        sess.run(train)
        out = sess.run(w)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, 1 - 0.5 * 1 - 0.5 * 1.5)


# -- names, slots, collections --------------------------------------------------------
def test_slot_names_and_properties():
    w = tf.Variable(INIT, name="w")
    b = tf.Variable(np.zeros(3), name="b")
    loss = tf.reduce_sum(tf.matmul(tf.ones([1, 2], tf.float64), w.value()) + b.value())
    mom = tf.train.MomentumOptimizer(0.1, 0.9)
    adam = tf.train.AdamOptimizer()
    with tf.name_scope("training"):
        mom.minimize(loss)
        adam.minimize(loss)
    assert mom.get_slot_names() == ["momentum"]
    assert adam.get_slot_names() == ["m", "v"]
    assert mom.get_slot(w, "momentum").name == "w/Momentum:0"
    assert adam.get_slot(w, "m").name == "w/Adam:0"
    assert adam.get_slot(w, "v").name == "w/Adam_1:0"
    assert adam.get_slot(b, "v").name == "b/Adam_1:0"
    assert mom.get_slot(w, "m") is None
    slot = adam.get_slot(w, "m")
    assert not slot.trainable
    assert slot in tf.global_variables() and slot not in tf.trainable_variables()
    assert slot.op.colocation_groups == ["loc:@w"]
    assert slot.shape == w.shape
    names = [v.op.name for v in adam.variables()]
    # slots ignore name scopes; non-slot variables are created in the current one, as in TF
    assert names == ["b/Adam", "b/Adam_1", "training/beta1_power", "training/beta2_power", "w/Adam", "w/Adam_1"]
    beta1_power, _ = adam._get_beta_accumulators()
    assert beta1_power.op.colocation_groups == ["loc:@b"]  # the first variable by name


def test_train_op_names_and_collection():
    w = tf.Variable(INIT, name="w")
    loss = tf.reduce_sum(w.value())
    op1 = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    op2 = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=tf.train.get_or_create_global_step())
    op3 = tf.train.AdamOptimizer().minimize(loss, name="train")
    assert (op1.name, op1.type) == ("GradientDescent", "NoOp")
    assert (op2.name, op2.type) == ("GradientDescent_1", "AssignAdd")
    assert (op3.name, op3.type) == ("train", "NoOp")
    graph = tf.get_default_graph()
    update = graph.get_operation_by_name("GradientDescent/update_w/ApplyGradientDescent")
    assert update.type == "ApplyGradientDescent" and update.colocation_groups == ["loc:@w"]
    before_increment = op2.control_inputs + [c for t in op2.inputs for c in t.op.control_inputs]
    assert graph.get_operation_by_name("GradientDescent_1/update") in before_increment
    assert graph.get_operation_by_name("train/update_w/ApplyAdam").type == "ApplyAdam"
    assert tf.get_collection(tf.GraphKeys.TRAIN_OP) == [op1, op2, op3]


def test_compute_gradients_pairs_and_none():
    w = tf.Variable(INIT, name="w")
    unused = tf.Variable(1.0, name="unused")
    loss = tf.reduce_sum(w.value())
    pairs = tf.train.GradientDescentOptimizer(0.1).compute_gradients(loss)
    assert [v for _, v in pairs] == [w, unused]
    assert pairs[1][0] is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(pairs[0][0]), np.ones_like(INIT))


def test_errors_with_tf_wording():
    opt = tf.train.GradientDescentOptimizer(0.1)
    loss = tf.constant(1.0)
    with pytest.raises(ValueError, match="No variables to optimize."):
        opt.compute_gradients(loss)
    tf.Variable(1.0, name="v")
    with pytest.raises(ValueError, match="No gradients provided for any variable, check your graph"):
        opt.minimize(loss)
    with pytest.raises(ValueError, match="Invalid type"):
        opt.compute_gradients(tf.constant(1))
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        tf.train.Optimizer(False, "")
    with pytest.raises(ValueError, match="No variables provided."):
        opt.apply_gradients([])


# -- convergence and global step -----------------------------------------------------
@pytest.mark.parametrize("make_opt, steps", [
    (lambda: tf.train.GradientDescentOptimizer(0.1), 100),
    (lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True), 150),
    (lambda: tf.train.AdamOptimizer(0.1), 300),
])
def test_minimize_small_quadratic_converges(make_opt, steps):
    a = np.array([[2.0, 0.5], [0.5, 1.0]])
    target = np.array([[1.0], [-2.0]])
    x = tf.Variable(np.zeros((2, 1)), name="x")
    diff = tf.subtract(x.value(), tf.constant(target))
    loss = tf.reduce_sum(tf.multiply(diff, tf.matmul(tf.constant(a), diff)))
    gs = tf.train.get_or_create_global_step()
    train = make_opt().minimize(loss, global_step=gs)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(train)
        np.testing.assert_allclose(sess.run(x), target, atol=1e-3)
        assert tf.train.global_step(sess, gs) == steps


def test_global_step_helpers():
    assert tf.train.get_global_step() is None
    gs = tf.train.get_or_create_global_step()
    assert gs.name == "global_step:0" and gs.dtype.base_dtype == tf.int64 and gs.shape == tf.TensorShape([])
    assert not gs.trainable
    assert tf.get_collection(tf.GraphKeys.GLOBAL_STEP) == [gs] and gs in tf.global_variables()
    assert tf.train.get_or_create_global_step() is gs and tf.train.get_global_step() is gs
    with pytest.raises(ValueError, match='"global_step" already exists.'):
        tf.train.create_global_step()
    other = tf.Graph()
    with tf.name_scope("scope"):
        created = tf.train.create_global_step(other)
    assert created.graph is other and created.name == "global_step:0"
    with tf.Session() as sess:
        sess.run(gs.initializer)
        assert tf.train.global_step(sess, gs) == 0


def test_global_step_tensor_found_by_name_and_checked():
    tf.Variable(1.5, name="global_step")
    with pytest.raises(TypeError, match='Existing "global_step" does not have integer type'):
        tf.train.get_global_step()


# -- the kernels ----------------------------------------------------------------------
def test_shape_and_type_errors_at_construction():
    w = tf.Variable(np.zeros((2, 3)), name="w")
    with pytest.raises(errors.InvalidArgumentError, match="Shape must be rank 0 but is rank 1"):
        training_ops.apply_gradient_descent(w, tf.constant([0.1, 0.2], tf.float64), tf.zeros([2, 3], tf.float64))
    with pytest.raises(errors.InvalidArgumentError, match="Dimension 1 in both shapes must be equal, but are 3 and 4"):
        training_ops.apply_gradient_descent(w, tf.constant(0.1, tf.float64), tf.zeros([2, 4], tf.float64))
    with pytest.raises(TypeError, match="be a mutable tensor"):
        training_ops.apply_gradient_descent(w.value(), tf.constant(0.1, tf.float64), tf.zeros([2, 3], tf.float64))
    with pytest.raises(TypeError, match="Input 'delta' of 'ApplyGradientDescent' Op has type float"):
        training_ops.apply_gradient_descent(w, tf.constant(0.1, tf.float64), tf.zeros([2, 3]))


def test_runtime_shape_check_and_no_partial_update():
    w = tf.Variable(np.zeros(3), name="w")
    accum = tf.Variable(np.zeros(3), name="accum")
    g = tf.placeholder(tf.float64, None)
    out = training_ops.apply_momentum(w, accum, tf.constant(0.1, tf.float64), g, tf.constant(0.9, tf.float64))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(errors.InvalidArgumentError, match=r"var and grad do not have the same shape\[3\] \[2\]"):
            sess.run(out, {g: np.ones(2)})
        np.testing.assert_array_equal(sess.run(accum), np.zeros(3))


def test_uninitialized_variable_fails_precondition():
    w = tf.Variable(np.zeros(3), name="w")
    out = training_ops.apply_gradient_descent(w, tf.constant(0.1, tf.float64), tf.ones([3], tf.float64))
    with tf.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError, match="Attempting to use uninitialized value w"):
            sess.run(out)


def test_concurrent_steps_are_serialized_by_redo():
    """Step A reads, step B commits, then A commits: the result is B's update followed by A's."""
    w = tf.Variable(np.zeros(2), name="w")
    accum = tf.Variable(np.zeros(2), name="accum")
    out = training_ops.apply_momentum(w, accum, tf.constant(0.1, tf.float64), tf.ones([2], tf.float64),
                                      tf.constant(0.5, tf.float64))
    compute = registry.kernel("ApplyMomentum").build(out.op)
    store = VariableStore()
    init = store.begin()
    for name, value in (("w", np.array([1.0, 2.0])), ("accum", np.array([0.5, 0.5]))):
        init.write(store.ref(name), value)
    init.commit()
    lr, mu = np.float64(0.1), np.float64(0.5)
    ga, gb = np.array([1.0, -1.0]), np.array([3.0, 4.0])
    txn_a, txn_b = store.begin(), store.begin()
    compute(StepContext(txn_a, None, 1), store.ref("w"), store.ref("accum"), lr, ga, mu)
    compute(StepContext(txn_b, None, 2), store.ref("w"), store.ref("accum"), lr, gb, mu)
    txn_b.commit()
    txn_a.commit()
    var, acc = np.array([1.0, 2.0]), np.array([0.5, 0.5])
    for grad in (gb, ga):
        acc = acc * mu + grad
        var = var - lr * acc
    np.testing.assert_allclose(store.value("accum"), acc, rtol=1e-12)
    np.testing.assert_allclose(store.value("w"), var, rtol=1e-12)


def test_training_ops_are_stateful_and_not_differentiable():
    for op_type, refs in (("ApplyGradientDescent", {0}), ("ApplyMomentum", {0, 1}), ("ApplyAdam", {0, 1, 2})):
        assert registry.is_stateful(op_type)
        assert registry.ref_inputs(op_type) == refs
        assert registry.gradient_function(op_type) is None
