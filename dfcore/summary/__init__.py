"""``tf.summary`` (TF 1.x): summary ops and ``FileWriter`` for TensorBoard."""

from ..framework.protos import Event, SessionLog, Summary, TaggedRunMetadata
from .summary import histogram, image, merge, merge_all, scalar, text
from .writer import FileWriter
from .writer_cache import FileWriterCache


def __getattr__(name: str):
    """A TF 1.x name dfcore lacks: an AttributeError that says so (PEP 562; see dfcore.compat.missing)."""
    from ..compat.missing import missing_attribute
    raise missing_attribute(__name__, "tf.summary", name)
