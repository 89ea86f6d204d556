"""A TF1 training loop on the digits fed by tf.data (one-shot iterator: shuffle, map, batch, repeat, prefetch)."""

import dfcore as tf
from dfcore.examples.digits import build_mlp
from dfcore.examples.digits_data import load_digits_split


def test_digits_mlp_through_a_one_shot_iterator(no_thread_leak):
    data = load_digits_split(seed=0)
    tf.set_random_seed(0)
    train = (tf.data.Dataset.from_tensor_slices((data.x_train, data.y_train))
             .shuffle(1000, seed=0)
             .map(lambda x, y: (x * 2.0 - 1.0, y), num_parallel_calls=2)
             .batch(32)
             .repeat(8)
             .prefetch(2))
    x, y = tf.data.make_one_shot_iterator(train).get_next()
    assert x.shape.as_list() == [None, 64] and y.dtype == tf.int64
    logits = build_mlp(x, 64, data.num_classes, seed=0)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train_op = tf.train.AdamOptimizer(0.003).minimize(loss)
    x_test = tf.constant(data.x_test * 2.0 - 1.0)
    test_logits = build_mlp(x_test, 64, data.num_classes, seed=0)  # a second, untrained net: a baseline
    steps = 0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        try:
            while True:
                sess.run(train_op)
                steps += 1
        except tf.errors.OutOfRangeError:
            pass
        trained_logits = sess.run(logits, {x: data.x_test * 2.0 - 1.0})
        untrained = sess.run(tf.reduce_mean(tf.cast(tf.equal(tf.argmax(test_logits, 1), data.y_test), tf.float32)))
    accuracy = (trained_logits.argmax(1) == data.y_test).mean()
    assert steps == 8 * -(-len(data.y_train) // 32)
    assert accuracy > 0.9 > untrained
