"""Array ops against numpy: values, static shapes (with unknown dims), TF1 op names,
construction errors in TF's wording, and gradients checked by central differences in float64."""

import numpy as np
import pytest

import dfcore as tf
from dfcore.framework import registry
from dfcore.ops.array_ops_slice import strided_slice_grad

RNG = np.random.RandomState(0)


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def gradient_error(x_value, build, y_shape=None, x_shape=None):
    """Max |theoretical - numerical| Jacobian entry of ``build(x)`` at ``x_value`` (float64)."""
    x_value = np.asarray(x_value, np.float64)
    x = tf.placeholder(tf.float64, x_value.shape if x_shape is None else x_shape)
    y = build(x)
    y_shape = y.shape.as_list() if y_shape is None else y_shape
    with tf.Session():
        return tf.test.compute_gradient_error(x, x_value.shape, y, y_shape, x_init_value=x_value)


def values(*shape):
    return RNG.standard_normal(shape)


def op_types():
    return [op.type for op in tf.get_default_graph().get_operations()]


# -- rank, size, shape_n, zeros, ones ------------------------------------------------------
def test_rank_and_size_are_consts_when_static_and_ops_otherwise():
    known = tf.placeholder(tf.float32, [2, 3])
    unknown = tf.placeholder(tf.float32)
    r, s = tf.rank(known), tf.size(known)
    assert (r.op.type, r.op.name, s.op.type, s.op.name) == ("Const", "Rank", "Const", "Size")
    r2, s2 = tf.rank(unknown), tf.size(unknown, out_type=tf.int64)
    assert (r2.op.type, s2.op.type, s2.dtype) == ("Rank", "Size", tf.int64)
    assert r2.shape == tf.TensorShape([]) and s2.shape == tf.TensorShape([])
    value = np.zeros((4, 5, 2), np.float32)
    assert run([r, s, r2, s2], {known: value[0, :2, :1].repeat(3, 1), unknown: value}) == [2, 6, 3, 40]
    assert registry.gradient_function("Rank") is None and registry.gradient_function("Size") is None


def test_shape_n_gives_each_shape():
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32, [2])
    sa, sb = tf.shape_n([a, b])
    assert sa.shape.as_list() == [2] and sb.shape.as_list() == [1] and sa.op.type == "ShapeN"
    out = run([sa, sb], {a: np.zeros((5, 3)), b: np.zeros(2)})
    np.testing.assert_array_equal(out[0], [5, 3])
    np.testing.assert_array_equal(out[1], [2])


def test_zeros_and_ones_are_named_as_tf1():
    small = tf.zeros([2, 3])
    assert (small.op.type, small.op.name) == ("Const", "zeros")
    big = tf.ones([10, 100], tf.int32)
    assert (big.op.type, big.op.name) == ("Fill", "ones")
    assert [t.op.name for t in big.op.inputs] == ["ones/shape_as_tensor", "ones/Const"]
    n = tf.placeholder(tf.int32, [])
    dynamic = tf.zeros([n, 2], name="z")
    assert (dynamic.op.type, dynamic.op.name, dynamic.shape.as_list()) == ("Fill", "z", [None, 2])
    from_tensor = tf.ones(tf.shape(big), tf.float64)
    assert from_tensor.op.name == "ones_1" and from_tensor.dtype == tf.float64
    out = run([small, big, dynamic, from_tensor, tf.zeros([2], tf.bool)], {n: 3})
    np.testing.assert_array_equal(out[0], np.zeros((2, 3), np.float32))
    assert out[1].dtype == np.int32 and out[1].shape == (10, 100) and out[1].min() == 1
    np.testing.assert_array_equal(out[2], np.zeros((3, 2)))
    assert out[3].shape == (10, 100) and out[3].dtype == np.float64
    np.testing.assert_array_equal(out[4], [False, False])


def test_fill_rejects_a_non_scalar_value():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Shape must be rank 0 but is rank 1 for 'Fill'"):
        tf.fill([2], [1.0, 2.0])


