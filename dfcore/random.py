"""``tf.random``: random ops (``tf.random.uniform``, ``tf.random.normal`` …)."""

from .ops.random_ops import *


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.random", name)
