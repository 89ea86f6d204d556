"""The pattern of TF 1.x's ``cifar10_multi_gpu_train.py`` (with ``cifar10.py``'s model), on 8×8×1 digits.

``inference`` builds conv → pool → lrn → conv → lrn → pool → two dense layers → softmax_linear with
``tf.get_variable`` under ``tf.variable_scope``; every weight lives on the CPU (``_variable_on_cpu``),
dense weights carry an L2 decay in the ``'losses'`` collection. ``build_train_op`` makes one tower per
GPU (each reading its half of the batch), averages their gradients on the CPU, applies them and keeps
an exponential moving average of the trainable variables, as the tutorial's ``train()`` does.
"""

import os
import re

import numpy as np

import dfcore as tf

from . import input_data

BATCH_SIZE = 32  # per tower
NUM_CLASSES = input_data.NUM_CLASSES
TOWER_NAME = 'tower'
MOVING_AVERAGE_DECAY = 0.9999
NUM_EPOCHS_PER_DECAY = 350.0
LEARNING_RATE_DECAY_FACTOR = 0.1
INITIAL_LEARNING_RATE = 0.1


def _activation_summary(x):
    tensor_name = re.sub('%s_[0-9]*/' % TOWER_NAME, '', x.op.name)
    tf.summary.histogram(tensor_name + '/activations', x)
    tf.summary.scalar(tensor_name + '/sparsity', tf.nn.zero_fraction(x))


def _variable_on_cpu(name, shape, initializer):
    with tf.device('/cpu:0'):
        var = tf.get_variable(name, shape, initializer=initializer, dtype=tf.float32)
    return var


def _variable_with_weight_decay(name, shape, stddev, wd):
    var = _variable_on_cpu(name, shape, tf.truncated_normal_initializer(stddev=stddev, dtype=tf.float32))
    if wd is not None:
        weight_decay = tf.multiply(tf.nn.l2_loss(var), wd, name='weight_loss')
        tf.add_to_collection('losses', weight_decay)
    return var


def inference(images):
    """Logits ``[batch, NUM_CLASSES]`` of ``images`` ``[batch, 8, 8, 1]``."""
    # conv1
    with tf.variable_scope('conv1') as scope:
        kernel = _variable_with_weight_decay('weights', shape=[3, 3, 1, 32], stddev=0.5, wd=None)
        conv = tf.nn.conv2d(images, kernel, [1, 1, 1, 1], padding='SAME')
        biases = _variable_on_cpu('biases', [32], tf.constant_initializer(0.0))
        pre_activation = tf.nn.bias_add(conv, biases)
        conv1 = tf.nn.relu(pre_activation, name=scope.name)
        _activation_summary(conv1)
    # pool1
    pool1 = tf.nn.max_pool(conv1, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding='SAME', name='pool1')
    # norm1
    norm1 = tf.nn.lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name='norm1')
    # conv2
    with tf.variable_scope('conv2') as scope:
        kernel = _variable_with_weight_decay('weights', shape=[3, 3, 32, 32], stddev=0.08, wd=None)
        conv = tf.nn.conv2d(norm1, kernel, [1, 1, 1, 1], padding='SAME')
        biases = _variable_on_cpu('biases', [32], tf.constant_initializer(0.1))
        pre_activation = tf.nn.bias_add(conv, biases)
        conv2 = tf.nn.relu(pre_activation, name=scope.name)
        _activation_summary(conv2)
    # norm2
    norm2 = tf.nn.lrn(conv2, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name='norm2')
    # pool2
    pool2 = tf.nn.max_pool(norm2, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding='SAME', name='pool2')
    # local3
    with tf.variable_scope('local3') as scope:
        # Move everything into depth so we can perform a single matrix multiply.
        reshape = tf.reshape(pool2, [images.get_shape().as_list()[0], -1])
        dim = reshape.get_shape()[1].value
        weights = _variable_with_weight_decay('weights', shape=[dim, 96], stddev=0.12, wd=0.004)
        biases = _variable_on_cpu('biases', [96], tf.constant_initializer(0.1))
        local3 = tf.nn.relu(tf.matmul(reshape, weights) + biases, name=scope.name)
        _activation_summary(local3)
    # local4
    with tf.variable_scope('local4') as scope:
        weights = _variable_with_weight_decay('weights', shape=[96, 48], stddev=0.14, wd=0.004)
        biases = _variable_on_cpu('biases', [48], tf.constant_initializer(0.1))
        local4 = tf.nn.relu(tf.matmul(local3, weights) + biases, name=scope.name)
        _activation_summary(local4)
    # linear layer(WX + b)
    with tf.variable_scope('softmax_linear') as scope:
        weights = _variable_with_weight_decay('weights', [48, NUM_CLASSES], stddev=1 / 48.0, wd=None)
        biases = _variable_on_cpu('biases', [NUM_CLASSES], tf.constant_initializer(0.0))
        softmax_linear = tf.add(tf.matmul(local4, weights), biases, name=scope.name)
        _activation_summary(softmax_linear)
    return softmax_linear


def loss(logits, labels):
    """Adds the mean cross entropy to the 'losses' collection; returns the total loss."""
    labels = tf.cast(labels, tf.int64)
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits, name='cross_entropy_per_example')
    cross_entropy_mean = tf.reduce_mean(cross_entropy, name='cross_entropy')
    tf.add_to_collection('losses', cross_entropy_mean)
    return tf.add_n(tf.get_collection('losses'), name='total_loss')


