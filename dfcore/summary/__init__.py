"""``tf.summary`` (TF 1.x): summary ops and ``FileWriter`` for TensorBoard."""

from ..framework.protos import Event, SessionLog, Summary, TaggedRunMetadata  # noqa: F401
from .summary import histogram, image, merge, merge_all, scalar, text  # noqa: F401
from .writer import FileWriter  # noqa: F401
from .writer_cache import FileWriterCache  # noqa: F401


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from ..compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.summary", name)
