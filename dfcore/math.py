"""``tf.math``: elementwise and reduction math ops."""

from .ops.array_ops_gather import unsorted_segment_sum
from .ops.math_ops import *
from .ops.nn_impl import zero_fraction  # TF 1.x exports it as tf.math.zero_fraction too
from .ops.nn_topk import in_top_k, top_k  # tf.math.top_k / in_top_k, as in TF 1.13+


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.math", name)