def tower_loss(scope, images, labels):
    """The total loss of one tower: its cross entropy plus the weight decay it added (``scope``'s losses)."""
    logits = inference(images)
    _ = loss(logits, labels)
    losses = tf.get_collection('losses', scope)
    total_loss = tf.add_n(losses, name='total_loss')
    for l in losses + [total_loss]:
        loss_name = re.sub('%s_[0-9]*/' % TOWER_NAME, '', l.op.name)
        tf.summary.scalar(loss_name, l)
    return total_loss


def average_gradients(tower_grads):
    """The mean over the towers of each variable's gradient: a list of ``(gradient, variable)``."""
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        # Note that each grad_and_vars looks like the following:
        #   ((grad0_gpu0, var0_gpu0), ... , (grad0_gpuN, var0_gpuN))
        grads = []
        for g, _ in grad_and_vars:
            expanded_g = tf.expand_dims(g, 0)
            grads.append(expanded_g)
        grad = tf.concat(axis=0, values=grads)
        grad = tf.reduce_mean(grad, 0)
        v = grad_and_vars[0][1]
        grad_and_var = (grad, v)
        average_grads.append(grad_and_var)
    return average_grads


def build_train_op(num_gpus, num_batches_per_epoch):
    """The training graph in the default graph; returns a dict of its placeholders and ops."""
    with tf.device('/cpu:0'):
        global_step = tf.get_variable('global_step', [], initializer=tf.constant_initializer(0),
                                      trainable=False)
        decay_steps = int(num_batches_per_epoch * NUM_EPOCHS_PER_DECAY)
        lr = tf.train.exponential_decay(INITIAL_LEARNING_RATE, global_step, decay_steps,
                                        LEARNING_RATE_DECAY_FACTOR, staircase=True)
        opt = tf.train.GradientDescentOptimizer(lr)
        images = tf.placeholder(tf.float32, [num_gpus * BATCH_SIZE, 64], name='images')
        labels = tf.placeholder(tf.int64, [num_gpus * BATCH_SIZE], name='labels')
        image_batches = tf.split(tf.reshape(images, [-1, 8, 8, 1]), num_gpus)
        label_batches = tf.split(labels, num_gpus)
        tower_grads, tower_losses = [], []
        with tf.variable_scope(tf.get_variable_scope()):
            for i in range(num_gpus):
                with tf.device('/gpu:%d' % i):
                    with tf.name_scope('%s_%d' % (TOWER_NAME, i)) as scope:
                        loss = tower_loss(scope, image_batches[i], label_batches[i])
                        tf.get_variable_scope().reuse_variables()
                        summaries = tf.get_collection(tf.GraphKeys.SUMMARIES, scope)
                        grads = opt.compute_gradients(loss)
                        tower_grads.append(grads)
                        tower_losses.append(loss)
        grads = average_gradients(tower_grads)
        summaries.append(tf.summary.scalar('learning_rate', lr))
        for grad, var in grads:
            if grad is not None:
                summaries.append(tf.summary.histogram(var.op.name + '/gradients', grad))
        apply_gradient_op = opt.apply_gradients(grads, global_step=global_step)
        for var in tf.trainable_variables():
            summaries.append(tf.summary.histogram(var.op.name, var))
        variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
        variables_averages_op = variable_averages.apply(tf.trainable_variables())
        train_op = tf.group(apply_gradient_op, variables_averages_op)
        summary_op = tf.summary.merge(summaries)
    return dict(images=images, labels=labels, train_op=train_op, loss=loss, tower_losses=tower_losses,
                tower_grads=tower_grads, grads=grads, summary_op=summary_op, global_step=global_step)


def train(train_dir, max_steps, num_gpus=2):
    """Train for ``max_steps`` steps on simulated GPUs, writing summaries every 10 steps and a final
    checkpoint to ``train_dir``; returns the last tower's loss at every step."""
    digits = input_data.read_data_sets()
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        model = build_train_op(num_gpus, digits.train.num_examples / (num_gpus * BATCH_SIZE))
        saver = tf.train.Saver(tf.global_variables())
        init = tf.global_variables_initializer()
        # Soft placement: the summary ops, which have no GPU kernels, run on the CPU.
        config = tf.ConfigProto(device_count={'GPU': num_gpus}, allow_soft_placement=True)
        with tf.Session(config=config) as sess:
            sess.run(init)
            summary_writer = tf.summary.FileWriter(train_dir, sess.graph)
            loss_values = []
            for step in range(max_steps):
                batch_images, batch_labels = digits.train.next_batch(num_gpus * BATCH_SIZE)
                feed_dict = {model['images']: batch_images, model['labels']: batch_labels}
                _, loss_value = sess.run([model['train_op'], model['loss']], feed_dict)
                assert not np.isnan(loss_value), 'Model diverged with loss = NaN'
                loss_values.append(loss_value)
                if step % 10 == 0:
                    summary_str = sess.run(model['summary_op'], feed_dict)
                    summary_writer.add_summary(summary_str, step)
            summary_writer.close()
            saver.save(sess, os.path.join(train_dir, 'model.ckpt'), global_step=max_steps)
    return loss_values
