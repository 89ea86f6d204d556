"""``tf.data.experimental``: ``AUTOTUNE``, ``UNKNOWN_CARDINALITY`` and ``ignore_errors``.

Source: ``tensorflow/python/data/experimental/ops/optimization.py`` (``AUTOTUNE = -1``) and
``error_ops.py`` (``ignore_errors``).
"""

from collections.abc import Callable

from .dataset_ops import AUTOTUNE, UNKNOWN_CARDINALITY, Dataset

__all__ = ["AUTOTUNE", "UNKNOWN_CARDINALITY", "ignore_errors"]


def ignore_errors(log_warning: bool = False) -> Callable[[Dataset], Dataset]:
    """A transformation for ``Dataset.apply`` dropping the elements whose computation failed (a map function's
    op error, e.g. ``check_numerics`` or a raising ``py_func``); ``log_warning`` is accepted and ignored."""
    return lambda dataset: dataset.ignore_errors()


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from ..compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.data.experimental", name)
