"""The examples' training loop over the digits; the data itself is :mod:`dfcore.models.digits` (re-exported here).
"""

import numpy as np

from dfcore.models.digits import DigitsSplit, batches, load_digits_split

__all__ = ["DigitsSplit", "batches", "fit_full_batches", "load_digits_split"]


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
