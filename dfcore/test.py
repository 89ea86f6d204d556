"""``tf.test``: gradient checking helpers (TF1's ``tf.test.compute_gradient``)."""

from .ops.gradient_checker import compute_gradient, compute_gradient_error


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.test", name)
