"""A tf.data tutorial-style training program, runnable on dfcore or on TensorFlow's ``compat.v1``.

    python tfdata_program.py dfcore|tensorflow [steps]

``from_tensor_slices`` over fed arrays → ``map`` (cast, scale, flatten) → ``repeat`` → ``batch(64)`` →
``prefetch(1)``, an initializable iterator, a ``tf.layers`` MLP 784-128-10 trained with SGD. Prints the
seconds (wall and CPU) after the imports and the final loss (the engines must agree on it). Run by
``bench_input_pipeline.py`` in separate processes, one per engine.
"""

import sys
import time

import numpy as np
from _program_engine import engine

BATCH, IMAGES = 64, 2048


def main(name: str, steps: int) -> float:
    tf = engine(name)
    started, started_cpu = time.perf_counter(), time.process_time()
    rng = np.random.RandomState(0)
    images = rng.randint(0, 256, size=(IMAGES, 28, 28)).astype(np.uint8)
    labels = rng.randint(0, 10, size=IMAGES).astype(np.int64)
    tf.set_random_seed(0)
    images_ph = tf.placeholder(tf.uint8, [None, 28, 28])
    labels_ph = tf.placeholder(tf.int64, [None])

    def preprocess(image, label):
        return tf.reshape(tf.cast(image, tf.float32) / 255.0, [784]), label

    dataset = (tf.data.Dataset.from_tensor_slices((images_ph, labels_ph)).map(preprocess).repeat()
               .batch(BATCH).prefetch(1))
    iterator = tf.data.make_initializable_iterator(dataset)
    x, y = iterator.get_next()
    hidden = tf.layers.dense(x, 128, activation=tf.nn.relu,
                             kernel_initializer=tf.constant_initializer(rng.randn(784, 128) * 0.05))
    logits = tf.layers.dense(hidden, 10, kernel_initializer=tf.constant_initializer(rng.randn(128, 10) * 0.05))
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(iterator.initializer, {images_ph: images, labels_ph: labels})
        for _ in range(steps):
            _, value = sess.run([train, loss])
    print(f"seconds {time.perf_counter() - started:.3f} cpu {time.process_time() - started_cpu:.3f} loss {value:.4f}")
    return value


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 300)
