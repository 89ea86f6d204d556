"""The digits split as each worker of a parameter-server run reads it: its own shard, seeded batches.

Source: between-graph data parallelism (each worker reads its own part of the data); the
data is :mod:`dfcore.models.digits`.
"""

from __future__ import annotations

import numpy as np

from ..models.digits import load_digits_split
from .arguments import check_count


class ShardedDigits:
    """The digits split, each worker reading its own shard (training examples ``w::num_workers``).

    ``batch(w, clock)`` is a function of ``(seed, w, clock)`` only, so a restored run reads
    the same batches as an uninterrupted one: ``x`` float32 ``[batch_size, 64]``, ``y`` int64 ``[batch_size]``.

    Raises:
        ArgumentRangeError: ``batch_size`` larger than the smallest shard (batches are drawn
            without replacement).
    """

    def __init__(self, num_workers: int, batch_size: int, seed: int) -> None:
        split = load_digits_split(seed=seed)
        smallest_shard = len(range(num_workers - 1, len(split.x_train), num_workers))
        check_count("batch_size", batch_size, 1, smallest_shard,
                    f"(the examples of the smallest of {num_workers} worker shards)")
        self.x_train, self.y_train = split.x_train, split.y_train
        self.x_test, self.y_test = split.x_test, split.y_test
        self.num_workers, self.batch_size, self.seed = num_workers, batch_size, seed

    def batch(self, worker: int, clock: int) -> tuple[np.ndarray, np.ndarray]:
        shard = np.arange(worker, len(self.x_train), self.num_workers)
        rng = np.random.default_rng([self.seed, worker, clock])
        index = rng.choice(shard, self.batch_size, replace=False)
        return self.x_train[index], self.y_train[index]
