"""Train a small convolutional net on scikit-learn's digits with ``tf.layers``; prints ``test_accuracy=<value>``.

Run: ``python -m dfcore.examples.conv_digits [--epochs 12] [--batch-size 32] [--lr 0.002] [--seed 0]``.
The program is written against TensorFlow 1's API (``tf.layers``, ``tf.train.exponential_decay``,
a training and an evaluation tower sharing their variables through ``variable_scope(reuse=True)``);
only the import differs. Seeded: the same arguments give the same accuracy.
"""

import argparse

import dfcore as tf
from dfcore.examples.digits_data import fit_full_batches, load_digits_split

IMAGE_SIZE = 8
FILTERS = (32, 64)
HIDDEN = 128
DROPOUT_RATE = 0.25


def conv_net(images, num_classes, training):
    """Logits ``[batch, num_classes]`` of ``images`` ``[batch, 8, 8, 1]``.

    conv 3×3 (32, same, relu) → max-pool 2×2 → conv 3×3 (64, same, relu) → max-pool 2×2 → flatten →
    dense 128 (relu) → dropout (``training``: a bool) → dense ``num_classes``. Variables are made by
    ``tf.layers`` in the current variable scope (``conv2d/kernel`` … ``dense_1/bias``).
    """
    hidden = images
    for filters in FILTERS:
        hidden = tf.layers.conv2d(hidden, filters, 3, padding="same", activation=tf.nn.relu)
        hidden = tf.layers.max_pooling2d(hidden, 2, 2)
    hidden = tf.layers.dense(tf.layers.flatten(hidden), HIDDEN, activation=tf.nn.relu)
    hidden = tf.layers.dropout(hidden, rate=DROPOUT_RATE, training=training)
    return tf.layers.dense(hidden, num_classes)


def train(epochs=12, batch_size=32, learning_rate=0.002, seed=0, progress=True):
    """Train on the digits' training split and return the test accuracy (a float in [0, 1])."""
    data = load_digits_split(seed=seed)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        x = tf.placeholder(tf.float32, [None, data.num_features], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        images = tf.reshape(x, [-1, IMAGE_SIZE, IMAGE_SIZE, 1])
        with tf.variable_scope("conv_net"):
            logits = conv_net(images, data.num_classes, training=True)
        with tf.variable_scope("conv_net", reuse=True):
            eval_logits = conv_net(images, data.num_classes, training=False)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        global_step = tf.train.get_or_create_global_step()
        steps_per_epoch = len(data.x_train) // batch_size
        rate = tf.train.exponential_decay(learning_rate, global_step, 4 * steps_per_epoch, 0.5, staircase=True)
        train_op = tf.train.AdamOptimizer(rate).minimize(loss, global_step=global_step)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(eval_logits, 1), y), tf.float32))
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        fit_full_batches(sess, train_op, x, y, data, epochs, batch_size, seed, "conv_digits", progress)
        return float(sess.run(accuracy, {x: data.x_test, y: data.y_test}))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.002)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    accuracy = train(args.epochs, args.batch_size, args.lr, args.seed, not args.no_progress)
    print(f"test_accuracy={accuracy:.4f}")


if __name__ == "__main__":
    main()
