"""``tf.data.experimental``: the ``AUTOTUNE`` constant (prefetch buffer, parallel calls, cycle length).

Source: ``tensorflow/python/data/experimental/ops/optimization.py`` (``AUTOTUNE = -1``).
"""

from .dataset_ops import AUTOTUNE

__all__ = ["AUTOTUNE"]


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from ..compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.data.experimental", name)
