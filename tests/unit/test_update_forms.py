"""Which form the ``Apply*`` updates run at which size (dfcore.ops.training_blocks.OUT_FORMS_BYTES): on either side of
the threshold the op runs the form chosen and gives TF's formula (training_ops.cc) in whole-array numpy bit for
bit; the out forms keep the step's transaction (a failed step changes nothing, a concurrent commit is redone)."""

import numpy as np
import pytest
from update_formulas import adam_formula, assert_bits, momentum_formula

import dfcore as tf
from dfcore import errors
from dfcore.framework import registry
from dfcore.ops import training_blocks, training_ops
from dfcore.runtime.executor import StepContext
from dfcore.runtime.variable_store import VariableStore

RNG = np.random.default_rng(11)
F32 = np.float32
ADAM_SCALARS = tuple(F32(x) for x in (0.81, 0.998, 0.01, 0.9, 0.999, 1e-3))  # beta1/2 powers, lr, beta1/2, eps
SIZE = training_blocks.OUT_FORMS_BYTES // 4  # float32 elements at the threshold


def _arrays(shape, count):
    """``count`` random float32 arrays; the first gets infinities, a NaN and signed zeros at its start."""
    arrays = [RNG.standard_normal(shape).astype(F32) for _ in range(count)]
    arrays[0].reshape(-1)[:5] = (np.inf, -np.inf, np.nan, 0.0, -0.0)
    return arrays


def _adam_formula(var, m, v, grad, nesterov):
    b1p, b2p, lr, b1, b2, eps = ADAM_SCALARS
    return adam_formula(var, m, v, lr * np.sqrt(1 - b2p) / (1 - b1p), b1, b2, eps, grad, nesterov)


@pytest.fixture
def calls(monkeypatch):
    """The names of the out forms the ops called (``"momentum"``, ``"adam"``), in order."""
    seen = []
    for name in ("momentum", "adam"):
        form = getattr(training_blocks, name)
        monkeypatch.setattr(training_blocks, name, lambda *a, _f=form, _n=name: seen.append(_n) or _f(*a))
    return seen


def _step(initial, build):
    """One step of ``build(*variables)`` on variables initialized to ``initial``: their new values."""
    with tf.Graph().as_default():
        refs = [tf.Variable(x) for x in initial]
        out = build(*refs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(out)
            return sess.run(refs)


@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("size, form", [(SIZE - 1, []), (SIZE, ["momentum"])])
def test_momentum_either_side_of_its_threshold_is_the_formula(calls, nesterov, size, form):
    var, accum, grad = _arrays((size,), 3)
    lr, mu = F32(0.01), F32(0.9)
    with np.errstate(all="ignore"):
        got = _step((var, accum), lambda w, a: training_ops.apply_momentum(
            w, a, tf.constant(lr), tf.constant(grad), tf.constant(mu), use_nesterov=nesterov))
        assert_bits(got, momentum_formula(var, accum, lr, grad, mu, nesterov))
    assert calls == form


@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("size, form", [(SIZE - 1, []), (SIZE + 1000, ["adam"])])
def test_adam_either_side_of_its_threshold_is_the_formula(calls, nesterov, size, form):
    """Above the threshold (whole blocks and a partial one) the blocked form, below it the plain one."""
    var, m, grad = _arrays((size,), 3)
    v = np.abs(RNG.standard_normal(var.shape)).astype(F32)
    with np.errstate(all="ignore"):
        got = _step((var, m, v), lambda w, a, b: training_ops.apply_adam(
            w, a, b, *ADAM_SCALARS, tf.constant(grad), use_nesterov=nesterov))
        assert_bits(got, _adam_formula(var, m, v, grad, nesterov))
    assert calls == form


def test_gradient_descent_of_any_size_is_the_plain_formula(calls):
    var, grad = _arrays((SIZE + 1000,), 2)
    alpha = F32(0.1)
    with np.errstate(all="ignore"):
        (got,) = _step((var,), lambda w: training_ops.apply_gradient_descent(w, tf.constant(alpha),
                                                                            tf.constant(grad)))
        assert_bits([got], [var - grad * alpha])
    assert calls == []


def test_a_failed_step_leaves_variables_updated_by_the_out_forms_unchanged(calls):
    """Adam (blocked) and Momentum (whole-array) stage their updates, then the step fails: nothing is published."""
    var, m, grad = _arrays((SIZE,), 3)
    v = np.abs(RNG.standard_normal(var.shape)).astype(F32)
    with tf.Graph().as_default():
        w, slot_m, slot_v, w2, accum = (tf.Variable(x.copy()) for x in (var, m, v, var, m))
        adam = training_ops.apply_adam(w, slot_m, slot_v, *ADAM_SCALARS, tf.constant(grad))
        momentum = training_ops.apply_momentum(w2, accum, F32(0.01), tf.constant(grad), F32(0.9))
        with tf.control_dependencies([adam, momentum]):
            failing = tf.Assert(tf.constant(False), [tf.constant(1)])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(errors.InvalidArgumentError):
                sess.run(failing)
            assert_bits(sess.run([w, slot_m, slot_v, w2, accum]), [var, m, v, var, m])
    assert sorted(calls) == ["adam", "momentum"]


def test_a_concurrent_commit_redoes_the_blocked_adam_on_the_newest_values(calls):
    """Step A reads, step B commits, then A commits: var, m and v are B's update followed by A's, bit for bit."""
    shape = (SIZE,)
    var, m, ga, gb = _arrays(shape, 4)
    v = np.abs(RNG.standard_normal(shape)).astype(F32)
    with tf.Graph().as_default():
        refs = [tf.Variable(np.zeros(shape, F32), name=n) for n in ("w", "m", "v")]
        out = training_ops.apply_adam(*refs, *ADAM_SCALARS, tf.placeholder(tf.float32, shape))
    compute = registry.kernel("ApplyAdam").build(out.op)
    store = VariableStore()
    init = store.begin()
    for name, value in zip(("w", "m", "v"), (var, m, v)):
        init.write(store.ref(name), value)
    init.commit()
    txn_a, txn_b = store.begin(), store.begin()
    with np.errstate(all="ignore"):
        for step, (txn, grad) in enumerate(((txn_a, ga), (txn_b, gb))):
            compute(StepContext(txn, None, step), *(store.ref(n) for n in ("w", "m", "v")), *ADAM_SCALARS, grad)
        txn_b.commit()
        txn_a.commit()
        want = _adam_formula(*_adam_formula(var, m, v, gb, False), ga, False)
    assert_bits([store.value(n) for n in ("w", "m", "v")], want)
    assert calls == ["adam"] * 5  # A, B, then A's redo of m, of v and of var


@pytest.mark.parametrize("size", [8, SIZE])
def test_a_scalar_input_fed_as_a_vector_fails_with_tfs_wording_and_changes_nothing(size):
    """The kernel's runtime checks (TF: "lr is not a scalar: [2]", shape DebugString) on either side of the
    threshold; the variables keep their bits."""
    var, accum = _arrays((size,), 2)
    with tf.Graph().as_default():
        w, a = tf.Variable(var), tf.Variable(accum)
        lr = tf.placeholder(tf.float32, None)
        out = training_ops.apply_momentum(w, a, lr, tf.constant(np.ones(size, F32)), F32(0.9))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(errors.InvalidArgumentError, match=r"^lr is not a scalar: \[2\]\n"):
                sess.run(out, {lr: np.ones(2, F32)})
            assert_bits(sess.run([w, a]), [var, accum])
