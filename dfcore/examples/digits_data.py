"""scikit-learn's bundled handwritten digits (1,797 8×8 images, no download), split for training.

Source: ``sklearn.datasets.load_digits`` (UCI ML hand-written digits). Pixels
are scaled from 0–16 to 0–1 as float32; labels are int64 class ids 0–9.
"""

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


def load_digits_split(test_fraction=0.2, seed=0):
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


def batches(x, y, batch_size, rng):
    """Shuffled mini-batches ``(x_batch, y_batch)`` covering one epoch."""
    order = rng.permutation(len(x))
    for start in range(0, len(x), batch_size):
        index = order[start:start + batch_size]
        yield x[index], y[index]


def fit_full_batches(sess, train_op, x, y, data, epochs, batch_size, seed, desc, progress=True, run_step=None):
    """Run ``train_op`` over shuffled full mini-batches of the training split for ``epochs`` epochs.

    Batches shorter than ``batch_size`` are skipped (tower and replica graphs need fixed
    slices). A tqdm bar labelled ``desc`` shows the epochs unless ``progress`` is False.
    ``run_step(feed_dict)``, if given, runs each step instead of ``sess.run(train_op, feed_dict)``.
    """
    from tqdm.auto import tqdm

    run_step = run_step or (lambda feed: sess.run(train_op, feed))
    rng = np.random.default_rng(seed)
    for _ in tqdm(range(epochs), desc=desc, unit="epoch", disable=not progress):
        for xb, yb in batches(data.x_train, data.y_train, batch_size, rng):
            if len(xb) == batch_size:
                run_step({x: xb, y: yb})
