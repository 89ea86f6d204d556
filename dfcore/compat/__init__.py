"""``dfcore.compat.v1``: the same TF1 namespace, so ``tf.compat.v1.X`` code runs."""

import sys

import dfcore as _dfcore

v1 = _dfcore
sys.modules[__name__ + ".v1"] = _dfcore


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .missing import missing_attribute
    raise missing_attribute(__name__, "tf.compat", name)
