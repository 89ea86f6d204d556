"""scikit-learn's bundled handwritten digits (1,797 8×8 images, no download), split for training.

Source: ``sklearn.datasets.load_digits`` (UCI ML hand-written digits). Pixels
are scaled from 0–16 to 0–1 as float32; labels are int64 class ids 0–9.

Importing scikit-learn and splitting takes over a second, in every process that loads the digits (each rank of
an MPI job, each task of a gRPC cluster, each lesson's kernel). The first split with given arguments is therefore
kept as an ``.npz`` file in the cache directory (:func:`cache_dir`), named by scikit-learn's version, and read from
there afterwards, as Keras keeps its datasets under ``~/.keras/datasets``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import pathlib
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

#: Environment variable naming dfcore's cache directory (see :func:`cache_dir`).
CACHE_DIR_ENV = "DFCORE_CACHE_DIR"
_ARRAYS = ("x_train", "y_train", "x_test", "y_test")


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
    """A stratified, seeded train/test split of the digits (``sklearn.model_selection.train_test_split``).

    Read from the cache directory when an earlier call with the same arguments and scikit-learn version wrote it
    there; a missing, unreadable or damaged file is recomputed (and written again where the directory is writable).

    Raises:
        ImportError: scikit-learn is missing (install the project's ``lab`` or ``test`` extra).
    """
    try:
        version = importlib.metadata.version("scikit-learn")
    except importlib.metadata.PackageNotFoundError:
        raise ImportError("the digits come from scikit-learn, which is not installed: install the project's "
                          "`lab` or `test` extra (pip install scikit-learn)") from None
    try:
        path = cache_dir() / f"digits-sklearn{version}-test{test_fraction!r}-seed{seed!r}.npz"
    except RuntimeError:  # no home directory to be found (no $HOME, and a uid without a passwd entry)
        return _split_with_sklearn(test_fraction, seed)
    split = _read_split(path)
    if split is None:
        split = _split_with_sklearn(test_fraction, seed)
        _write_split(path, split)
    return split


def cache_dir() -> pathlib.Path:
    """dfcore's cache directory: ``$DFCORE_CACHE_DIR``, else ``$XDG_CACHE_HOME/dfcore``, else ``~/.cache/dfcore``
    (it need not exist yet).

    Raises:
        RuntimeError: neither variable is set and the home directory cannot be found (``pathlib.Path.home``).
    """
    if os.environ.get(CACHE_DIR_ENV):
        return pathlib.Path(os.environ[CACHE_DIR_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "dfcore"


def _read_split(path: pathlib.Path) -> DigitsSplit | None:
    """The split stored at ``path``; None when it is missing or not a whole split as :func:`_write_split` writes."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in _ARRAYS}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    x_train, y_train, x_test, y_test = (arrays[name] for name in _ARRAYS)
    whole = (x_train.dtype == np.float32 and x_test.dtype == np.float32 and y_train.dtype == np.int64
             and y_test.dtype == np.int64 and x_train.ndim == x_test.ndim == 2
             and x_train.shape[1] == x_test.shape[1] == DigitsSplit.num_features
             and y_train.shape == x_train.shape[:1] and y_test.shape == x_test.shape[:1])
    return DigitsSplit(x_train, y_train, x_test, y_test) if whole else None


def _write_split(path: pathlib.Path, split: DigitsSplit) -> None:
    """Store ``split`` at ``path`` atomically (a whole file or none: ranks of one job may write it at once); skip
    quietly where the directory cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(descriptor, "wb") as file:
            np.savez(file, **{name: getattr(split, name) for name in _ARRAYS})
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _split_with_sklearn(test_fraction: float, seed: int) -> DigitsSplit:
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
