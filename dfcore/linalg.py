"""``tf.linalg``: matrix ops (``matmul``, ``inv``, ``det``)."""

from .ops.linalg_ops import *
from .ops.math_ops import matmul


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.linalg", name)
