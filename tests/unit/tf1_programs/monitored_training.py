"""A ``tf.train.MonitoredTrainingSession`` loop as TF 1.x's "Distributed TensorFlow" how-to writes it
(single process, chief): global step, ``StopAtStepHook``, ``NanTensorHook``, ``LoggingTensorHook``,
a ``checkpoint_dir`` that the session restores from, saves to and writes TensorBoard summaries to."""

import dfcore as tf

from . import input_data

BATCH_SIZE = 64


def main(checkpoint_dir, last_step, save_summaries_steps=10):
    """Train an MLP on the digits until the global step reaches ``last_step``; returns how many
    steps this call ran (fewer when ``checkpoint_dir`` holds a checkpoint to resume from)."""
    tf.logging.set_verbosity(tf.logging.INFO)
    digits = input_data.read_data_sets()
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [None, 64], name='x')
        y_ = tf.placeholder(tf.int64, [None], name='y_')
        hidden = tf.layers.dense(x, 32, activation=tf.nn.relu)
        logits = tf.layers.dense(hidden, input_data.NUM_CLASSES)
        loss = tf.losses.sparse_softmax_cross_entropy(labels=y_, logits=logits)
        tf.summary.scalar('loss', loss)

        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdagradOptimizer(0.1).minimize(loss, global_step=global_step)

        # The StopAtStepHook handles stopping after running given steps.
        hooks = [tf.train.StopAtStepHook(last_step=last_step),
                 tf.train.NanTensorHook(loss),
                 tf.train.LoggingTensorHook({'step': global_step, 'loss': loss}, every_n_iter=10)]

        # The MonitoredTrainingSession takes care of session initialization,
        # restoring from a checkpoint, saving to a checkpoint, and closing when done
        # or an error occurs.
        steps_run = 0
        with tf.train.MonitoredTrainingSession(is_chief=True, checkpoint_dir=checkpoint_dir, hooks=hooks,
                                               save_summaries_steps=save_summaries_steps) as mon_sess:
            while not mon_sess.should_stop():
                batch_x, batch_y = digits.train.next_batch(BATCH_SIZE)
                mon_sess.run(train_op, feed_dict={x: batch_x, y_: batch_y})
                steps_run += 1
    return steps_run
