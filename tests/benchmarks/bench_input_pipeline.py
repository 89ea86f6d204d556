"""Images per second of the digits MLP (batch 32) fed through a 2 ms-per-image ``decode``: a ``feed_dict`` loop,
a plain Python generator feeding ``feed_dict``, and ``tf.data`` with ``map(num_parallel_calls=2)`` + ``prefetch(1)``
(and TF 1.x's queue runners with two enqueue threads).

Each stage is also timed alone: the ``tf.data`` input pipeline without training (``get_next`` only) and the
training step with a fixed ``feed_dict``. Target (printed, never asserted): the pipelined run reaches the rate of
the slower of the two stages (ratio near 1), while both feed_dict variants pay decode + step one after the other.
The decode is a sleep (``dfcore.examples.digits_pipeline.decode``), which releases the GIL as a C decoder would.

Then a whole tf.data tutorial-style program (``tfdata_program.py``: from_tensor_slices, map, repeat, batch,
prefetch, an initializable iterator, a ``tf.layers`` MLP) runs in separate processes, dfcore and TensorFlow
interleaved, each engine with its default threads (``_programs.py``; TensorFlow is the Python named by
``DFCORE_TF_PYTHON``, else this one when it can import ``tensorflow``). Printed: wall and CPU seconds after the
imports and of the whole process, medians, and dfcore / TF (target, issue 32: <= 1.5).
"""

import statistics
import time

from _programs import compare
from _timing import one_blas_thread, report

import dfcore as tf
from dfcore.examples import digits_pipeline as dp
from dfcore.examples.digits_data import load_digits_split

BATCH, DECODE_S, STEPS, ROUNDS, WARMUP = 32, 0.002, 20, 3, 2


def _rate(run_steps, steps=STEPS):
    """Images/s of ``run_steps(steps)`` after ``WARMUP`` untimed steps."""
    run_steps(WARMUP)
    start = time.perf_counter()
    run_steps(steps)
    return BATCH * steps / (time.perf_counter() - start)


def feed_dict_loop(data):
    """The loop body indexes the arrays and decodes each image, then runs the step: the classic TF1 loop."""
    model = dp.feed_dict_model()
    sess = tf.Session(graph=model.graph)
    sess.run(model.init)
    batches = dp.feed_batches(data, BATCH, 0.0)  # undecoded indices/labels only; decode happens in the loop

    def run_steps(n):
        for _ in range(n):
            xb, yb = next(batches)
            xb = [dp.decode(image, DECODE_S) for image in xb]
            sess.run(model.train_op, {model.x: xb, model.y: yb})

    return run_steps, sess.close


def generator_feed(data):
    """A Python generator yields decoded batches, which the loop feeds: the same serial work, packaged."""
    model = dp.feed_dict_model()
    sess = tf.Session(graph=model.graph)
    sess.run(model.init)
    next_feed = dp.feed_fn(model, dp.feed_batches(data, BATCH, DECODE_S))

    def run_steps(n):
        for _ in range(n):
            sess.run(model.train_op, next_feed())

    return run_steps, sess.close


def tf_data(data, train=True):
    """``map(decode, num_parallel_calls=2)`` → ``batch`` → ``prefetch(1)``; ``train=False``: get_next only."""
    graph = tf.Graph()
    with graph.as_default():
        ds = dp.dataset(data, BATCH, DECODE_S, num_parallel_calls=2, prefetch=1)
        model = dp.dataset_model(ds)
    sess = tf.Session(graph=graph)
    sess.run(model.init)
    fetch = model.train_op if train else model.x.op

    def run_steps(n):
        for _ in range(n):
            sess.run(fetch)

    return run_steps, sess.close


def queue_runners(data):
    """TF 1.x's queue runners: ``slice_input_producer`` → decode → ``shuffle_batch(num_threads=2)``."""
    model = dp.queue_model(data, BATCH, DECODE_S, num_threads=2, capacity=4 * BATCH, min_after_dequeue=BATCH)
    sess = tf.Session(graph=model.graph)
    sess.run(model.init)
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)

    def run_steps(n):
        for _ in range(n):
            sess.run(model.train_op)

    def close():
        coord.request_stop()
        coord.join(threads)
        sess.close()

    return run_steps, close


def train_only(data):
    """The training step alone, with one fixed decoded batch."""
    model = dp.feed_dict_model()
    sess = tf.Session(graph=model.graph)
    sess.run(model.init)
    feed = {model.x: data.x_train[:BATCH], model.y: data.y_train[:BATCH]}

    def run_steps(n):
        for _ in range(n):
            sess.run(model.train_op, feed)

    return run_steps, sess.close


PROGRAM_STEPS, PROGRAM_ROUNDS = 300, 3


def whole_program():
    """The tutorial program on dfcore and on TensorFlow, interleaved rounds; prints medians and ratios."""
    compare("tfdata_program.py", PROGRAM_STEPS, PROGRAM_ROUNDS,
            "tf.data tutorial program (batch 64, MLP 784-128-10)", 1.5)


def main():
    """Print images/s of each way of feeding, of each stage alone, and the ratios; then the whole program."""
    data = load_digits_split()
    makers = {"feed_dict loop": feed_dict_loop, "generator -> feed_dict": generator_feed,
              "tf.data map x2 + prefetch": tf_data, "queue runners, 2 threads": queue_runners,
              "input stage alone (tf.data)": lambda d: tf_data(d, train=False),
              "training step alone": train_only}
    runners = {name: make(data) for name, make in makers.items()}
    rates = {name: [] for name in runners}
    try:
        for r in range(ROUNDS):  # rounds interleave the variants, so a noisy phase hits them all
            names = list(runners)
            for name in names[r % len(names):] + names[:r % len(names)]:
                rates[name].append(_rate(runners[name][0]))
    finally:
        for _, close in runners.values():
            close()
    rate = {name: statistics.median(values) for name, values in rates.items()}
    bound = min(rate["input stage alone (tf.data)"], rate["training step alone"])
    print(f"digits MLP 64-64-10, batch {BATCH}, decode {DECODE_S * 1e3:.0f} ms per image; "
          f"median of {ROUNDS} interleaved rounds of {STEPS} steps")
    report([(name, value, "images/s") for name, value in rate.items()])
    report([("tf.data / feed_dict loop", rate["tf.data map x2 + prefetch"] / rate["feed_dict loop"], "x"),
            ("generator / feed_dict loop", rate["generator -> feed_dict"] / rate["feed_dict loop"], "x"),
            ("queue runners / feed_dict loop", rate["queue runners, 2 threads"] / rate["feed_dict loop"], "x"),
            ("tf.data / slower stage alone (target ~1)", rate["tf.data map x2 + prefetch"] / bound, "x")])
    whole_program()


if __name__ == "__main__":
    with one_blas_thread():
        main()
