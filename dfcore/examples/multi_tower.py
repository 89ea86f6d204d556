"""Multi-tower data parallelism, as TF's CIFAR-10 multi-GPU tutorial does it, on the digits.

Run: ``python -m dfcore.examples.multi_tower --towers 4 [--epochs 30] [--logdir DIR]``; prints
``test_accuracy=<value>``. With ``--logdir`` it also writes a TensorBoard run there (``tensorboard --logdir DIR``):
the graph, whose "Device" colouring shows the towers on their GPUs, the loss at every step and one traced step.

Variables live on the CPU; each (simulated) GPU gets a tower that computes the loss
and gradients of its slice of the batch; ``average_gradients`` averages the towers'
gradients on the CPU and one optimizer update applies them. With equal slices this
is exactly one SGD step on the full batch (the test checks it to 1e-6).
Source: ``tensorflow/models`` tutorials/image/cifar10/cifar10_multi_gpu_train.py.
"""

import argparse
import contextlib

import dfcore as tf
from dfcore.examples.digits_data import fit_full_batches, load_digits_split
from dfcore.models.mlp import average_gradients, mlp_logits, mlp_variables, tower_loss


def mlp_accuracy(params, num_features):
    """Placeholders ``x`` ``[None, num_features]``, ``y`` (int64 labels) and the MLP's accuracy on them (float32)."""
    x = tf.placeholder(tf.float32, [None, num_features], name="x_eval")
    y = tf.placeholder(tf.int64, [None], name="y_eval")
    correct = tf.equal(tf.argmax(mlp_logits(x, params), 1), y)
    return x, y, tf.reduce_mean(tf.cast(correct, tf.float32))


class TensorBoardRun:
    """Runs training steps and writes them as a TensorBoard run in ``logdir``: the session's graph at once, the
    ``loss_summary`` (a ``tf.summary.scalar``) at every step, and the ``RunMetadata`` of step ``traced_step``
    under the tag ``step<n>`` (compute time and memory per node). Use as a context manager (closes the writer).

    Source: TF 1.x ``tensorflow/examples/tutorials/mnist/mnist_with_summaries.py`` (``FileWriter(logdir,
    sess.graph)``, ``add_summary``, ``add_run_metadata(run_metadata, 'step%03d' % i)``).
    Raises:
        OpError (PermissionDeniedError, ...): ``logdir`` cannot be written (as ``tf.summary.FileWriter``).
    """

    def __init__(self, sess, train_op, loss_summary, logdir, traced_step=1):
        self._sess, self._fetches, self._traced_step = sess, [train_op, loss_summary], traced_step
        self._writer = tf.summary.FileWriter(logdir, sess.graph)
        self.step = 0

    def __call__(self, feed_dict):
        """Run one step on ``feed_dict`` and write its loss (and its trace, on the traced step)."""
        traced = self.step == self._traced_step
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE) if traced else None
        run_metadata = tf.RunMetadata() if traced else None
        _, summary = self._sess.run(self._fetches, feed_dict, options=options, run_metadata=run_metadata)
        self._writer.add_summary(summary, self.step)
        if traced:
            self._writer.add_run_metadata(run_metadata, f"step{self.step}", self.step)
        self.step += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._writer.close()


def fit_and_score(graph, init, model, evaluation, num_gpus, data, epochs, batch_size, seed, desc, progress,
                  logdir=None):
    """Initialize ``graph`` in a session with one CPU and ``num_gpus`` GPUs, fit ``model`` (``train_op``, ``x``,
    ``y``) over full batches, and return the test accuracy (float) that ``evaluation`` (``mlp_accuracy``) measures.
    With ``logdir``, the steps write a :class:`TensorBoardRun` there (``model`` then needs ``loss_summary``)."""
    x_eval, y_eval, accuracy = evaluation
    config = tf.ConfigProto(device_count={"CPU": 1, "GPU": num_gpus})
    with tf.Session(graph=graph, config=config) as sess, contextlib.ExitStack() as stack:
        sess.run(init)
        run_step = None
        if logdir:
            run_step = stack.enter_context(TensorBoardRun(sess, model["train_op"], model["loss_summary"], logdir))
        fit_full_batches(sess, model["train_op"], model["x"], model["y"], data, epochs, batch_size, seed, desc,
                         progress, run_step)
        return float(sess.run(accuracy, {x_eval: data.x_test, y_eval: data.y_test}))


def build_multi_tower(num_towers, batch_size, num_features, num_classes, hidden=64, learning_rate=0.1, seed=0,
                      optimizer=None, dtype=tf.float32):
    """Build the multi-tower training graph in the default graph.

    Returns:
        dict with ``x``, ``y`` (full-batch placeholders), ``params``, ``train_op``,
        ``loss`` (mean of the tower losses) and ``logits`` (full batch, for evaluation).
    Raises:
        ValueError: ``batch_size`` is not divisible by ``num_towers``.
    """
    if batch_size % num_towers:
        raise ValueError(f"batch_size {batch_size} must be divisible by the number of towers {num_towers}")
    with tf.device("/cpu:0"):
        x = tf.placeholder(dtype, [batch_size, num_features], name="x")
        y = tf.placeholder(tf.int64, [batch_size], name="y")
        params = mlp_variables(num_features, hidden, num_classes, seed, dtype)
        opt = optimizer or tf.train.GradientDescentOptimizer(learning_rate)
        x_slices = tf.split(x, num_towers)
        y_slices = tf.split(y, num_towers)
    tower_grads, losses = [], []
    for i in range(num_towers):
        with tf.device(f"/gpu:{i}"), tf.name_scope(f"tower_{i}"):
            loss = tower_loss(x_slices[i], y_slices[i], params)
            losses.append(loss)
            tower_grads.append(opt.compute_gradients(loss, var_list=list(params)))
    with tf.device("/cpu:0"):
        train_op = opt.apply_gradients(average_gradients(tower_grads))
        mean_loss = tf.add_n(losses) / float(num_towers)
    return {"x": x, "y": y, "params": params, "train_op": train_op, "loss": mean_loss}


def train(towers=4, epochs=30, batch_size=64, hidden=64, learning_rate=0.003, seed=0, progress=True, logdir=None):
    """Train with ``towers`` simulated GPUs and return the test accuracy; with ``logdir``, also write a
    TensorBoard run there (:class:`TensorBoardRun`: graph, scalar ``loss`` per step, ``RunMetadata`` tag ``step1``)."""

    data = load_digits_split(seed=seed)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        model = build_multi_tower(towers, batch_size, data.num_features, data.num_classes, hidden,
                                  seed=seed, optimizer=tf.train.AdamOptimizer(learning_rate))
        if logdir:
            with tf.device("/cpu:0"):
                model["loss_summary"] = tf.summary.scalar("loss", model["loss"])
        evaluation = mlp_accuracy(model["params"], data.num_features)
        init = tf.global_variables_initializer()
    return fit_and_score(graph, init, model, evaluation, towers, data, epochs, batch_size, seed, f"{towers} towers",
                         progress, logdir)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--towers", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--logdir", help="write a TensorBoard run (graph, loss per step, one traced step) here")
    args = parser.parse_args(argv)
    accuracy = train(towers=args.towers, epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.lr,
                     seed=args.seed, progress=not args.no_progress, logdir=args.logdir)
    print(f"test_accuracy={accuracy:.4f}")


if __name__ == "__main__":
    main()
