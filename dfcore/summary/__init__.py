"""``tf.summary`` (TF 1.x): summary ops and ``FileWriter`` for TensorBoard."""

from ..framework.protos import Event, SessionLog, Summary, TaggedRunMetadata  # noqa: F401
from .summary import histogram, image, merge, merge_all, scalar, text  # noqa: F401
from .writer import FileWriter  # noqa: F401
