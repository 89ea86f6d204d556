"""``tf.queue``: queues (TF 1.13+ namespace of ``tf.FIFOQueue`` and ``tf.RandomShuffleQueue``)."""

from .ops.data_flow_ops import FIFOQueue, QueueBase, RandomShuffleQueue


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from .compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.queue", name)
