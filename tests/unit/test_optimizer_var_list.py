"""Optimizer.minimize's var_list as TF's nest.flatten reads it: a dict view (``weights.values()``, as the
corpus's nlintz GAN passes; TF 2.21's compat.v1 optimizer accepts it, run on that program)."""

import numpy as np

import dfcore as tf


def test_var_list_may_be_a_dict_view():
    with tf.Graph().as_default():
        weights = {"a": tf.Variable(1.0), "b": tf.Variable(2.0)}
        frozen = tf.Variable(3.0)
        loss = weights["a"] * weights["b"] * frozen
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=weights.values())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            a, b, c = sess.run([weights["a"], weights["b"], frozen])
    np.testing.assert_allclose([a, b, c], [1.0 - 0.1 * 6.0, 2.0 - 0.1 * 3.0, 3.0], rtol=1e-6)
