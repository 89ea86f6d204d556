"""tf.nn.top_k / in_top_k (topk_op.cc, in_topk_op.cc), tf.where (Select/Where), the clip_ops.py functions and
sigmoid_cross_entropy_with_logits, against numpy and finite differences."""

import numpy as np
import pytest

import dfcore as tf
from tests.unit.gradcheck import GRAD_TOL, grad_error

RNG = np.random.default_rng(5)


def _run(fetches, feeds=None):
    with tf.Session() as sess:
        return sess.run(fetches, feeds)


# -- top_k / in_top_k ---------------------------------------------------------------------------------
def test_top_k_values_and_int32_indices_ties_lower_index_first():
    x0 = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 0.0]])
    with tf.Graph().as_default():
        values, indices = tf.nn.top_k(tf.constant(x0), k=3)
        assert values.op.type == "TopKV2" and indices.dtype == tf.int32
        assert values.shape.as_list() == [2, 3] and indices.shape.as_list() == [2, 3]
        got_values, got_indices = _run([values, indices])
    np.testing.assert_array_equal(got_indices, [[1, 2, 3], [0, 1, 2]])
    np.testing.assert_array_equal(got_values, [[3, 3, 2], [5, 5, 5]])


@pytest.mark.parametrize("shape, k", [((7,), 3), ((3, 5), 2), ((2, 2, 6), 6), ((2, 4), 0)])
def test_top_k_matches_a_stable_sort_and_its_gradient_goes_to_the_chosen_entries(shape, k):
    x0 = RNG.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64)  # distinct: a smooth function
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, shape)
        values, indices = tf.nn.top_k(x, k)
        order = np.argsort(-x0, axis=-1, kind="stable")[..., :k]
        got_values, got_indices = _run([values, indices], {x: x0})
        np.testing.assert_array_equal(got_indices, order)
        np.testing.assert_array_equal(got_values, np.take_along_axis(x0, order, axis=-1))
        with tf.Session():
            assert grad_error(x, values, x0) < GRAD_TOL


def test_top_k_errors_name_the_op():
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"input must have last dimension >= k = 5 but is 3 for 'TopKV2'"):
            tf.nn.top_k(tf.zeros([2, 3]), 5)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Shape must be at least rank 1 but is rank 0"):
            tf.nn.top_k(tf.constant(1.0))
        k = tf.placeholder(tf.int32, [])
        with pytest.raises(tf.errors.InvalidArgumentError, match="input must have at least k columns. Had 3, needed 4"):
            _run(tf.nn.top_k(tf.zeros([2, 3]), k), {k: 4})


def test_in_top_k_counts_ties_at_the_boundary_and_rejects_bad_targets():
    predictions = np.array([[0.1, 0.9, 0.9, 0.3], [0.5, 0.2, 0.4, 0.1], [0.3, np.nan, 0.2, 0.1],
                            [0.2, 0.3, 0.4, 0.5]], np.float32)
    with tf.Graph().as_default():
        targets = tf.constant([2, 2, 1, 7])
        top1 = tf.nn.in_top_k(predictions, targets, 1)
        top2 = tf.nn.in_top_k(predictions, targets, 2)
        assert top1.dtype == tf.bool and top1.shape.as_list() == [4] and top1.op.type == "InTopKV2"
        got1, got2 = _run([top1, top2])
        assert tf.gradients(tf.cast(top1, tf.float32), tf.constant(0.0)) == [None]
        with pytest.raises(tf.errors.InvalidArgumentError, match="Dimension 0 in both shapes must be equal"):
            tf.nn.in_top_k(predictions, [1, 2], 1)
    # 0.9 ties 0.9: in the top 1; a NaN prediction and an out-of-range target are never in
    np.testing.assert_array_equal(got1, [True, False, False, False])
    np.testing.assert_array_equal(got2, [True, True, False, False])


# -- where -------------------------------------------------------------------------------------------
def test_where_selects_elementwise_or_by_rows_and_lists_true_coordinates():
    cond0 = np.array([[True, False], [False, True]])
    with tf.Graph().as_default():
        x, y = tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([[-1.0, -2.0], [-3.0, -4.0]])
        both = tf.where(cond0, x, y)
        rows = tf.where([False, True], x, y)
        coordinates = tf.where(cond0)
        assert coordinates.dtype == tf.int64 and coordinates.shape.as_list() == [None, 2]
        grads = tf.gradients(tf.reduce_sum(both * tf.constant([[1.0, 2.0], [3.0, 4.0]])), [x, y])
        got = _run([both, rows, coordinates, grads])
        with pytest.raises(ValueError, match="x and y must both be non-None or both be None."):
            tf.where(cond0, x)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Shape must be rank 0, 1 or 2 but is rank 3"):
            tf.where(tf.zeros([2, 2, 2], tf.bool), x, y)
    np.testing.assert_array_equal(got[0], [[1, -2], [-3, 4]])
    np.testing.assert_array_equal(got[1], [[-1, -2], [3, 4]])
    np.testing.assert_array_equal(got[2], [[0, 0], [1, 1]])
    np.testing.assert_array_equal(got[3][0], [[1, 0], [0, 4]])
    np.testing.assert_array_equal(got[3][1], [[0, 2], [3, 0]])


