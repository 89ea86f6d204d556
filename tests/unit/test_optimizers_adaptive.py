"""Adagrad, RMSProp, Adadelta and Ftrl against numpy versions of TF's training_ops.cc, with TF's slots."""

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors
from dfcore.framework import registry
from dfcore.ops import training_ops_adaptive

INIT = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
TARGET = np.array([[0.5, 1.0, -1.5], [2.0, -0.75, 0.0]])
CURVATURE = np.array([[1.0, 2.0, 0.5], [1.5, 0.25, 3.0]])
STEPS = 3


def f32(x):
    """A Python float hyperparameter as the optimizer sees it: a float32 constant cast to the variable's dtype."""
    return float(np.float32(x))


def quadratic_grad(var):
    """Gradient of ``sum(CURVATURE * (var - TARGET)²)``."""
    return 2 * CURVATURE * (var - TARGET)


def run_quadratic(opt, slot_names):
    """Minimize the quadratic for STEPS steps on a float64 variable; return its value and its slots' values."""
    w = tf.Variable(INIT, name="w")
    loss = tf.reduce_sum(CURVATURE * tf.square(w.value() - TARGET))
    train = opt.minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(STEPS):
            sess.run(train)
        return sess.run(w), {name: sess.run(opt.get_slot(w, name)) for name in slot_names}


def check(got, want):
    var, slots = got
    want_var, want_slots = want
    np.testing.assert_allclose(var, want_var, rtol=1e-12)
    for name, value in want_slots.items():
        np.testing.assert_allclose(slots[name], value, rtol=1e-12, err_msg=name)


# -- numpy references: TF's CPU functors, one step each ----------------------------------
def adagrad_ref(lr, init_accum):
    var, accum = INIT.copy(), np.full_like(INIT, init_accum)
    for _ in range(STEPS):
        grad = quadratic_grad(var)
        accum = accum + grad**2
        var = var - grad * lr / np.sqrt(accum)
    return var, {"accumulator": accum}


def rms_prop_ref(lr, rho, momentum, eps, centered):
    var, ms, mg, mom = INIT.copy(), np.ones_like(INIT), np.zeros_like(INIT), np.zeros_like(INIT)
    for _ in range(STEPS):
        grad = quadratic_grad(var)
        ms = ms + (grad**2 - ms) * (1 - rho)
        mg = mg + (grad - mg) * (1 - rho)
        denom = ms - mg**2 + eps if centered else ms + eps
        mom = mom * momentum + grad * lr / np.sqrt(denom)
        var = var - mom
    slots = {"rms": ms, "momentum": mom}
    if centered:
        slots["mg"] = mg
    return var, slots


def adadelta_ref(lr, rho, eps):
    var, accum, accum_update = INIT.copy(), np.zeros_like(INIT), np.zeros_like(INIT)
    for _ in range(STEPS):
        grad = quadratic_grad(var)
        accum = accum * rho + grad**2 * (1 - rho)
        update = np.sqrt(accum_update + eps) / np.sqrt(accum + eps) * grad
        var = var - update * lr
        accum_update = accum_update * rho + update**2 * (1 - rho)
    return var, {"accum": accum, "accum_update": accum_update}


def ftrl_ref(lr, power, init_accum, l1, l2, shrinkage):
    var, accum, linear = INIT.copy(), np.full_like(INIT, init_accum), np.zeros_like(INIT)
    for _ in range(STEPS):
        grad = quadratic_grad(var)
        new_accum = accum + grad**2
        linear = linear + grad + 2 * shrinkage * var - (new_accum**-power - accum**-power) / lr * var
        quadratic = new_accum**-power / lr + 2 * l2
        var = np.where(np.abs(linear) > l1, (l1 * np.sign(linear) - linear) / quadratic, 0.0)
        accum = new_accum
    return var, {"accum": accum, "linear": linear}


# -- updates ----------------------------------------------------------------------------
def test_adagrad_matches_training_ops_cc():
    got = run_quadratic(tf.train.AdagradOptimizer(0.3, initial_accumulator_value=0.2), ["accumulator"])
    check(got, adagrad_ref(f32(0.3), 0.2))


