"""``dfcore.compat.v1``: the same TF1 namespace, so ``tf.compat.v1.X`` code runs; TF's string helpers
(``as_bytes``, ``as_text`` ...)."""

import sys

import dfcore as _dfcore

from .strings import as_bytes, as_str, as_str_any, as_text, path_to_str

__all__ = ["as_bytes", "as_str", "as_str_any", "as_text", "path_to_str", "v1"]

v1 = _dfcore
sys.modules[__name__ + ".v1"] = _dfcore


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .missing import missing_attribute
    raise missing_attribute(__name__, "tf.compat", name)