# -- transpose ---------------------------------------------------------------------------
def test_transpose_values_shapes_and_names():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    t = tf.transpose(x)
    p = tf.transpose(x, [1, 0, 2])
    assert t.op.name == "transpose" and t.op.inputs[1].op.name == "transpose/perm"
    assert t.shape.as_list() == [4, 3, None] and p.shape.as_list() == [3, None, 4]
    unknown = tf.placeholder(tf.float32)
    u = tf.transpose(unknown)
    assert u.shape.ndims is None
    value = values(2, 3, 4).astype(np.float32)
    out = run([t, p, u], {x: value, unknown: value})
    np.testing.assert_array_equal(out[0], value.T)
    np.testing.assert_array_equal(out[1], value.transpose(1, 0, 2))
    np.testing.assert_array_equal(out[2], value.T)


def test_transpose_errors():
    x = tf.zeros([2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Dimension must be 2 but is 3 for 'transpose"):
        tf.transpose(x, [0, 1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="perm dim 2 is out of range of input rank 2"):
        tf.transpose(x, [0, 2])
    with pytest.raises(TypeError, match="Value passed to parameter 'perm' has DataType float32"):
        tf.transpose(x, [0.0, 1.0])


def test_transpose_gradient():
    assert gradient_error(values(2, 3, 2), lambda x: tf.transpose(x, [2, 0, 1])) < 1e-8
    assert gradient_error(values(3, 2), tf.transpose) < 1e-8


# -- concat --------------------------------------------------------------------------------
def test_concat_values_and_static_shapes():
    a = tf.placeholder(tf.float32, [None, 2])
    b = tf.placeholder(tf.float32, [3, 4])
    c1 = tf.concat([a, b], 1)
    c0 = tf.concat([b, b], 0)
    cm = tf.concat([b, b, b], -1)
    assert c1.shape.as_list() == [3, 6] and c0.shape.as_list() == [6, 4] and cm.shape.as_list() == [3, 12]
    assert c1.op.type == "ConcatV2" and c1.op.name == "concat" and c1.op.inputs[-1].op.name == "concat/axis"
    unknown_axis = tf.concat([a, b], tf.placeholder(tf.int32, []))
    assert unknown_axis.shape.as_list() == [None, None]
    av, bv = values(3, 2).astype(np.float32), values(3, 4).astype(np.float32)
    out = run([c1, c0, cm], {a: av, b: bv})
    np.testing.assert_array_equal(out[0], np.concatenate([av, bv], 1))
    np.testing.assert_array_equal(out[1], np.concatenate([bv, bv], 0))
    np.testing.assert_array_equal(out[2], np.concatenate([bv] * 3, -1))


def test_concat_of_one_value_is_an_identity_named_concat():
    x = tf.constant([1.0, 2.0])
    y = tf.concat([x], 0)
    assert (y.op.type, y.op.name) == ("Identity", "concat")


def test_concat_shape_errors_use_tf_wording():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Shapes must be equal rank, but are 1 and 0 for 'concat' \(op: 'ConcatV2'\) "
                             r"with input shapes: \[2,3\], \[2\], \[\]\."):
        tf.concat([tf.zeros([2, 3]), tf.zeros([2])], 0)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Dimension 0 in both shapes must be equal, but are 2 and 3"):
        tf.concat([tf.zeros([2, 3]), tf.zeros([3, 3])], 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Shape must be at least rank 2 but is rank 1"):
        tf.concat([tf.zeros([2]), tf.zeros([2, 3])], 1)
    axis = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Shape must be rank 2 but is rank 3"):
        tf.concat([tf.zeros([1, 2]), tf.zeros([1, 2, 3])], axis)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Can't concatenate scalars \(use tf.stack instead\)"):
        tf.concat([tf.constant(1.0), tf.constant(2.0)], axis)
    with pytest.raises(TypeError, match=r"Tensors in list passed to 'values' of 'ConcatV2' Op have types "
                                        r"\[float32, int32\] that don't all match."):
        tf.concat([tf.zeros([2]), tf.constant([1, 2])], 0)


def test_concat_runtime_mismatch_is_an_invalid_argument_error():
    a = tf.placeholder(tf.float32, [None, None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="ConcatOp : Dimensions of inputs should match"):
        run(tf.concat([a, tf.zeros([2, 2])], 0), {a: np.zeros((2, 3))})


def test_concat_gradient_known_and_unknown_shapes():
    other = tf.constant(values(2, 3))
    assert gradient_error(values(2, 2), lambda x: tf.concat([x, other, x], -1)) < 1e-8
    assert gradient_error(values(2, 2), lambda x: tf.concat([other, x], 1), y_shape=[2, 5], x_shape=[None, 2]) < 1e-8


# -- split ---------------------------------------------------------------------------------
def test_split_by_count_and_by_sizes():
    x = tf.placeholder(tf.float32, [None, 6])
    parts = tf.split(x, 3, axis=1)
    sized = tf.split(x, [1, -1, 2], axis=-1)
    assert [p.op.type for p in parts[:1] + sized[:1]] == ["Split", "SplitV"]
    assert [p.shape.as_list() for p in parts] == [[None, 2]] * 3
    assert [p.shape.as_list() for p in sized] == [[None, 1], [None, 3], [None, 2]]
    value = values(4, 6).astype(np.float32)
    out = run(parts + sized, {x: value})
    for got, want in zip(out, np.split(value, 3, 1) + np.split(value, [1, 4], 1)):
        np.testing.assert_array_equal(got, want)
    one = tf.split(tf.constant([1.0, 2.0]), 1)
    assert len(one) == 1
    np.testing.assert_array_equal(run(one[0]), [1.0, 2.0])


def test_split_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dimension size must be evenly divisible by 4 but is 6"):
        tf.split(tf.zeros([6]), 4)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"can't split axis of size 6 into pieces of size \[2,2\]"):
        tf.split(tf.zeros([6]), [2, 2])
    with pytest.raises(ValueError, match="Rank-0 tensors are not supported"):
        tf.split(tf.zeros([6]), tf.constant(2))
    x = tf.placeholder(tf.float32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Number of ways to split should evenly divide"):
        run(tf.split(x, 2)[0], {x: np.zeros(5)})


def test_split_gradients_with_unused_outputs():
    assert gradient_error(values(2, 6), lambda x: tf.split(x, 3, 1)[1]) < 1e-8
    assert gradient_error(values(5, 2), lambda x: tf.split(x, [2, 3], 0)[1] * 2.0) < 1e-8


# -- stack, unstack, iteration, autopacking --------------------------------------------------
def test_stack_values_names_and_axes():
    a = tf.placeholder(tf.float32, [None, 3])
    s0 = tf.stack([a, a])
    s2 = tf.stack([a, a, a], axis=-1)
    assert (s0.op.type, s0.op.name) == ("Pack", "stack")
    assert s0.shape.as_list() == [2, None, 3] and s2.shape.as_list() == [None, 3, 3]
    const = tf.stack([[1, 2], [3, 4]])
    assert (const.op.type, const.op.name) == ("Const", "stack_2")
    value = values(2, 3).astype(np.float32)
    out = run([s0, s2, const], {a: value})
    np.testing.assert_array_equal(out[0], np.stack([value, value]))
    np.testing.assert_array_equal(out[1], np.stack([value] * 3, axis=-1))
    np.testing.assert_array_equal(out[2], [[1, 2], [3, 4]])


def test_stack_errors():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Dimension 0 in both shapes must be equal, but are 2 and 3\n\t"
                             "From merging shape 0 with other shapes. for 'stack'"):
        tf.stack([tf.zeros([2]), tf.zeros([3])])
    with pytest.raises(ValueError, match=r"axis = 3 not in \[-3, 3\)"):
        tf.stack([tf.zeros([2, 2])], axis=3)


def test_convert_to_tensor_packs_lists_holding_tensors_and_iteration_unstacks():
    x = tf.placeholder(tf.float32, [])
    packed = tf.convert_to_tensor([x, 2.0, x])
    assert packed.op.type == "Pack" and packed.shape.as_list() == [3]
    np.testing.assert_array_equal(run(packed, {x: 5.0}), [5.0, 2.0, 5.0])
    rows = list(tf.constant([[1, 2], [3, 4], [5, 6]]))
    assert len(rows) == 3 and rows[0].op.type == "Unpack"
    np.testing.assert_array_equal(run(rows[2]), [5, 6])


def test_unstack_values_and_errors():
    x = tf.placeholder(tf.float32, [2, None, 3])
    parts = tf.unstack(x, axis=-1)
    assert len(parts) == 3 and parts[0].shape.as_list() == [2, None]
    value = values(2, 4, 3).astype(np.float32)
    for i, got in enumerate(run(parts, {x: value})):
        np.testing.assert_array_equal(got, value[..., i])
    with pytest.raises(ValueError, match="Cannot infer num from shape"):
        tf.unstack(x, axis=1)
    with pytest.raises(ValueError, match=r"axis = 3 not in \[-3, 3\)"):
        tf.unstack(x, axis=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dimension must be 4 but is 2"):
        tf.unstack(x, num=4)


def test_stack_and_unstack_gradients():
    other = tf.constant(values(2, 3))
    assert gradient_error(values(2, 3), lambda x: tf.stack([other, x, x], axis=1)) < 1e-8
    assert gradient_error(values(3, 2), lambda x: tf.unstack(x, axis=-1)[1]) < 1e-8


# -- slice, strided_slice, __getitem__ ---------------------------------------------------------
def test_slice_values_shapes_and_errors():
    x = tf.placeholder(tf.float32, [None, 5])
    s = tf.slice(x, [1, 2], [-1, 2])
    assert s.op.type == "Slice" and s.shape.as_list() == [None, 2]
    assert tf.slice(tf.zeros([4, 5]), [1, 2], [-1, -1]).shape.as_list() == [3, 3]
    value = values(4, 5).astype(np.float32)
    np.testing.assert_array_equal(run(s, {x: value}), value[1:, 2:4])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected size\[1\] in \[0, 3\], but got 4"):
        tf.slice(tf.zeros([4, 5]), [0, 2], [1, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Shape must be rank 3 but is rank 2 for 'Slice"):
        tf.slice(tf.zeros([4, 5]), [0, 0, 0], [1, 1, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected size\[0\] in \[0, 1\], but got 2"):
        run(tf.slice(x, [1, 0], [2, 1]), {x: value[:2]})


def test_slice_gradient():
    assert gradient_error(values(3, 4), lambda x: tf.slice(x, [1, 1], [2, -1])) < 1e-8


GETITEM_CASES = [
    lambda t: t[1],
    lambda t: t[-1],
    lambda t: t[1:3],
    lambda t: t[::2],
    lambda t: t[::-1],
    lambda t: t[-3:-1, 1],
    lambda t: t[..., 1],
    lambda t: t[:, None, 1:],
    lambda t: t[1, ..., None],
    lambda t: t[None],
    lambda t: t[...],
    lambda t: t[2:0:-1, ::3, 0],
    lambda t: t[10:],
]


@pytest.mark.parametrize("index", range(len(GETITEM_CASES)))
def test_getitem_matches_numpy(index):
    spec = GETITEM_CASES[index]
    value = np.arange(4 * 5 * 3, dtype=np.float32).reshape(4, 5, 3)
    known = spec(tf.constant(value))
    assert known.op.type == "StridedSlice" and known.op.name == "strided_slice"
    expected = spec(value)
    assert known.shape.as_list() == list(expected.shape)
    x = tf.placeholder(tf.float32, [None, 5, None])
    partial = spec(x)
    assert partial.shape.ndims == expected.ndim
    assert all(d is None or d == e for d, e in zip(partial.shape.as_list(), expected.shape))
    out = run([known, partial], {x: value})
    np.testing.assert_array_equal(out[0], expected)
    np.testing.assert_array_equal(out[1], expected)


def test_getitem_names_and_tensor_indices():
    x = tf.constant(np.arange(10))
    y = x[2:8:2]
    assert [t.op.name for t in y.op.inputs[1:]] == ["strided_slice/stack", "strided_slice/stack_1",
                                                      "strided_slice/stack_2"]
    i = tf.placeholder(tf.int32, [])
    z = x[i]
    w = x[i:]
    assert z.shape.as_list() == [] and w.shape.as_list() == [None]
    assert run([y, z, w], {i: 7}) == [pytest.approx([2, 4, 6]), 7, pytest.approx([7, 8, 9])]
    assert tf.shape(tf.zeros([3, 4]))[1:].op.type == "StridedSlice"


def test_getitem_errors():
    x = tf.zeros([3, 4])
    with pytest.raises(TypeError, match="Only integers, slices"):
        x[1.5]
    with pytest.raises(TypeError, match="Only integers, slices"):
        x[tf.constant(1.0)]
    with pytest.raises(tf.errors.InvalidArgumentError, match="slice index 3 of dimension 0 out of bounds."):
        x[3]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Index out of range using input dim 2"):
        x[1, 2, 3]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Multiple ellipses in slice spec not allowed"):
        x[..., ...]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"strides\[0\] must be non-zero"):
        x[::0]
    p = tf.placeholder(tf.float32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(p[5], {p: np.zeros(2)})


def test_strided_slice_with_masks():
    value = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    y = tf.strided_slice(tf.constant(value), [0, 1, 0], [0, 3, 4], [1, 1, 2], begin_mask=1, end_mask=1,
                         shrink_axis_mask=0)
    np.testing.assert_array_equal(run(y), value[:, 1:3, 0:4:2])
    assert y.shape.as_list() == [2, 2, 2]


@pytest.mark.parametrize("index", [0, 2, 4, 5, 7, 11])
def test_strided_slice_gradient(index):
    assert gradient_error(values(4, 5, 3), GETITEM_CASES[index]) < 1e-8


def test_strided_slice_grad_has_a_gradient():
    dy = tf.placeholder(tf.float64, [2, 3])
    shape = tf.constant([4, 3])
    g = strided_slice_grad(shape, [1, 0], [3, 3], [1, 1], dy)
    assert g.shape.as_list() == [4, 3]
    with tf.Session():
        err = tf.test.compute_gradient_error(dy, [2, 3], g, [4, 3], x_init_value=values(2, 3))
    assert err < 1e-8


# -- gather, unsorted_segment_sum, one_hot ------------------------------------------------------
def test_gather_values_and_shapes():
    params = tf.placeholder(tf.float32, [None, 4, 3])
    g0 = tf.gather(params, [[0, 1], [1, 1]])
    g1 = tf.gather(params, [3, 0], axis=1)
    gm = tf.gather(params, tf.constant([2], tf.int64), axis=-1)
    assert g0.op.type == "GatherV2" and g0.shape.as_list() == [2, 2, 4, 3]
    assert g1.shape.as_list() == [None, 2, 3] and gm.shape.as_list() == [None, 4, 1]
    value = values(2, 4, 3).astype(np.float32)
    out = run([g0, g1, gm], {params: value})
    np.testing.assert_array_equal(out[0], value[[[0, 1], [1, 1]]])
    np.testing.assert_array_equal(out[1], value[:, [3, 0]])
    np.testing.assert_array_equal(out[2], value[..., [2]])


def test_gather_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Shape must be at least rank 3 but is rank 2"):
        tf.gather(tf.zeros([2, 2]), [0], axis=2)
    i = tf.placeholder(tf.int32, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 5 is not in \[0, 3\)"):
        run(tf.gather(tf.zeros([3]), i), {i: [0, 5]})
    with pytest.raises(TypeError, match="parameter 'indices' has DataType float32"):
        tf.gather(tf.zeros([3]), [0.5])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_gradient_sums_repeated_indices(axis):
    assert gradient_error(values(3, 4), lambda x: tf.gather(x, [[2, 0], [2, 2]], axis=axis)) < 1e-8


def test_unsorted_segment_sum_values_gradient_and_errors():
    data = tf.constant(np.arange(12.0).reshape(2, 3, 2))
    ids = tf.constant([[0, 2, 0], [3, 3, 0]])
    out = tf.unsorted_segment_sum(data, ids, 5)
    assert out.shape.as_list() == [5, 2]
    expected = np.zeros((5, 2))
    np.add.at(expected, np.array([[0, 2, 0], [3, 3, 0]]), np.arange(12.0).reshape(2, 3, 2))
    np.testing.assert_array_equal(run(out), expected)
    assert gradient_error(values(4, 2), lambda x: tf.unsorted_segment_sum(x, [1, 0, 1, 1], 3)) < 1e-8
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dimension 0 in both shapes must be equal"):
        tf.unsorted_segment_sum(tf.zeros([3, 2]), [0, 1], 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"segment_ids\[1\] = 4 is out of range \[0, 2\)"):
        run(tf.unsorted_segment_sum(tf.zeros([2]), [0, 4], 2))


def test_one_hot_values_axes_and_dtypes():
    indices = tf.placeholder(tf.int32, [None])
    h = tf.one_hot(indices, 4)
    h0 = tf.one_hot(indices, 3, on_value=5, off_value=-1, axis=0)
    hd = tf.one_hot([[0, 2]], 3, dtype=tf.float64)
    assert (h.op.type, h.op.name, h.dtype, h.shape.as_list()) == ("OneHot", "one_hot", tf.float32, [None, 4])
    assert h0.dtype == tf.int32 and h0.shape.as_list() == [3, None]
    assert hd.dtype == tf.float64 and hd.shape.as_list() == [1, 2, 3]
    out = run([h, h0, hd], {indices: [1, 3, -1, 7]})
    np.testing.assert_array_equal(out[0], [[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(out[1], [[-1, -1, -1, -1], [5, -1, -1, -1], [-1, -1, -1, -1]])
    np.testing.assert_array_equal(out[2], [[[1, 0, 0], [0, 0, 1]]])
    with pytest.raises(TypeError, match="does not match dtype"):
        tf.one_hot([0], 2, on_value=1.0, off_value=0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expected axis to be -1 or between"):
        tf.one_hot([0], 2, axis=3)
    on = tf.placeholder(tf.float32, [])
    assert tf.gradients(tf.one_hot([0, 1], 2, on_value=on, off_value=0.0), on) == [None]


# -- expand_dims, squeeze, tile, pad ------------------------------------------------------------
def test_expand_dims_and_squeeze():
    x = tf.placeholder(tf.float32, [None, 1, 3])
    e = tf.expand_dims(x, -1)
    e0 = tf.expand_dims(x, 0)
    s = tf.squeeze(x, [1])
    assert e.shape.as_list() == [None, 1, 3, 1] and e0.shape.as_list() == [1, None, 1, 3]
    assert s.shape.as_list() == [None, 3] and tf.squeeze(x).shape.ndims is None
    assert tf.squeeze(tf.zeros([1, 2, 1])).shape.as_list() == [2]
    value = values(2, 1, 3).astype(np.float32)
    out = run([e, e0, s, tf.squeeze(x)], {x: value})
    np.testing.assert_array_equal(out[0], value[..., None])
    np.testing.assert_array_equal(out[1], value[None])
    np.testing.assert_array_equal(out[2], value[:, 0])
    np.testing.assert_array_equal(out[3], np.squeeze(value))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Can not squeeze dim\\[2\\], expected a dimension of 1, "
                                                             "got 3"):
        tf.squeeze(x, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Tried to expand dim index 4 for tensor with 3 "
                                                             "dimensions."):
        tf.expand_dims(x, 4)
    with pytest.raises(ValueError, match="Must specify an axis"):
        tf.expand_dims(x)
    assert gradient_error(values(2, 3), lambda t: tf.expand_dims(t, 1)) < 1e-8
    assert gradient_error(values(2, 1, 3), lambda t: tf.squeeze(t, -2)) < 1e-8


def test_tile_values_shapes_and_gradient():
    x = tf.placeholder(tf.float32, [None, 2])
    t = tf.tile(x, [2, 3])
    assert t.op.type == "Tile" and t.shape.as_list() == [None, 6]
    value = values(3, 2).astype(np.float32)
    np.testing.assert_array_equal(run(t, {x: value}), np.tile(value, [2, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dimension must be 2 but is 3"):
        tf.tile(x, [1, 2, 3])
    assert gradient_error(values(2, 3), lambda v: tf.tile(v, [3, 2])) < 1e-8


@pytest.mark.parametrize("mode", ["CONSTANT", "reflect", "SYMMETRIC"])
def test_pad_values_and_gradients(mode):
    paddings = [[1, 2], [2, 1]]
    value = values(3, 4)
    x = tf.placeholder(tf.float64, [None, 4])
    y = tf.pad(x, paddings, mode=mode)
    assert y.op.type == ("Pad" if mode == "CONSTANT" else "MirrorPad") and y.shape.as_list() == [None, 7]
    np.testing.assert_allclose(run(y, {x: value}), np.pad(value, paddings, mode=mode.lower()))
    assert gradient_error(value, lambda t: tf.pad(t, paddings, mode=mode)) < 1e-8


def test_pad_with_constant_values_and_errors():
    y = tf.pad(tf.constant([[1.0]]), [[1, 0], [0, 1]], constant_values=7.0)
    assert y.op.type == "PadV2"
    np.testing.assert_array_equal(run(y), [[7.0, 7.0], [1.0, 7.0]])
    with pytest.raises(ValueError, match="Unknown padding mode: WRAP"):
        tf.pad(tf.zeros([2]), [[1, 1]], mode="wrap")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dimension must be 2 but is 3"):
        tf.pad(tf.zeros([2]), [[1, 1, 1]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="paddings must be less than the dimension size"):
        run(tf.pad(tf.zeros([2]), [[2, 0]], mode="REFLECT"))


def test_non_differentiable_array_ops_are_declared():
    for op_type in ("Rank", "Size", "Shape", "ShapeN", "InvertPermutation", "ConcatOffset"):
        assert registry.gradient_function(op_type) is None


def test_getitem_with_a_fed_index_has_a_gradient():
    i = tf.placeholder(tf.int32, [])
    value = values(4, 3)
    x = tf.placeholder(tf.float64, [4, 3])
    y = x[i:, 1]
    with tf.Session():
        err = tf.test.compute_gradient_error(x, [4, 3], y, [2], x_init_value=value, extra_feed_dict={i: 2})
    assert err < 1e-8


def test_static_values_flow_through_shape_arithmetic():
    y = tf.placeholder(tf.float32, [None, 4, 3])
    x = tf.placeholder(tf.float32, [None])
    n = tf.placeholder(tf.int32, [])
    assert tf.reshape(x, tf.shape(y)[1:]).shape.as_list() == [4, 3]
    assert tf.reshape(x, [n, 3]).shape.as_list() == [None, 3]
    assert tf.reshape(x, tf.concat([[2], tf.shape(y)[2:]], 0)).shape.as_list() == [2, 3]
    assert tf.reshape(x, tf.shape(y)).shape.as_list() == [None, 4, 3]
