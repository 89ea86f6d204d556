"""tf.layers (dense, conv2d, max_pooling2d, flatten, dropout): TF 1.x names, shapes, reuse, values vs numpy, errors."""

import numpy as np
import pytest

import dfcore as tf

RNG = np.random.default_rng(0)


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def numpy_conv2d(x, k, stride, padding):
    """Direct NHWC/HWIO convolution with TF's SAME padding split (extra row/column at the end)."""
    n, h, w, _ = x.shape
    kh, kw, _, o = k.shape
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
        ph, pw = max((oh - 1) * stride + kh - h, 0), max((ow - 1) * stride + kw - w, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, k, axes=([1, 2, 3], [0, 1, 2]))
    return out


# -- dense ------------------------------------------------------------------------------
def test_dense_names_shapes_collections_and_values():
    x = tf.placeholder(tf.float64, [None, 4], name="x")
    y = tf.layers.dense(x, 3, activation=tf.nn.relu, bias_initializer=tf.constant_initializer(0.5))
    z = tf.layers.dense(y, 2, use_bias=False)
    names = [v.op.name for v in tf.trainable_variables()]
    assert names == ["dense/kernel", "dense/bias", "dense_1/kernel"]
    assert tf.global_variables() == tf.trainable_variables()
    assert y.shape.as_list() == [None, 3] and z.shape.as_list() == [None, 2] and y.dtype == tf.float64
    graph = tf.get_default_graph()
    assert [graph.get_operation_by_name(n).type for n in ("dense/MatMul", "dense/BiasAdd", "dense/Relu",
                                                           "dense_1/MatMul")] == ["MatMul", "BiasAdd", "Relu", "MatMul"]
    xv = RNG.standard_normal((5, 4))
    k1, b1, k2, got = run(tf.trainable_variables() + [z], {x: xv})
    assert k1.shape == (4, 3) and b1.shape == (3,) and k2.shape == (3, 2)
    np.testing.assert_array_equal(b1, [0.5] * 3)
    np.testing.assert_allclose(got, np.maximum(xv @ k1 + b1, 0) @ k2, rtol=1e-12)


def test_dense_default_kernel_is_glorot_uniform_and_seeded():
    tf.set_random_seed(3)
    tf.layers.dense(tf.zeros([2, 30]), 20)
    kernel, bias = run(tf.trainable_variables())
    limit = np.sqrt(6 / (30 + 20))
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.9 * limit and kernel.std() > 0.4 * limit
    np.testing.assert_array_equal(bias, np.zeros(20))
    tf.reset_default_graph()
    tf.set_random_seed(3)
    tf.layers.dense(tf.zeros([2, 30]), 20)
    np.testing.assert_array_equal(run(tf.trainable_variables()[0]), kernel)


def test_dense_on_rank_3_inputs_contracts_the_last_axis():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    y = tf.layers.dense(x, 5, kernel_initializer=tf.ones_initializer())
    assert y.shape.as_list() == [None, 3, 5]
    xv = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(run(y, {x: xv}), np.repeat(xv.sum(-1, keepdims=True), 5, -1), rtol=1e-5)


def test_name_and_reuse():
    x = tf.zeros([2, 3])
    a = tf.layers.dense(x, 4, name="fc")
    b = tf.layers.dense(x, 4, name="fc", reuse=True)
    tf.layers.dense(x, 4, name="fc", reuse=tf.AUTO_REUSE)
    assert [v.op.name for v in tf.trainable_variables()] == ["fc/kernel", "fc/bias"]
    assert a.op.name == "fc/BiasAdd" and b.op.name == "fc_1/BiasAdd"  # the ops' name scope is made unique
    with pytest.raises(ValueError, match="Variable fc/kernel already exists, disallowed"):
        tf.layers.dense(x, 4, name="fc")  # a given name is the scope exactly, as TF's _scope=name
    with pytest.raises(ValueError, match="Variable dense/kernel does not exist"):
        tf.layers.dense(x, 4, reuse=True)  # no name: exactly "dense", not made unique
    with pytest.raises(ValueError, match="Trying to share variable fc/kernel, but specified shape"):
        tf.layers.dense(tf.zeros([2, 5]), 4, name="fc", reuse=True)
    with pytest.raises(ValueError, match="Variable missing/kernel does not exist"):
        tf.layers.dense(x, 4, name="missing", reuse=True)


