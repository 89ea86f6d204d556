"""A deep-MNIST-style training program (two conv layers, a dense layer, dropout, Adam), runnable on dfcore or on
TensorFlow's ``compat.v1``:

    python mnist_deep_program.py dfcore|tensorflow [steps]

The net, in TF 1.x's low-level style (variables made by hand, ``tf.nn`` ops): images [batch, 784] reshaped to
[batch, 28, 28, 1] → conv 5×5×32 SAME + bias + relu → max-pool 2×2/2 → conv 5×5×64 SAME + bias + relu → max-pool
2×2/2 → dense 3136→1024 + relu → dropout (keep 0.5, fed) → dense 1024→10 → softmax cross-entropy, Adam (1e-4).
Batches of 50 synthetic MNIST-shaped images (fixed seed) are fed through placeholders; every 100 steps the
batch accuracy is evaluated with keep 1.0, and at the end the accuracy on a held-out synthetic set. Prints the
seconds after the imports and the final loss. Run by ``bench_whole_programs.py``, one process per engine.
"""

import sys
import time

import numpy as np
from _program_engine import engine

BATCH, TRAIN_IMAGES, TEST_IMAGES, CLASSES = 50, 2000, 500, 10


def synthetic_mnist(rng, count):
    """``count`` flat 28×28 images in [0, 1] (a class-dependent stroke plus noise) and one-hot labels."""
    labels = rng.randint(0, CLASSES, size=count)
    images = rng.rand(count, 28, 28).astype(np.float32) * 0.3
    for digit in range(CLASSES):  # each class lights its own band of rows, so there is something to learn
        images[labels == digit, 2 + 2 * digit:5 + 2 * digit, 4:24] += 0.7
    return images.reshape(count, 784), np.eye(CLASSES, dtype=np.float32)[labels]


def main(name: str, steps: int) -> float:
    tf = engine(name)
    started, started_cpu = time.perf_counter(), time.process_time()
    rng = np.random.RandomState(0)
    train_x, train_y = synthetic_mnist(rng, TRAIN_IMAGES)
    test_x, test_y = synthetic_mnist(rng, TEST_IMAGES)
    tf.set_random_seed(0)

    def weight(shape):
        return tf.Variable(tf.truncated_normal(shape, stddev=0.1))

    def bias(shape):
        return tf.Variable(tf.constant(0.1, shape=shape))

    def conv_relu_pool(inputs, in_channels, out_channels):
        conv = tf.nn.conv2d(inputs, weight([5, 5, in_channels, out_channels]), strides=[1, 1, 1, 1], padding="SAME")
        activated = tf.nn.relu(conv + bias([out_channels]))
        return tf.nn.max_pool(activated, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")

    x = tf.placeholder(tf.float32, [None, 784])
    y_true = tf.placeholder(tf.float32, [None, CLASSES])
    keep_prob = tf.placeholder(tf.float32)
    with tf.name_scope("features"):
        pooled = conv_relu_pool(conv_relu_pool(tf.reshape(x, [-1, 28, 28, 1]), 1, 32), 32, 64)
    with tf.name_scope("classifier"):
        flat = tf.reshape(pooled, [-1, 7 * 7 * 64])
        hidden = tf.nn.relu(tf.matmul(flat, weight([7 * 7 * 64, 1024])) + bias([1024]))
        logits = tf.matmul(tf.nn.dropout(hidden, keep_prob), weight([1024, CLASSES])) + bias([CLASSES])
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_true, logits=logits))
    train = tf.train.AdamOptimizer(1e-4).minimize(loss)
    correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y_true, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            start = step * BATCH % TRAIN_IMAGES
            feed = {x: train_x[start:start + BATCH], y_true: train_y[start:start + BATCH]}
            if step % 100 == 0:
                sess.run(accuracy, {**feed, keep_prob: 1.0})
            _, value = sess.run([train, loss], {**feed, keep_prob: 0.5})
        held_out = sess.run(accuracy, {x: test_x, y_true: test_y, keep_prob: 1.0})
    print(f"seconds {time.perf_counter() - started:.3f} cpu {time.process_time() - started_cpu:.3f} "
          f"loss {value:.4f} accuracy {held_out:.3f}")
    return value


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200)