@pytest.mark.parametrize("centered", [False, True])
def test_rms_prop_matches_training_ops_cc(centered):
    opt = tf.train.RMSPropOptimizer(0.05, decay=0.8, momentum=0.5, epsilon=1e-3, centered=centered)
    slots = ["rms", "momentum"] + (["mg"] if centered else [])
    check(run_quadratic(opt, slots), rms_prop_ref(f32(0.05), f32(0.8), f32(0.5), f32(1e-3), centered))


def test_adadelta_matches_training_ops_cc():
    got = run_quadratic(tf.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-2), ["accum", "accum_update"])
    check(got, adadelta_ref(1.0, f32(0.9), f32(1e-2)))


@pytest.mark.parametrize("power, l1, l2, shrinkage", [
    (-0.5, 0.0, 0.0, 0.0),
    (-0.5, 0.5, 0.1, 0.0),  # l1 large enough to zero some weights
    (-0.3, 0.05, 0.2, 0.0),  # pow instead of sqrt
    (-0.5, 0.1, 0.1, 0.25),  # ApplyFtrlV2
])
def test_ftrl_matches_training_ops_cc(power, l1, l2, shrinkage):
    opt = tf.train.FtrlOptimizer(0.2, learning_rate_power=power, initial_accumulator_value=0.5,
                                 l1_regularization_strength=l1, l2_regularization_strength=l2,
                                 l2_shrinkage_regularization_strength=shrinkage)
    got = run_quadratic(opt, ["accum", "linear"])
    check(got, ftrl_ref(f32(0.2), f32(power), 0.5, f32(l1), f32(l2), f32(shrinkage)))
    op_type = "ApplyFtrlV2" if shrinkage else "ApplyFtrl"
    assert tf.get_default_graph().get_operation_by_name(f"Ftrl/update_w/{op_type}").type == op_type


def test_float32_variables_stay_float32():
    w = tf.Variable(np.ones(3, np.float32), name="w")
    loss = tf.reduce_sum(tf.square(w.value()))
    ops = [opt.minimize(loss) for opt in (tf.train.AdagradOptimizer(0.1), tf.train.RMSPropOptimizer(0.1),
                                          tf.train.AdadeltaOptimizer(0.1), tf.train.FtrlOptimizer(0.1))]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(ops[0])
        assert sess.run(w).dtype == np.float32


# -- slots: names, initial values, colocation -------------------------------------------
@pytest.mark.parametrize("make_opt, slots", [
    (lambda: tf.train.AdagradOptimizer(0.1), [("accumulator", "w/Adagrad", 0.1)]),
    (lambda: tf.train.RMSPropOptimizer(0.1), [("rms", "w/RMSProp", 1.0), ("momentum", "w/RMSProp_1", 0.0)]),
    (lambda: tf.train.RMSPropOptimizer(0.1, centered=True),
     [("rms", "w/RMSProp", 1.0), ("mg", "w/RMSProp_1", 0.0), ("momentum", "w/RMSProp_2", 0.0)]),
    (lambda: tf.train.AdadeltaOptimizer(), [("accum", "w/Adadelta", 0.0), ("accum_update", "w/Adadelta_1", 0.0)]),
    (lambda: tf.train.FtrlOptimizer(0.1, initial_accumulator_value=0.25),
     [("accum", "w/Ftrl", 0.25), ("linear", "w/Ftrl_1", 0.0)]),
    (lambda: tf.train.FtrlOptimizer(0.1, accum_name="acc", linear_name="lin"),
     [("accum", "w/acc", 0.1), ("linear", "w/lin", 0.0)]),
])
def test_slot_names_and_initial_values(make_opt, slots):
    w = tf.Variable(INIT, name="w")
    opt = make_opt()
    opt.minimize(tf.reduce_sum(tf.square(w.value())))
    assert opt.get_slot_names() == sorted(name for name, _, _ in slots)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for name, op_name, value in slots:
            slot = opt.get_slot(w, name)
            assert slot.op.name == op_name and not slot.trainable and slot.shape == w.shape
            assert slot.dtype.base_dtype == tf.float64
            assert slot.op.colocation_groups == ["loc:@w"]
            np.testing.assert_array_equal(sess.run(slot), np.full(INIT.shape, value))


