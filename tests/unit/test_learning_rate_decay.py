"""tf.train.exponential_decay, polynomial_decay and piecewise_constant against numpy at several global steps."""

import numpy as np
import pytest

import dfcore as tf

STEPS = [0, 1, 7, 10, 11, 25, 99, 100, 101, 250]


def evaluate(make_rate, steps=STEPS, step_dtype=tf.int64):
    """The schedule's value at each step, fed through an integer placeholder standing for the global step."""
    step = tf.placeholder(step_dtype, [], name="step")
    rate = make_rate(step)
    with tf.Session() as sess:
        return rate, [sess.run(rate, {step: s}) for s in steps]


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_decay(staircase):
    rate, got = evaluate(lambda step: tf.train.exponential_decay(0.1, step, 10, 0.5, staircase=staircase))
    exponents = [(s // 10 if staircase else s / 10) for s in STEPS]
    want = [np.float32(0.1) * np.float32(0.5) ** np.float32(e) for e in exponents]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert rate.dtype == tf.float32 and rate.shape == tf.TensorShape([])
    assert rate.op.name == "ExponentialDecay"


def test_exponential_decay_in_float64_and_with_the_global_step_variable():
    gs = tf.train.get_or_create_global_step()
    rate = tf.train.exponential_decay(tf.constant(1.0, tf.float64), gs, 3, 0.9, staircase=True, name="lr")
    increment = tf.assign_add(gs, 4)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(rate) == 1.0
        sess.run(increment)
        assert sess.run(rate) == pytest.approx(float(np.float64(np.float32(0.9))))
    assert rate.dtype == tf.float64 and rate.op.name == "lr"


@pytest.mark.parametrize("power, cycle", [(1.0, False), (2.0, False), (0.5, True), (1.0, True)])
def test_polynomial_decay(power, cycle):
    lr, end, decay_steps = 0.1, 0.01, 10

    def reference(step):
        steps = decay_steps
        if cycle:
            steps = decay_steps * max(np.ceil(step / decay_steps), 1.0)
        else:
            step = min(step, decay_steps)
        return (lr - end) * (1 - step / steps) ** power + end

    rate, got = evaluate(lambda step: tf.train.polynomial_decay(lr, step, decay_steps, end, power=power, cycle=cycle))
    np.testing.assert_allclose(got, [reference(s) for s in STEPS], rtol=1e-5)
    assert rate.op.name == "PolynomialDecay"


def test_polynomial_decay_defaults_end_at_1e_4():
    _, got = evaluate(lambda step: tf.train.polynomial_decay(1.0, step, 100), steps=[50, 100, 1000])
    np.testing.assert_allclose(got, [0.5 * (1 - 1e-4) + 1e-4, 1e-4, 1e-4], rtol=1e-5)


def test_piecewise_constant_boundaries_are_inclusive_on_the_left_interval():
    boundaries, values = [10, 100], [1.0, 0.5, 0.1]
    _, got = evaluate(lambda step: tf.train.piecewise_constant(step, boundaries, values))
    want = [values[0] if s <= 10 else values[1] if s <= 100 else values[2] for s in STEPS]
    np.testing.assert_array_equal(got, np.float32(want))


def test_piecewise_constant_int32_step_float_step_and_one_boundary():
    _, got = evaluate(lambda step: tf.train.piecewise_constant(step, [5], [0.2, 0.02]), steps=[4, 5, 6],
                      step_dtype=tf.int32)
    np.testing.assert_allclose(got, [0.2, 0.2, 0.02], rtol=1e-7)
    _, got = evaluate(lambda x: tf.train.piecewise_constant(x, [0.5, 1.5], [1, 2, 3]), steps=[0.5, 0.75, 9.0],
                      step_dtype=tf.float32)
    assert [int(v) for v in got] == [1, 2, 3]
    assert tf.train.piecewise_constant_decay is tf.train.piecewise_constant


def test_errors_in_tfs_words():
    step = tf.placeholder(tf.int64, [])
    with pytest.raises(ValueError, match="global_step is required for exponential_decay."):
        tf.train.exponential_decay(0.1, None, 10, 0.5)
    with pytest.raises(ValueError, match="global_step is required for polynomial_decay."):
        tf.train.polynomial_decay(0.1, None, 10)
    with pytest.raises(ValueError, match="The length of boundaries should be 1 less than the length of values"):
        tf.train.piecewise_constant(step, [10, 20], [1.0, 0.5])
    with pytest.raises(ValueError, match=r"Boundaries \(<dtype: 'float32'>\) must have the same dtype as x "
                                         r"\(<dtype: 'int64'>\)."):
        tf.train.piecewise_constant(step, [10.0], [1.0, 0.5])
    with pytest.raises(ValueError, match=r"Values must have elements all with the same dtype "
                                         r"\(<dtype: 'float32'> vs <dtype: 'int32'>\)."):
        tf.train.piecewise_constant(step, [10], [1.0, 2])


def test_schedule_drives_an_optimizer():
    gs = tf.train.get_or_create_global_step()
    w = tf.Variable(0.0, name="w")
    lr = tf.train.piecewise_constant(gs, [1], [1.0, 0.1])
    train = tf.train.GradientDescentOptimizer(lr).minimize(-w.value(), global_step=gs)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        assert sess.run(w) == pytest.approx(1.0 + 1.0 + 0.1)
