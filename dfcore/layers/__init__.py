"""``tf.layers`` (TF 1.x): functional layers that create their variables with ``tf.get_variable``."""

from .normalization import batch_normalization  # noqa: F401

__all__ = ["batch_normalization"]


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from ..compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.layers", name)
