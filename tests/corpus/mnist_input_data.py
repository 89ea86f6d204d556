"""A stand-in for TF 1.x's ``tensorflow.examples.tutorials.mnist.input_data`` (which TF 2.x no longer ships):
``read_data_sets(train_dir, one_hot=False, ...)`` over the gzipped IDX files in ``train_dir``, numpy only.

The interface is the tutorials' (``mnist.train.next_batch(n)``, ``.images`` float32 ``[N, 784]`` in
``[0, 1]``, ``.labels`` int or one-hot ``[N, 10]``, ``.num_examples``, ``train`` / ``validation`` /
``test``); the files are those :func:`standins.write_mnist` writes. The data directory is
``$CORPUS_MNIST`` when set (programs pass ``/tmp/data/`` and expect a download there).
"""

import collections
import gzip
import os

import numpy as np

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def _read(path: str) -> np.ndarray:
    with gzip.open(path, "rb") as handle:
        data = handle.read()
    magic = int.from_bytes(data[:4], "big")
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(magic & 0xFF)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * len(dims)).reshape(dims)


class DataSet:
    """Images and labels with an epoch-shuffling ``next_batch``."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, reshape: bool = True, dtype: str = "float32",
                 seed: int = 0) -> None:
        images = images.reshape(len(images), -1) if reshape else images[..., None]
        self._images = images.astype(np.float32) / 255.0 if dtype == "float32" else images
        self._labels = labels
        self._rng = np.random.default_rng(seed)
        self._order = np.arange(len(images))
        self._position = len(images)  # shuffle at the first batch
        self.epochs_completed = 0

    images = property(lambda self: self._images)
    labels = property(lambda self: self._labels)
    num_examples = property(lambda self: len(self._images))

    def next_batch(self, batch_size: int, fake_data: bool = False, shuffle: bool = True):
        """The next ``batch_size`` examples; a new epoch (reshuffled when ``shuffle``) when these run out."""
        if self._position + batch_size > len(self._order):
            if self._position < len(self._order):
                self.epochs_completed += 1
            self._order = self._rng.permutation(len(self._images)) if shuffle else np.arange(len(self._images))
            self._position = 0
        picked = self._order[self._position:self._position + batch_size]
        self._position += batch_size
        return self._images[picked], self._labels[picked]


def read_data_sets(train_dir: str, fake_data: bool = False, one_hot: bool = False, dtype: str = "float32",
                   reshape: bool = True, validation_size: int = 500, seed: int | None = None, source_url: str = ""):
    """``Datasets(train, validation, test)`` from the IDX files in ``$CORPUS_MNIST`` (or ``train_dir``)."""
    directory = os.environ.get("CORPUS_MNIST", train_dir)
    names = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
             "t10k-labels-idx1-ubyte.gz")
    train_x, train_y, test_x, test_y = (_read(os.path.join(directory, name)) for name in names)
    if one_hot:
        train_y, test_y = np.eye(10, dtype=np.float64)[train_y], np.eye(10, dtype=np.float64)[test_y]
    make = lambda x, y: DataSet(x, y, reshape, dtype, seed or 0)  # noqa: E731
    return Datasets(make(train_x[validation_size:], train_y[validation_size:]),
                    make(train_x[:validation_size], train_y[:validation_size]), make(test_x, test_y))


def load_mnist(train_dir: str = "MNIST-data"):
    """TF 1.x's ``tf.contrib.learn.datasets.mnist.load_mnist``: :func:`read_data_sets` with defaults."""
    return read_data_sets(train_dir)
