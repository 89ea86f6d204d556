"""dfcore.examples.digits_pipeline: the three feeders give the model the same images and labels, decoding leaves
images unchanged, and the tf.data pipeline's description is what the simulation reads."""

import numpy as np

import dfcore as tf
from dfcore.data.pipeline_sim import spec_of
from dfcore.examples import digits_pipeline as dp
from dfcore.examples.digits_data import load_digits_split


def test_decode_returns_the_image_as_float32():
    image = np.arange(64, dtype=np.float64)
    out = dp.decode(image, 0.0)
    assert out.dtype == np.float32 and np.array_equal(out, image)


def test_tf_data_batches_are_the_training_split_in_order_and_feed_batches_cover_an_epoch():
    data = load_digits_split()
    with tf.Graph().as_default():
        model = dp.dataset_model(dp.dataset(data, 16, 0.0, num_parallel_calls=2, prefetch=1))
        with tf.Session() as sess:
            sess.run(model.init)
            xb, yb = sess.run([model.x, model.y])
    np.testing.assert_array_equal(xb, data.x_train[:16])  # parallel map keeps the input order
    np.testing.assert_array_equal(yb, data.y_train[:16])
    batches = dp.feed_batches(data, 16, 0.0, seed=1)
    epoch = [next(batches) for _ in range(len(data.x_train) // 16)]
    labels = np.concatenate([y for _, y in epoch])
    images = np.concatenate([x for x, _ in epoch])
    assert all(x.shape == (16, 64) for x, _ in epoch)
    # one epoch without repeats: every image at most once, each with its own label
    rows = {row.tobytes(): label for row, label in zip(data.x_train, data.y_train)}
    assert len({row.tobytes() for row in images}) == len(images) == len(data.x_train) // 16 * 16
    assert all(rows[row.tobytes()] == label for row, label in zip(images, labels))


def test_the_pipeline_description_is_what_the_simulation_reads():
    data = load_digits_split()
    with tf.Graph().as_default():
        ds = dp.dataset(data, 32, 0.0, num_parallel_calls=2, prefetch=1, simulated_decode_s=1e-5)
        spec = spec_of(ds, step_s=2e-4)
    assert (spec.map_cost_s, spec.calls_per_batch, spec.num_parallel_calls, spec.prefetch) == (1e-5, 32, 2, 1)


def test_feed_dict_and_tf_data_models_train_alike():
    data = load_digits_split()
    feed_model = dp.feed_dict_model(seed=0)
    with tf.Session(graph=feed_model.graph) as sess:
        sess.run(feed_model.init)
        feed_losses = [sess.run([feed_model.train_op, feed_model.loss],
                                {feed_model.x: data.x_train[i:i + 32], feed_model.y: data.y_train[i:i + 32]})[1]
                       for i in range(0, 320, 32)]
    with tf.Graph().as_default():
        model = dp.dataset_model(dp.dataset(data, 32, 0.0), seed=0)
        with tf.Session() as sess:
            sess.run(model.init)
            data_losses = [sess.run([model.train_op, model.loss])[1] for _ in range(10)]
    np.testing.assert_allclose(data_losses, feed_losses, rtol=1e-5)  # same batches, same seeds: same steps
