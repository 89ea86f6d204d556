"""Data-parallel training with mirrored variables and an all-reduce of the gradients, on the digits.

Run: ``python -m dfcore.examples.data_parallel --devices 4 --all-reduce ring [--epochs 30]``;
prints ``test_accuracy=<value>`` and the bytes each device sends per step.

Every (simulated) GPU holds a copy of the MLP's variables and computes the loss and
gradients of its slice of the batch; a ``CollectiveAllReduce`` per variable (ring by
default) averages the gradients across the GPUs, and every replica applies the same
update, so the copies stay equal. With equal slices one step is exactly one full-batch
SGD step (the test checks it to 1e-6). Compare ``dfcore.examples.multi_tower``, which
averages on the CPU. Source: TF's ``MirroredStrategy`` and ``all_reduce.py``.
"""

import argparse

import dfcore as tf
from dfcore.distribute.mirrored import MirroredStrategy
from dfcore.examples.digits_data import load_digits_split
from dfcore.examples.multi_tower import fit_and_score, mlp_accuracy, mlp_variables, tower_loss


def build_data_parallel(num_devices, batch_size, num_features, num_classes, hidden=64, all_reduce_alg="ring",
                        optimizer_fn=None, learning_rate=0.1, seed=0, dtype=tf.float32):
    """Build the replicated training graph in the default graph.

    Returns:
        dict with ``x``, ``y`` (full-batch placeholders, on the CPU), ``strategy``,
        ``replica_vars`` (one ``(w1, b1, w2, b2)`` list per device) and ``train_op``.
    Raises:
        ValueError: ``batch_size`` is not divisible by ``num_devices``.
    """
    if batch_size % num_devices:
        raise ValueError(f"batch_size {batch_size} must be divisible by the number of devices {num_devices}")
    strategy = MirroredStrategy([f"/gpu:{i}" for i in range(num_devices)], all_reduce_alg=all_reduce_alg)
    with tf.device("/cpu:0"):
        x = tf.placeholder(dtype, [batch_size, num_features], name="x")
        y = tf.placeholder(tf.int64, [batch_size], name="y")
        slices = strategy.split(x, y)
    replica_vars = strategy.create_variables(lambda: mlp_variables(num_features, hidden, num_classes, seed, dtype))
    optimizer_fn = optimizer_fn or (lambda: tf.train.GradientDescentOptimizer(learning_rate))
    train_op = strategy.minimize(optimizer_fn, tower_loss, slices, replica_vars)
    return {"x": x, "y": y, "strategy": strategy, "replica_vars": replica_vars, "train_op": train_op}


def train(devices=4, all_reduce_alg="ring", epochs=30, batch_size=64, hidden=64, learning_rate=0.003, seed=0,
          progress=True):
    """Train on ``devices`` simulated GPUs; return ``(test_accuracy, bytes sent per device per step)``."""

    data = load_digits_split(seed=seed)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        model = build_data_parallel(devices, batch_size, data.num_features, data.num_classes, hidden, all_reduce_alg,
                                    optimizer_fn=lambda: tf.train.AdamOptimizer(learning_rate), seed=seed)
        evaluation = mlp_accuracy(model["replica_vars"][0], data.num_features)
        init = tf.global_variables_initializer()
    result = fit_and_score(graph, init, model, evaluation, devices, data, epochs, batch_size, seed,
                           f"{devices} replicas", progress)
    return result, model["strategy"].communication_bytes_per_device(model["replica_vars"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--all-reduce", default="ring", help="ring, reduce_to_one, tree or recursive_halving_doubling")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    accuracy, sent = train(devices=args.devices, all_reduce_alg=args.all_reduce, epochs=args.epochs,
                           batch_size=args.batch_size, learning_rate=args.lr, seed=args.seed,
                           progress=not args.no_progress)
    for device, nbytes in sent.items():
        print(f"bytes_sent_per_step {device}={nbytes}")
    print(f"test_accuracy={accuracy:.4f}")


if __name__ == "__main__":
    main()
