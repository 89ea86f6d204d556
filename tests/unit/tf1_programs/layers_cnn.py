"""A ``tf.layers`` convolutional net with batch normalization on the digits, as TF 1.x users wrote it
after the "Build a CNN with layers" guide: ``conv2d``/``batch_normalization``/``max_pooling2d``/
``dense``/``dropout``, a ``training`` placeholder, the batch-norm updates in ``tf.GraphKeys.UPDATE_OPS``
run through ``tf.control_dependencies``, and ``tf.train.exponential_decay`` driving ``AdamOptimizer``."""

import dfcore as tf

from . import input_data


def cnn_model(features, training):
    """Logits ``[batch, 10]`` of ``features`` ``[batch, 64]``."""
    input_layer = tf.reshape(features, [-1, 8, 8, 1])
    conv1 = tf.layers.conv2d(inputs=input_layer, filters=16, kernel_size=[3, 3], padding="same", use_bias=False)
    bn1 = tf.layers.batch_normalization(conv1, momentum=0.9, training=training)
    pool1 = tf.layers.max_pooling2d(inputs=tf.nn.relu(bn1), pool_size=[2, 2], strides=2)
    conv2 = tf.layers.conv2d(inputs=pool1, filters=32, kernel_size=[3, 3], padding="same", use_bias=False)
    bn2 = tf.layers.batch_normalization(conv2, momentum=0.9, training=training)
    pool2 = tf.layers.max_pooling2d(inputs=tf.nn.relu(bn2), pool_size=[2, 2], strides=2)
    pool2_flat = tf.reshape(pool2, [-1, 2 * 2 * 32])
    dense = tf.layers.dense(inputs=pool2_flat, units=64, activation=tf.nn.relu)
    dropout = tf.layers.dropout(inputs=dense, rate=0.4, training=training)
    return tf.layers.dense(inputs=dropout, units=input_data.NUM_CLASSES)


def main(epochs=3, batch_size=32, starter_learning_rate=0.005):
    """Train and return ``(test_accuracy, moving_means)``: the batch-norm moving means after training."""
    digits = input_data.read_data_sets()
    tf.set_random_seed(0)
    x = tf.placeholder(tf.float32, [None, 64], name='x')
    y = tf.placeholder(tf.int64, [None], name='y')
    training = tf.placeholder_with_default(False, shape=(), name='training')
    logits = cnn_model(x, training)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)

    global_step = tf.train.get_or_create_global_step()
    steps_per_epoch = digits.train.num_examples // batch_size
    learning_rate = tf.train.exponential_decay(starter_learning_rate, global_step, 2 * steps_per_epoch, 0.5,
                                               staircase=True)
    optimizer = tf.train.AdamOptimizer(learning_rate)
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = optimizer.minimize(loss, global_step=global_step)

    correct_prediction = tf.equal(tf.argmax(logits, 1), y)
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    moving_means = [v for v in tf.global_variables() if v.op.name.endswith('moving_mean')]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(epochs * steps_per_epoch):
            batch_x, batch_y = digits.train.next_batch(batch_size)
            sess.run(train_op, feed_dict={x: batch_x, y: batch_y, training: True})
        test_accuracy = sess.run(accuracy, feed_dict={x: digits.test.images, y: digits.test.labels})
        print('test accuracy %g' % test_accuracy)
        return test_accuracy, sess.run(moving_means)
