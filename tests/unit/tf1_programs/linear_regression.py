"""TF 1.x's "Getting Started" linear regression (placeholders, Variables, the summed squared error,
``GradientDescentOptimizer``, a training loop), fitted to the digits: a digit's value from the
standardized mean intensity of its 8 pixel rows."""

import numpy as np

import dfcore as tf

from . import input_data


def row_features(images):
    """The standardized mean of each image's 8 rows, ``[n, 8]`` float32."""
    rows = images.reshape(-1, input_data.IMAGE_SIZE, input_data.IMAGE_SIZE).mean(axis=2)
    return ((rows - rows.mean(axis=0)) / rows.std(axis=0)).astype(np.float32)


def main(steps=500, learning_rate=1e-4):
    """Train and return ``(curr_W, curr_b, curr_loss)`` as the tutorial prints them."""
    digits = input_data.read_data_sets()
    x_train = row_features(digits.train.images)
    y_train = digits.train.labels.astype(np.float32).reshape(-1, 1)

    # Model parameters
    W = tf.Variable(tf.zeros([8, 1]), dtype=tf.float32)
    b = tf.Variable([0.], dtype=tf.float32)
    # Model input and output
    x = tf.placeholder(tf.float32, [None, 8])
    linear_model = tf.matmul(x, W) + b
    y = tf.placeholder(tf.float32, [None, 1])

    # loss
    loss = tf.reduce_sum(tf.square(linear_model - y))  # sum of the squares
    # optimizer
    optimizer = tf.train.GradientDescentOptimizer(learning_rate)
    train = optimizer.minimize(loss)

    # training loop
    init = tf.global_variables_initializer()
    sess = tf.Session()
    sess.run(init)  # reset values to wrong
    for i in range(steps):
        sess.run(train, {x: x_train, y: y_train})

    # evaluate training accuracy
    curr_W, curr_b, curr_loss = sess.run([W, b, loss], {x: x_train, y: y_train})
    print("W: %s b: %s loss: %s" % (curr_W.ravel(), curr_b, curr_loss))
    sess.close()
    return curr_W, curr_b, curr_loss
