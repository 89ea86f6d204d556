"""The train-with-averages / evaluate-with-averages pattern of TF 1.x's ``cifar10_train.py`` and
``cifar10_eval.py``, with a softmax-regression model on the digits.

``train`` keeps an ``ExponentialMovingAverage`` of the trainable variables (decay tied to the global
step, updated after each gradient step) and saves a checkpoint; ``evaluate`` builds the model again in
a new graph and restores the *averages* into the model's variables with
``tf.train.Saver(variable_averages.variables_to_restore())``.
"""

import os

import numpy as np

import dfcore as tf

from . import input_data

MOVING_AVERAGE_DECAY = 0.99
BATCH_SIZE = 100


def inference(images):
    """Logits ``[batch, 10]`` of ``images`` ``[batch, 64]``: ``softmax_linear/weights`` and ``biases``."""
    with tf.variable_scope('softmax_linear'):
        weights = tf.get_variable('weights', [64, input_data.NUM_CLASSES], initializer=tf.zeros_initializer())
        biases = tf.get_variable('biases', [input_data.NUM_CLASSES], initializer=tf.zeros_initializer())
        return tf.nn.xw_plus_b(images, weights, biases)


def train(train_dir, max_steps=60, learning_rate=0.5):
    """Train, save ``train_dir/model.ckpt-<max_steps>``; returns the trainable variables' values
    after every step (a dict of name -> list of arrays), as a user would record them to plot."""
    digits = input_data.read_data_sets()
    with tf.Graph().as_default():
        images = tf.placeholder(tf.float32, [None, 64])
        labels = tf.placeholder(tf.int64, [None])
        global_step = tf.train.get_or_create_global_step()
        logits = inference(images)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        opt = tf.train.GradientDescentOptimizer(learning_rate)
        apply_gradient_op = opt.apply_gradients(opt.compute_gradients(loss), global_step=global_step)
        # Track the moving averages of all trainable variables.
        variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
        with tf.control_dependencies([apply_gradient_op]):
            variables_averages_op = variable_averages.apply(tf.trainable_variables())
        with tf.control_dependencies([variables_averages_op]):
            train_op = tf.no_op(name='train')
        saver = tf.train.Saver(tf.global_variables())
        history = {v.op.name: [] for v in tf.trainable_variables()}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(max_steps):
                batch_images, batch_labels = digits.train.next_batch(BATCH_SIZE)
                sess.run(train_op, {images: batch_images, labels: batch_labels})
                for v in tf.trainable_variables():
                    history[v.op.name].append(sess.run(v))
            saver.save(sess, os.path.join(train_dir, 'model.ckpt'), global_step=global_step)
    return history


def evaluate(checkpoint_dir):
    """Restore the moving averages into a fresh model; returns ``(precision, global_step, values)``
    where ``values`` maps each model variable's name to its restored value."""
    digits = input_data.read_data_sets()
    with tf.Graph().as_default():
        images = tf.placeholder(tf.float32, [None, 64])
        labels = tf.placeholder(tf.int64, [None])
        logits = inference(images)
        top_k_op = tf.nn.in_top_k(logits, labels, 1)
        # Restore the moving average version of the learned variables for eval.
        variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY)
        variables_to_restore = variable_averages.variables_to_restore()
        saver = tf.train.Saver(variables_to_restore)
        with tf.Session() as sess:
            ckpt = tf.train.get_checkpoint_state(checkpoint_dir)
            saver.restore(sess, ckpt.model_checkpoint_path)
            global_step = ckpt.model_checkpoint_path.split('/')[-1].split('-')[-1]
            predictions = sess.run(top_k_op, {images: digits.test.images, labels: digits.test.labels})
            precision = np.sum(predictions) / digits.test.num_examples
            values = {v.op.name: sess.run(v) for v in tf.global_variables()}
    return precision, int(global_step), values
