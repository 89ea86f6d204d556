"""``tf.data.experimental``: the ``AUTOTUNE`` constant (prefetch buffer, parallel calls, cycle length).

Source: ``tensorflow/python/data/experimental/ops/optimization.py`` (``AUTOTUNE = -1``).
"""

from .dataset_ops import AUTOTUNE

__all__ = ["AUTOTUNE"]
