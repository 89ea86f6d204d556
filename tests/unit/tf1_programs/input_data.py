"""scikit-learn's digits in the shape of TF 1.x's MNIST reader (``tensorflow/examples/tutorials/mnist/
input_data.py``): ``read_data_sets(one_hot=...)`` gives ``.train`` and ``.test`` with ``images``
(float32 ``[n, 64]`` in [0, 1]), ``labels`` (int64 ids, or float32 one-hot rows) and ``next_batch``."""

import collections

import numpy as np

from dfcore.examples.digits_data import load_digits_split

NUM_CLASSES = 10
IMAGE_SIZE = 8
Datasets = collections.namedtuple("Datasets", ["train", "test"])


class DataSet:
    """Images and labels served in shuffled mini-batches, one permutation per epoch (as MNIST's DataSet)."""

    def __init__(self, images, labels, seed):
        self.images, self.labels = images, labels
        self.num_examples = len(images)
        self._rng = np.random.RandomState(seed)
        self._order, self._index = self._rng.permutation(self.num_examples), 0

    def next_batch(self, batch_size):
        """The next ``batch_size`` examples; a new epoch starts (reshuffled) when too few are left."""
        if self._index + batch_size > self.num_examples:
            self._order, self._index = self._rng.permutation(self.num_examples), 0
        batch = self._order[self._index:self._index + batch_size]
        self._index += batch_size
        return self.images[batch], self.labels[batch]


def read_data_sets(one_hot=False, seed=0):
    """The digits' seeded train/test split (``dfcore.examples.digits_data``) as two DataSets."""
    split = load_digits_split(seed=seed)

    def labels(ids):
        return np.eye(NUM_CLASSES, dtype=np.float32)[ids] if one_hot else ids

    return Datasets(train=DataSet(split.x_train, labels(split.y_train), seed),
                    test=DataSet(split.x_test, labels(split.y_test), seed))