# -- clipping ----------------------------------------------------------------------------------------
def test_clip_by_value_clips_and_passes_gradients_where_unclipped():
    with tf.Graph().as_default():
        x = tf.constant([-2.0, 0.5, 3.0])
        y = tf.clip_by_value(x, -1.0, 1.0)
        got, grad = _run([y, tf.gradients(tf.reduce_sum(y), x)[0]])
    np.testing.assert_array_equal(got, [-1, 0.5, 1])
    np.testing.assert_array_equal(grad, [0, 1, 0])


@pytest.mark.parametrize("axes", [None, [1], [0]])
def test_clip_by_norm_matches_numpy_and_its_gradient_finite_differences(axes):
    x0 = RNG.standard_normal((3, 4)) * 2
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, x0.shape)
        y = tf.clip_by_norm(x, 1.5, axes=axes)
        norm = np.sqrt(np.sum(x0 ** 2, axis=None if axes is None else tuple(axes), keepdims=True))
        np.testing.assert_allclose(_run(y, {x: x0}), x0 * 1.5 / np.maximum(norm, 1.5), rtol=1e-12)
        with tf.Session():
            assert grad_error(x, y, x0) < GRAD_TOL


def test_clip_by_norm_of_zeros_has_a_zero_gradient_not_nan():
    with tf.Graph().as_default():
        x = tf.zeros([2, 3])
        y = tf.clip_by_norm(x, 1.0)
        got, grad = _run([y, tf.gradients(tf.reduce_sum(y), x)[0]])
    np.testing.assert_array_equal(got, np.zeros([2, 3]))
    assert np.all(np.isfinite(grad))


def test_clip_by_global_norm_scales_every_tensor_by_one_factor():
    a0, b0 = RNG.standard_normal(3) * 4, RNG.standard_normal((2, 2)) * 4
    norm0 = np.sqrt(np.sum(a0 ** 2) + np.sum(b0 ** 2))
    with tf.Graph().as_default():
        a, b = tf.constant(a0), tf.constant(b0)
        (clipped_a, none, clipped_b), norm = tf.clip_by_global_norm([a, None, b], 2.0)
        assert none is None and norm.op.name == "global_norm/global_norm"
        assert clipped_a.op.name == "clip_by_global_norm/clip_by_global_norm/_0"
        (loose_a, loose_b), _ = tf.clip_by_global_norm([a, b], 2 * norm0)
        (given_a, _), used = tf.clip_by_global_norm([a, b], 2.0, use_norm=tf.constant(4.0, tf.float64))
        got = _run([clipped_a, clipped_b, norm, tf.global_norm([a, b]), loose_a, loose_b, given_a, used])
    np.testing.assert_allclose(got[2], norm0, rtol=1e-12)
    np.testing.assert_allclose(got[3], norm0, rtol=1e-12)
    np.testing.assert_allclose(got[0], a0 * 2.0 / norm0, rtol=1e-12)
    np.testing.assert_allclose(got[1], b0 * 2.0 / norm0, rtol=1e-12)
    np.testing.assert_allclose(got[4], a0, rtol=1e-12)  # under the limit: unchanged
    np.testing.assert_allclose(got[5], b0, rtol=1e-12)
    np.testing.assert_allclose(got[6], a0 * 0.5, rtol=1e-12)
    assert got[7] == 4.0


@pytest.mark.filterwarnings("ignore:invalid value encountered in subtract:RuntimeWarning")  # inf - inf, on purpose
def test_clip_by_global_norm_of_an_infinite_norm_is_nan_and_t_list_must_be_a_sequence():
    with tf.Graph().as_default():
        (clipped,), norm = tf.clip_by_global_norm([tf.constant([np.inf, 1.0])], 1.0)
        got, got_norm = _run([clipped, norm])
        with pytest.raises(TypeError, match="t_list should be a sequence"):
            tf.clip_by_global_norm(tf.constant([1.0]), 1.0)
    assert np.isinf(got_norm) and np.all(np.isnan(got))


# -- sigmoid_cross_entropy_with_logits -------------------------------------------------------------
def test_sigmoid_cross_entropy_gradient_at_zero_logits_is_sigmoid_minus_labels():
    labels0 = np.array([0.0, 1.0, 0.3])
    with tf.Graph().as_default():
        logits = tf.placeholder(tf.float64, [3])
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels0, logits=logits)
        grad = tf.gradients(tf.reduce_sum(loss), logits)[0]
        got, got_grad = _run([loss, grad], {logits: np.zeros(3)})
        x0 = np.array([-30.0, 0.0, 25.0])
        np.testing.assert_allclose(_run(loss, {logits: x0}), np.logaddexp(0, x0) - x0 * labels0, rtol=1e-12)
        with pytest.raises(ValueError, match="Only call `sigmoid_cross_entropy_with_logits` with named arguments"):
            tf.nn.sigmoid_cross_entropy_with_logits(labels0, logits)
    np.testing.assert_allclose(got, np.log(2.0) * np.ones(3), rtol=1e-12)
    np.testing.assert_allclose(got_grad, 0.5 - labels0, rtol=1e-12)
