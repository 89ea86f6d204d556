"""tf.nn.nce_loss / sampled_softmax_loss with a fixed sampler against numpy, their gradients by finite
differences, and the candidate samplers' distributions and expected counts."""

import numpy as np
import pytest

import dfcore as tf
from tests.unit.gradcheck import grad_error

RNG = np.random.default_rng(5)
W = RNG.standard_normal((10, 4))
B = RNG.standard_normal(10)
X = RNG.standard_normal((3, 4))
LABELS = np.array([[1, 7], [3, 4], [9, 2]], np.int64)
SAMPLED = np.array([4, 0, 7, 5], np.int64)
TRUE_EXP = np.full((3, 2), 0.3)
SAMPLED_EXP = np.array([0.2, 0.5, 0.25, 0.4])


def _numpy_logits(remove_hits):
    true = np.einsum("bd,btd->bt", X, W[LABELS]) + B[LABELS] - np.log(TRUE_EXP)
    sampled = X @ W[SAMPLED].T + B[SAMPLED] - np.log(SAMPLED_EXP)
    if remove_hits:
        sampled = np.where(LABELS[:, :, None] == SAMPLED[None, None, :], -np.finfo(np.float64).max, 0).min(1) \
            + sampled
    return np.concatenate([true, sampled], 1), np.concatenate([np.full((3, 2), 0.5), np.zeros((3, 4))], 1)


def _numpy_nce(remove_hits):
    logits, labels = _numpy_logits(remove_hits)
    losses = np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))
    return losses.sum(1)


def _numpy_sampled_softmax(remove_hits):
    logits, labels = _numpy_logits(remove_hits)
    shifted = logits - logits.max(1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    return -(labels * log_softmax).sum(1)


def _losses(remove_hits):
    weights, biases, inputs = tf.constant(W), tf.constant(B), tf.constant(X)
    sampled = (tf.constant(SAMPLED), tf.constant(TRUE_EXP), tf.constant(SAMPLED_EXP))
    nce = tf.nn.nce_loss(weights, biases, LABELS, inputs, 4, 10, num_true=2, sampled_values=sampled,
                         remove_accidental_hits=remove_hits)
    softmax = tf.nn.sampled_softmax_loss(weights, biases, LABELS, inputs, 4, 10, num_true=2, sampled_values=sampled,
                                         remove_accidental_hits=remove_hits)
    return nce, softmax


@pytest.mark.parametrize("remove_hits", [False, True])
def test_losses_match_numpy(remove_hits):
    with tf.Graph().as_default(), tf.Session() as sess:
        nce, softmax = sess.run(_losses(remove_hits))
    np.testing.assert_allclose(nce, _numpy_nce(remove_hits), rtol=1e-10)
    np.testing.assert_allclose(softmax, _numpy_sampled_softmax(remove_hits), rtol=1e-10)
    assert nce.shape == softmax.shape == (3,)
    # Recorded with TensorFlow 2.21 (tf.compat.v1.nn, same fixed sampled_values and float64 inputs):
    tf_values = {False: ([8.08324968, 6.40656958, 3.50823854], [3.3540976, 3.46628386, 2.56977592]),
                 True: ([7.98909992, 5.53827114, 3.50823854], [3.35182928, 3.41419437, 2.56977592])}
    np.testing.assert_allclose(nce, tf_values[remove_hits][0], rtol=1e-8)
    np.testing.assert_allclose(softmax, tf_values[remove_hits][1], rtol=1e-8)


def test_gradients_by_finite_differences():
    with tf.Graph().as_default(), tf.Session():
        sampled = (tf.constant(SAMPLED), tf.constant(TRUE_EXP), tf.constant(SAMPLED_EXP))
        for loss in (tf.nn.nce_loss, tf.nn.sampled_softmax_loss):
            w = tf.placeholder(tf.float64, W.shape)
            x = tf.placeholder(tf.float64, X.shape)
            b = tf.placeholder(tf.float64, B.shape)
            out_w = loss(w, tf.constant(B), LABELS, tf.constant(X), 4, 10, num_true=2, sampled_values=sampled)
            out_x = loss(tf.constant(W), tf.constant(B), LABELS, x, 4, 10, num_true=2, sampled_values=sampled)
            out_b = loss(tf.constant(W), b, LABELS, tf.constant(X), 4, 10, num_true=2, sampled_values=sampled)
            assert grad_error(w, out_w, W) < 1e-6
            assert grad_error(x, out_x, X) < 1e-6
            assert grad_error(b, out_b, B) < 1e-6


def test_log_uniform_sampler():
    with tf.Graph().as_default():
        true = tf.constant(LABELS)
        unique = tf.nn.log_uniform_candidate_sampler(true, 2, 8, True, 10, seed=3)
        many = tf.nn.log_uniform_candidate_sampler(true, 2, 20000, False, 10, seed=4)
        with tf.Session() as sess:
            (sampled, true_exp, sampled_exp), (draws, _, many_exp) = sess.run([unique, many])
            again = sess.run(unique[0])
        with tf.Session() as sess:
            assert sess.run(unique[0]).tolist() == sampled.tolist()  # a new session repeats the seeded draws
    assert len(set(again.tolist())) == 8  # the next draw: unique again
    probability = lambda k: (np.log(k + 2.0) - np.log(k + 1.0)) / np.log(11.0)  # noqa: E731  TF's range_sampler.cc
    assert sampled.dtype == np.int64 and len(set(sampled.tolist())) == 8
    assert (0 <= sampled).all() and (sampled < 10).all()
    # unique: expected count -expm1(tries * log1p(-P)); the same tries for every class, tries >= 8
    tries = np.log1p(-true_exp) / np.log1p(-probability(LABELS))
    np.testing.assert_allclose(tries, tries.flat[0], rtol=1e-4)
    np.testing.assert_allclose(sampled_exp, -np.expm1(tries.flat[0] * np.log1p(-probability(sampled))), rtol=1e-4)
    assert tries.flat[0] >= 8
    np.testing.assert_allclose(many_exp, probability(draws) * 20000, rtol=1e-5)  # not unique: P * num_sampled
    frequencies = np.bincount(draws, minlength=10) / 20000
    np.testing.assert_allclose(frequencies, probability(np.arange(10)), atol=0.015)


def test_sampler_errors_and_accidental_hits():
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Sampler's range is too small."):
            sess.run(tf.nn.uniform_candidate_sampler(tf.constant(LABELS), 2, 11, True, 10))
        indices, ids, weights = sess.run(tf.nn.compute_accidental_hits(tf.constant(LABELS), tf.constant(SAMPLED), 2))
    # rows 0 (7 at position 2) and 1 (4 at position 0); -FLT_MAX each, as TF's kernel
    assert indices.tolist() == [0, 1] and ids.tolist() == [2, 0]
    np.testing.assert_array_equal(weights, [-np.finfo(np.float32).max] * 2)
