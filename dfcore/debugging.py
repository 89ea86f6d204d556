"""``tf.debugging``: numeric checks (``check_numerics``) and ``Assert``."""

from .ops.control_flow_ops import Assert
from .ops.numerics import *


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.debugging", name)