def test_the_classic_tf1_model_function_shares_default_named_layers():
    def model(x, reuse):
        with tf.variable_scope("model", reuse=reuse):
            return tf.layers.dense(tf.layers.dense(x, 8, activation=tf.nn.relu), 2)

    x = tf.placeholder(tf.float32, [None, 3])
    train_logits, test_logits = model(x, False), model(x, True)
    assert [v.op.name for v in tf.trainable_variables()] == [
        "model/dense/kernel", "model/dense/bias", "model/dense_1/kernel", "model/dense_1/bias"]
    xv = RNG.standard_normal((4, 3)).astype(np.float32)
    a, b = run([train_logits, test_logits], {x: xv})
    np.testing.assert_array_equal(a, b)


def test_trainable_false_and_regularizers():
    x = tf.ones([2, 3])
    y = tf.layers.dense(x, 2, trainable=False, kernel_initializer=tf.ones_initializer(),
                        kernel_regularizer=lambda w: tf.reduce_sum(w), activity_regularizer=lambda t: tf.reduce_sum(t))
    assert tf.trainable_variables() == [] and len(tf.global_variables()) == 2
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert run(losses) == [6.0, 12.0]
    assert y.shape.as_list() == [2, 2]


def test_dense_errors_as_tf():
    with pytest.raises(ValueError, match="The last dimension of the inputs to `Dense` should be defined. Found `None`"):
        tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 3)
    with pytest.raises(ValueError, match=r"Input 0 of layer dense_1 is incompatible with the layer: expected "
                                         r"min_ndim=2, found ndim=1. Full shape received: \[3\]"):
        tf.layers.dense(tf.zeros([3]), 3)
    with pytest.raises(TypeError, match="Unable to build `Dense` layer with non-floating point dtype int32"):
        tf.layers.dense(tf.zeros([2, 3], tf.int32), 3)
    with pytest.raises(NotImplementedError, match="does not support kernel_constraint"):
        tf.layers.dense(tf.zeros([2, 3]), 3, kernel_constraint=lambda w: w)


# -- conv2d -----------------------------------------------------------------------------
@pytest.mark.parametrize("padding, stride", [("valid", 1), ("same", 1), ("SAME", 2), ("Valid", 2)])
def test_conv2d_values_shapes_and_names(padding, stride):
    x = tf.placeholder(tf.float64, [None, 7, 6, 2])
    y = tf.layers.conv2d(x, 3, 3, strides=stride, padding=padding, activation=tf.nn.relu,
                         bias_initializer=tf.constant_initializer(0.1))
    xv = RNG.standard_normal((2, 7, 6, 2))
    kernel, bias, got = run([tf.trainable_variables()[0], tf.trainable_variables()[1], y], {x: xv})
    assert [v.op.name for v in tf.trainable_variables()] == ["conv2d/kernel", "conv2d/bias"]
    assert kernel.shape == (3, 3, 2, 3) and bias.shape == (3,)
    want = np.maximum(numpy_conv2d(xv, kernel, stride, padding.upper()) + 0.1, 0)
    assert y.shape.as_list() == [None, *want.shape[1:]]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("conv2d/Conv2D").type == "Conv2D"
    assert graph.get_operation_by_name("conv2d/Relu").type == "Relu"


def test_conv2d_kernel_tuple_dilation_and_second_layer_names():
    x = tf.zeros([1, 9, 9, 1])
    y = tf.layers.conv2d(x, 4, (3, 2), dilation_rate=2, use_bias=False)
    z = tf.layers.conv2d(y, 2, [1, 1])
    assert y.shape.as_list() == [1, 5, 7, 4] and z.shape.as_list() == [1, 5, 7, 2]
    assert [v.op.name for v in tf.trainable_variables()] == ["conv2d/kernel", "conv2d_1/kernel", "conv2d_1/bias"]


def test_conv2d_errors():
    with pytest.raises(ValueError, match=r"Input 0 of layer conv2d is incompatible with the layer: expected ndim=4, "
                                         r"found ndim=3. Full shape received: \[None, 8, 8\]"):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 8, 8]), 2, 3)
    with pytest.raises(ValueError, match="The channel dimension of the inputs should be defined. Found `None`."):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 8, 8, None]), 2, 3)
    with pytest.raises(ValueError, match='The `padding` argument must be .* "valid", "same".*Received: full'):
        tf.layers.conv2d(tf.zeros([1, 4, 4, 1]), 2, 3, padding="full")
    with pytest.raises(ValueError, match=r"The `kernel_size` argument must be a tuple of 2 integers. Received: \(3,"):
        tf.layers.conv2d(tf.zeros([1, 4, 4, 1]), 2, (3, 3, 3))
    with pytest.raises(ValueError, match="strides > 1 not supported in conjunction with dilation_rate > 1"):
        tf.layers.conv2d(tf.zeros([1, 4, 4, 1]), 2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="NHWC kernels only"):
        tf.layers.conv2d(tf.zeros([1, 1, 4, 4]), 2, 3, data_format="channels_first")
    with pytest.raises(ValueError, match='The `data_format` argument must be one of "channels_first", "channels_last"'):
        tf.layers.conv2d(tf.zeros([1, 4, 4, 1]), 2, 3, data_format="nhwc")


