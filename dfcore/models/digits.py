"""scikit-learn's bundled handwritten digits (1,797 8×8 images, no download), split for training.

Source: ``sklearn.datasets.load_digits`` (UCI ML hand-written digits). Pixels
are scaled from 0–16 to 0–1 as float32; labels are int64 class ids 0–9.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DigitsSplit:
    """Train and test arrays: ``x_*`` float32 ``[n, 64]``, ``y_*`` int64 ``[n]``."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    num_features = 64
    num_classes = 10


def load_digits_split(test_fraction: float = 0.2, seed: int = 0) -> DigitsSplit:
    """A stratified, seeded train/test split of the digits.

    Raises:
        ImportError: scikit-learn is missing (install the project's ``lab`` or ``test`` extra).
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_fraction, random_state=seed, stratify=y)
    return DigitsSplit(x_train, y_train, x_test, y_test)


def batches(x: np.ndarray, y: np.ndarray, batch_size: int,
            rng: np.random.Generator) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Shuffled mini-batches ``(x_batch, y_batch)`` covering one epoch."""
    order = rng.permutation(len(x))
    for start in range(0, len(x), batch_size):
        index = order[start:start + batch_size]
        yield x[index], y[index]
