"""A two-tower CNN training program in the multi-GPU tutorials' style (``tf.layers``, a device function that keeps
the variables on the CPU and puts each tower's ops on its own device, gradients averaged on the CPU), runnable on
dfcore or on TensorFlow's ``compat.v1``:

    python two_tower_program.py dfcore|tensorflow [steps]

Each tower gets half of a fed batch of 64 synthetic CIFAR-shaped crops [24, 24, 3]: conv 5×5×32 SAME + relu →
max-pool 3×3/2 → conv 5×5×64 SAME + relu → max-pool 3×3/2 → dense 256 + relu → dense 10, sparse softmax
cross-entropy. The towers share their variables (``tf.variable_scope`` reuse); their gradients are stacked and
averaged on ``/cpu:0`` and applied with momentum SGD. The session has two CPU devices (the towers' devices),
one intra-op and two inter-op threads. Prints the seconds after the imports and the final loss. Run by
``bench_whole_programs.py``, one process per engine.
"""

import sys
import time

import numpy as np
from _program_engine import engine

BATCH, IMAGES, SIZE, CLASSES, TOWERS = 64, 1024, 24, 10, 2
VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp")


def tower_device(tower_device_name: str, variable_device: str = "/cpu:0"):
    """A device function: variables on ``variable_device``, every other op on the tower's device."""
    def place(op):
        return variable_device if op.type in VARIABLE_OPS else tower_device_name
    return place


def tower_loss(tf, images, labels):
    """The tower's forward pass and its mean cross-entropy (variables made or reused in the current scope)."""
    hidden = images
    for name, filters in (("conv1", 32), ("conv2", 64)):
        hidden = tf.layers.conv2d(hidden, filters, 5, padding="same", activation=tf.nn.relu, name=name)
        hidden = tf.layers.max_pooling2d(hidden, 3, 2, padding="same", name=f"pool_{name}")
    hidden = tf.layers.dense(tf.layers.flatten(hidden), 256, activation=tf.nn.relu, name="local")
    logits = tf.layers.dense(hidden, CLASSES, name="logits")
    return tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)


def average_gradients(tf, tower_grads):
    """``[(mean over towers of the gradient, variable)]`` from each tower's ``[(gradient, variable)]``."""
    averaged = []
    for pairs in zip(*tower_grads):
        stacked = tf.stack([grad for grad, _ in pairs])
        averaged.append((tf.reduce_mean(stacked, axis=0), pairs[0][1]))
    return averaged


def main(name: str, steps: int) -> float:
    tf = engine(name)
    started, started_cpu = time.perf_counter(), time.process_time()
    rng = np.random.RandomState(0)
    images = rng.rand(IMAGES, SIZE, SIZE, 3).astype(np.float32)
    labels = rng.randint(0, CLASSES, size=IMAGES).astype(np.int32)
    tf.set_random_seed(0)
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [BATCH, SIZE, SIZE, 3])
        y = tf.placeholder(tf.int32, [BATCH])
        optimizer = tf.train.MomentumOptimizer(0.01, 0.9)
        tower_grads, losses = [], []
        for i, (xs, ys) in enumerate(zip(tf.split(x, TOWERS), tf.split(y, TOWERS))):
            with tf.device(tower_device(f"/cpu:{i}")), tf.name_scope(f"tower_{i}"), \
                    tf.variable_scope(tf.get_variable_scope(), reuse=i > 0):
                loss = tower_loss(tf, xs, ys)
                losses.append(loss)
                tower_grads.append(optimizer.compute_gradients(loss))
        train = optimizer.apply_gradients(average_gradients(tf, tower_grads))
        mean_loss = tf.add_n(losses) / float(TOWERS)
    config = tf.ConfigProto(device_count={"CPU": TOWERS}, allow_soft_placement=True,
                            intra_op_parallelism_threads=1, inter_op_parallelism_threads=2)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            start = step * BATCH % IMAGES
            _, value = sess.run([train, mean_loss], {x: images[start:start + BATCH], y: labels[start:start + BATCH]})
    print(f"seconds {time.perf_counter() - started:.3f} cpu {time.process_time() - started_cpu:.3f} loss {value:.4f}")
    return value


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100)