def test_windows_larger_than_valid_inputs_fail_at_construction():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Negative dimension size caused by subtracting 3 from 2 "
                                                             r"for 'conv2d/Conv2D' \(op: 'Conv2D'\) with input shapes: "
                                                             r"\[1,2,5,1\], \[3,3,1,2\]"):
        tf.layers.conv2d(tf.zeros([1, 2, 5, 1]), 2, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="subtracting 4 from 3 for 'max_pooling2d/MaxPool'"):
        tf.layers.max_pooling2d(tf.zeros([1, 5, 3, 1]), 4, 1)
    assert tf.layers.max_pooling2d(tf.zeros([1, 5, 3, 1]), 4, 1, padding="same").shape.as_list() == [1, 5, 3, 1]


# -- max_pooling2d, flatten, dropout -------------------------------------------------------
@pytest.mark.parametrize("padding", ["valid", "same"])
def test_max_pooling2d(padding):
    xv = RNG.standard_normal((2, 5, 5, 3))
    y = tf.layers.max_pooling2d(tf.constant(xv), 2, 2, padding=padding)
    size = 3 if padding == "same" else 2
    padded = np.pad(xv, ((0, 0), (0, 1), (0, 1), (0, 0)), constant_values=-np.inf)
    want = padded[:, :2 * size, :2 * size].reshape(2, size, 2, size, 2, 3).max(axis=(2, 4))
    assert y.shape.as_list() == [2, size, size, 3] and y.op.name == "max_pooling2d/MaxPool"
    np.testing.assert_array_equal(run(y), want)
    with pytest.raises(ValueError, match="Input 0 of layer max_pooling2d_1 is incompatible"):
        tf.layers.max_pooling2d(tf.zeros([2, 4, 4]), 2, 2)


def test_flatten_static_dynamic_and_channels_first():
    x = tf.placeholder(tf.float32, [None, 2, 3, 4])
    y = tf.layers.flatten(x)
    assert y.shape.as_list() == [None, 24] and y.op.name == "flatten/Reshape"
    xv = RNG.standard_normal((5, 2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(run(y, {x: xv}), xv.reshape(5, 24))
    dynamic = tf.placeholder(tf.float32, [None, None, 4])
    np.testing.assert_array_equal(run(tf.layers.flatten(dynamic), {dynamic: xv[:, 0]}), xv[:, 0].reshape(5, 12))
    first = tf.layers.flatten(x, data_format="channels_first")
    np.testing.assert_array_equal(run(first, {x: xv}), xv.transpose(0, 2, 3, 1).reshape(5, 24))
    assert tf.layers.flatten(tf.zeros([4])).shape.as_list() == [4, 1]


def test_dropout_training_flag_bool_and_tensor():
    x = tf.ones([200, 50])
    assert tf.layers.dropout(x).op.type == "Identity"
    tf.set_random_seed(1)
    dropped = tf.layers.dropout(x, rate=0.25, training=True)
    flag = tf.placeholder(tf.bool, [])
    maybe = tf.layers.dropout(x, rate=0.25, training=flag)
    with tf.Session() as sess:
        values = sess.run(dropped)
        off = sess.run(maybe, {flag: False})
        on = sess.run(maybe, {flag: True})
    for out in (values, on):
        assert set(np.unique(out)) <= {0.0, np.float32(1 / 0.75)}
        assert 0.2 < (out == 0).mean() < 0.3
    np.testing.assert_array_equal(off, np.ones([200, 50]))
    assert tf.layers.dropout(x, training=tf.constant(False)).op.type == "Identity"
    with pytest.raises(TypeError, match="must be a Tensor, or a Python bool"):
        tf.layers.dropout(x, training="yes")


def test_namespaces():
    assert tf.compat.v1.layers.dense is tf.layers.dense
    assert {"conv2d", "dense", "dropout", "flatten", "max_pooling2d"} <= set(tf.layers.__all__)
    assert all(callable(getattr(tf.layers, name)) for name in tf.layers.__all__)
