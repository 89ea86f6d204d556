"""Placement time of the cost-model placer (whitepaper §3.2.1) on generated graphs of 1k, 10k and 100k nodes.

Each graph is a random layered DAG: 32 constants of shape [64, 64], then binary elementwise ops (``Add``,
``Mul``, ``Maximum``) each reading two nodes of the previous 32 (seeded). The placer runs once per graph on
one CPU and four simulated K20m (5 devices), and at 10k nodes also on 2 and 9 devices. Printed: µs per node
and per node × device, a least-squares line of µs per node against the device count (a fixed part per node
plus a part per node × device: linear in nodes × devices), and the rule placer's time on the
same graph for scale, both in CPU seconds of this process. Never a pass/fail on time.
"""

import time

import numpy as np

import dfcore as tf
from dfcore.runtime import cost_placer, placer
from dfcore.runtime.device_set import DeviceSet

SIZES = (1_000, 10_000, 100_000)
WIDTH = 32
SEED = 0


def layered_graph(num_nodes, seed=SEED):
    """A tf.Graph of ``num_nodes`` ops: ``WIDTH`` constants, then binary ops on two of the previous ``WIDTH``."""
    rng = np.random.default_rng(seed)
    graph = tf.Graph()
    binary = (tf.add, tf.multiply, tf.maximum)
    with graph.as_default():
        nodes = [tf.constant(np.full((64, 64), i, np.float32)) for i in range(WIDTH)]
        for i in range(num_nodes - WIDTH):
            a, b = rng.integers(1, WIDTH + 1, 2)
            nodes.append(binary[i % 3](nodes[-a], nodes[-b]))
    return graph


def devices(gpus):
    return DeviceSet.from_config(tf.ConfigProto(device_count={"CPU": 1, "GPU": gpus}))


def seconds(fn, *args):
    """CPU seconds of ``fn(*args)`` (single-threaded work: steadier than wall time on a shared machine) and its
    result."""
    start = time.process_time()
    result = fn(*args)
    return time.process_time() - start, result


def main():
    """Print the cost-model placer's µs per node and per node × device at each size."""
    print(f"{'nodes':>8} {'devices':>7} {'cost placer':>12} {'µs/node':>8} {'µs/(node·dev)':>14} "
          f"{'rules':>8} {'ratio':>6}")
    for size in SIZES:
        graph = layered_graph(size)
        ops = graph.get_operations()
        sweep = []
        for gpus in (1, 4, 8) if size == 10_000 else (4,):
            ds = devices(gpus)
            cost_s, placement = seconds(cost_placer.place, ops, ds)
            rules_s, _ = seconds(placer.place, ops, ds)
            n_dev = len(ds)
            sweep.append((n_dev, cost_s / size * 1e6))
            print(f"{size:>8} {n_dev:>7} {cost_s:>10.2f} s {cost_s / size * 1e6:>8.1f} "
                  f"{cost_s / (size * n_dev) * 1e6:>14.2f} {rules_s:>6.2f} s {cost_s / rules_s:>6.1f}")
        print(f"{'':>8} estimated step {placement.estimated_step_s * 1e3:.2f} ms on "
              f"{len(placement.devices_used())} of {n_dev} devices")
        if len(sweep) > 1:
            per_device, per_node = np.polyfit([d for d, _ in sweep], [us for _, us in sweep], 1)
            print(f"{'':>8} least-squares fit: µs/node ≈ {per_node:.1f} + {per_device:.1f} × devices")


if __name__ == "__main__":
    main()