@pytest.mark.parametrize("make_opt", [
    lambda: tf.train.AdagradOptimizer(0.1), lambda: tf.train.RMSPropOptimizer(0.1, momentum=0.9, centered=True),
    lambda: tf.train.AdadeltaOptimizer(), lambda: tf.train.FtrlOptimizer(0.1),
])
def test_slots_sit_on_their_variables_ps_task(make_opt):
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        variables = [tf.Variable(np.ones((2, 2)), name=f"v{i}") for i in range(4)]
        loss = tf.add_n([tf.reduce_sum(tf.square(v.value())) for v in variables])
        opt = make_opt()
        train = opt.minimize(loss)
    assert {v.device for v in variables} == {"/job:ps/task:0", "/job:ps/task:1"}
    for var in variables:
        for name in opt.get_slot_names():
            slot = opt.get_slot(var, name)
            assert slot.device == var.device, (var.op.name, name, slot.device)
            assert slot.op.colocation_groups == [f"loc:@{var.op.name}"]
    updates = [op for op in train.graph.get_operations() if op.type.startswith("Apply")]
    assert len(updates) == 4 and all(op.colocation_groups and op.colocation_groups[0].startswith("loc:@v")
                                     for op in updates)


# -- errors and registry ----------------------------------------------------------------
def test_constructor_errors_in_tfs_words():
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="initial_accumulator_value -1.000000 needs to be positive or zero"):
        tf.train.FtrlOptimizer(0.1, initial_accumulator_value=-1.0)
    with pytest.raises(ValueError, match="learning_rate_power 0.500000 needs to be negative or zero"):
        tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match="l1_regularization_strength -0.100000 needs to be positive or zero"):
        tf.train.FtrlOptimizer(0.1, l1_regularization_strength=-0.1)
    with pytest.raises(ValueError, match="l2_shrinkage_regularization_strength -1.000000 needs to be positive"):
        tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=-1.0)


def test_kernel_shape_and_type_errors_name_the_op():
    w = tf.Variable(np.zeros((2, 3)), name="w")
    acc = tf.Variable(np.zeros((2, 3)), name="acc")
    with pytest.raises(errors.InvalidArgumentError, match="Dimension 1 in both shapes must be equal.*'ApplyAdagrad'"):
        training_ops_adaptive.apply_adagrad(w, acc, tf.constant(0.1, tf.float64), tf.zeros([2, 4], tf.float64))
    with pytest.raises(errors.InvalidArgumentError, match="Shape must be rank 0 but is rank 1"):
        training_ops_adaptive.apply_adadelta(w, acc, acc, tf.constant([0.1], tf.float64), 0.9, 1e-6,
                                             tf.zeros([2, 3], tf.float64))
    with pytest.raises(TypeError, match="'ApplyFtrl' Op requires that input 'linear' be a mutable tensor"):
        training_ops_adaptive.apply_ftrl(w, acc, acc.value(), tf.zeros([2, 3], tf.float64), 0.1, 0.0, 0.0, -0.5)
    with pytest.raises(TypeError, match="Input 'grad' of 'ApplyRMSProp' Op has type float32"):
        training_ops_adaptive.apply_rms_prop(w, acc, acc, 0.1, 0.9, 0.0, 1e-10, tf.zeros([2, 3]))


def test_adagrad_without_slot_update():
    w, acc = tf.Variable(np.ones(2), name="w"), tf.Variable(np.full(2, 4.0), name="acc")
    out = training_ops_adaptive.apply_adagrad(w, acc, 0.5, tf.constant([1.0, -2.0], tf.float64), update_slots=False)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(out), [1 - 0.5 * 1 / 2, 1 + 0.5 * 2 / 2])
        np.testing.assert_array_equal(sess.run(acc), [4.0, 4.0])


def test_update_ops_are_registered_like_the_others():
    for op_type, refs in (("ApplyAdagrad", {0, 1}), ("ApplyRMSProp", {0, 1, 2}),
                          ("ApplyCenteredRMSProp", {0, 1, 2, 3}), ("ApplyAdadelta", {0, 1, 2}),
                          ("ApplyFtrl", {0, 1, 2}), ("ApplyFtrlV2", {0, 1, 2})):
        assert registry.is_stateful(op_type)
        assert registry.ref_inputs(op_type) == refs
        assert registry.gradient_function(op_type) is None
