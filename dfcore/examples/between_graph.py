"""The "Distributed TensorFlow" how-to's between-graph trainer, on the digits MLP; prints ``test_accuracy=<value>``.

Source: TensorFlow 1's "Distributed TensorFlow" how-to (``deploy/distributed.md``) and its
``mnist_replica.py``: every task runs this whole file, told its place by flags::

    python -m dfcore.examples.between_graph --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 \\
        --job_name=worker --task_index=0
    python -m dfcore.launch --grpc --tf-flags --ps 1 --workers 2 -m dfcore.examples.between_graph   # all three
    python -m dfcore.examples.between_graph                                     # no flags: one process

A ps task serves (``server.join()``); each worker builds the model with its variables on the ps
(``replica_device_setter``), opens a ``MonitoredTrainingSession`` on its own server (the chief, worker 0,
initialises the variables) with ``device_filters`` to the ps and itself (``mnist_replica.py``'s), and runs
asynchronous SGD steps on its share of the training set until the shared ``global_step`` reaches
``--train_steps``. The chief then prints the test accuracy (a ``FinalOpsHook``, run as its session ends).
Written against TF 1's API; only the import differs.
"""

import argparse

import numpy as np

import dfcore as tf
from dfcore.examples.digits import build_mlp
from dfcore.examples.digits_data import load_digits_split


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ps_hosts", default="", help="comma-separated host:port of the ps tasks")
    parser.add_argument("--worker_hosts", default="", help="comma-separated host:port of the worker tasks")
    parser.add_argument("--job_name", default="", help="'ps' or 'worker'; empty: train in this process alone")
    parser.add_argument("--task_index", type=int, default=0, help="index of this task within its job")
    parser.add_argument("--train_steps", type=int, default=300, help="global steps to train (all workers together)")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=0.2)
    parser.add_argument("--hidden", type=int, default=64)
    return parser.parse_args(argv)


def main(argv=None):
    flags = parse_args(argv)
    master, is_chief, config, shard, num_workers = "", True, None, 0, 1
    device_fn = None
    if flags.job_name:
        cluster = tf.train.ClusterSpec({"ps": flags.ps_hosts.split(","), "worker": flags.worker_hosts.split(",")})
        server = tf.train.Server(cluster, job_name=flags.job_name, task_index=flags.task_index)
        if flags.job_name == "ps":
            server.join()
            return
        master, is_chief = server.target, flags.task_index == 0
        shard, num_workers = flags.task_index, cluster.num_tasks("worker")
        config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{flags.task_index}"])
        device_fn = tf.train.replica_device_setter(worker_device=f"/job:worker/task:{flags.task_index}",
                                                   cluster=cluster)
    data = load_digits_split(seed=0)
    with tf.device(device_fn):
        x = tf.placeholder(tf.float32, [None, data.num_features], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        logits = build_mlp(x, flags.hidden, data.num_classes, seed=0)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(flags.learning_rate).minimize(loss, global_step=global_step)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    mine = np.arange(shard, len(data.x_train), num_workers)  # worker i reads every num_workers-th example
    rng = np.random.default_rng(shard)
    final = tf.train.FinalOpsHook([global_step, accuracy], {x: data.x_test, y: data.y_test})
    with tf.train.MonitoredTrainingSession(master=master, is_chief=is_chief, config=config,
                                           hooks=[tf.train.StopAtStepHook(last_step=flags.train_steps)],
                                           chief_only_hooks=[final]) as sess:
        while not sess.should_stop():
            batch = rng.choice(mine, flags.batch_size, replace=False)
            sess.run(train_op, {x: data.x_train[batch], y: data.y_train[batch]})
    if is_chief:
        step, score = final.final_ops_values
        print(f"global_step={step} test_accuracy={score:.4f}", flush=True)


if __name__ == "__main__":
    main()
