"""``tf.layers`` (TF 1.x): functional layers that create their variables with ``tf.get_variable``."""

from .normalization import batch_normalization  # noqa: F401

__all__ = ["batch_normalization"]
