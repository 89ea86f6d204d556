"""TF 1.x's "MNIST for ML Beginners" softmax regression (``mnist_softmax.py``), on the 8×8 digits."""

import dfcore as tf

from . import input_data


def main(steps=1000, batch_size=100, learning_rate=0.5):
    """Train and return the test accuracy."""
    # Import data
    mnist = input_data.read_data_sets(one_hot=True)

    # Create the model
    x = tf.placeholder(tf.float32, [None, 64])
    W = tf.Variable(tf.zeros([64, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.matmul(x, W) + b

    # Define loss and optimizer
    y_ = tf.placeholder(tf.float32, [None, 10])
    cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y))
    train_step = tf.train.GradientDescentOptimizer(learning_rate).minimize(cross_entropy)

    sess = tf.InteractiveSession()
    tf.global_variables_initializer().run()
    # Train
    for _ in range(steps):
        batch_xs, batch_ys = mnist.train.next_batch(batch_size)
        sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})

    # Test trained model
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    test_accuracy = sess.run(accuracy, feed_dict={x: mnist.test.images, y_: mnist.test.labels})
    print(test_accuracy)
    sess.close()
    return test_accuracy
