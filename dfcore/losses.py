"""``tf.losses``: loss functions (TF1's ``tf.losses`` module)."""

from .ops.losses_impl import *


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.losses", name)
