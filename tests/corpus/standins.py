"""Offline stand-ins for the datasets the corpus programs download (``python tests/corpus/standins.py DIR``).

Writes, under ``DIR``, from scikit-learn's 8x8 digits (1,797 images, 10 classes), each digit scaled 3x and
padded to 28x28 (MNIST) or 32x32 in three channels (CIFAR-10):

- ``mnist/``: MNIST's four gzipped IDX files (the format of ``yann.lecun.com/exdb/mnist``: big-endian
  magic 2051/2049, counts and sizes, then uint8 pixels or labels), read by :mod:`mnist_input_data`;
- ``cifar10/cifar-10-batches-bin/``: CIFAR-10's binary batches (per record: 1 label byte, then 3x32x32
  pixel bytes, channel-major; ``data_batch_1..5.bin`` and ``test_batch.bin``);
- ``text8.zip``: one member ``text8``, lower-case words separated by spaces (text8's format), drawn from a
  Zipfian vocabulary of 2,000 words in short repeated phrases so that neighbours carry signal.
"""

import gzip
import os
import struct
import sys
import zipfile

import numpy as np


def digits_28() -> tuple[np.ndarray, np.ndarray]:
    """``(images uint8 [1797, 28, 28], labels uint8 [1797])`` from scikit-learn's digits."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    small = (digits.images * (255.0 / 16.0)).astype(np.uint8)
    big = np.kron(small, np.ones((3, 3), np.uint8))  # 24x24
    return np.pad(big, ((0, 0), (2, 2), (2, 2))), digits.target.astype(np.uint8)


def _idx(path: str, magic: int, array: np.ndarray) -> None:
    with gzip.open(path, "wb") as handle:
        handle.write(struct.pack(">" + "I" * (1 + array.ndim), magic, *array.shape))
        handle.write(array.astype(np.uint8).tobytes())


def write_mnist(directory: str, repeat: int = 4) -> None:
    """MNIST's four files: the digits ``repeat`` times (with 1-pixel shifts) for training, once for testing."""
    images, labels = digits_28()
    train = np.concatenate([np.roll(images, shift, axis=2) for shift in range(-repeat // 2, repeat - repeat // 2)])
    os.makedirs(directory, exist_ok=True)
    _idx(os.path.join(directory, "train-images-idx3-ubyte.gz"), 2051, train)
    _idx(os.path.join(directory, "train-labels-idx1-ubyte.gz"), 2049, np.tile(labels, repeat))
    _idx(os.path.join(directory, "t10k-images-idx3-ubyte.gz"), 2051, images)
    _idx(os.path.join(directory, "t10k-labels-idx1-ubyte.gz"), 2049, labels)


def write_cifar10(directory: str) -> None:
    """CIFAR-10's binary batches: the digits padded to 32x32, tinted per channel."""
    images, labels = digits_28()
    rgb = np.stack([np.pad(images, ((0, 0), (2, 2), (2, 2))) // k for k in (1, 2, 3)], axis=1)  # [N, 3, 32, 32]
    records = np.concatenate([labels[:, None], rgb.reshape(len(labels), -1)], axis=1).astype(np.uint8)
    folder = os.path.join(directory, "cifar-10-batches-bin")
    os.makedirs(folder, exist_ok=True)
    for k, part in enumerate(np.array_split(records[:1500], 5), start=1):
        part.tofile(os.path.join(folder, f"data_batch_{k}.bin"))
    records[1500:].tofile(os.path.join(folder, "test_batch.bin"))


def write_text8(path: str, words: int = 200_000, seed: int = 0) -> None:
    """A text8-like zip: ``words`` words from phrases of a Zipfian 2,000-word vocabulary."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(2000)] + ["five", "of", "going", "hardware", "american", "britain"]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    phrases = [rng.choice(len(vocabulary), size=5, p=weights / weights.sum()) for _ in range(3000)]
    picks = rng.integers(0, len(phrases), size=words // 5)
    text = " ".join(vocabulary[i] for p in picks for i in phrases[p])
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("text8", text)


if __name__ == "__main__":
    root = sys.argv[1]
    write_mnist(os.path.join(root, "mnist"))
    write_cifar10(os.path.join(root, "cifar10"))
    write_text8(os.path.join(root, "text8.zip"))
