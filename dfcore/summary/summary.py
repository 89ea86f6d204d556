"""``tf.summary.scalar`` / ``histogram`` / ``image`` / ``text`` / ``merge`` / ``merge_all`` (TF 1.x graph mode).

Source: ``tensorflow/python/summary/summary.py`` and ``python/ops/summary_op_util.py``: a summary op is named
by a name scope made unique in the current scope, its tag is that scope's full name (``train/loss``), and it
is added to ``collections`` (default ``[GraphKeys.SUMMARIES]``); ``family`` prefixes the tag and the name. A
name with characters a tag may not hold (``W1:0``) has each replaced by ``_`` and leading ``/`` dropped, with
TF's log line (``clean_tag``).
"""

import contextlib
import logging
import re

from ..framework import graph as graph_lib
from ..framework.graph import GraphKeys
from ..framework.tensor import Tensor
from ..ops import summary_ops

__all__ = ["scalar", "histogram", "image", "text", "merge", "merge_all"]

_LOG = logging.getLogger(__name__)
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def _clean_tag(name):
    """``name`` usable as a tag and scope name, as TF's ``summary_op_util.clean_tag``."""
    if not name:
        return name
    cleaned = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if cleaned != name:
        _LOG.info("Summary name %s is illegal; using %s instead.", name, cleaned)
    return cleaned


@contextlib.contextmanager
def _summary_scope(name, family):
    """``(tag, op name)`` of a new summary op; ``family`` is an outer scope and a tag prefix."""
    graph = graph_lib.get_default_graph()
    name, family = _clean_tag(name), _clean_tag(family)
    with contextlib.ExitStack() as stack:
        if family:
            stack.enter_context(graph.name_scope(family))
        with graph.name_scope(name) as scope:
            tag = scope[:-1]
            if family:
                tag = f"{family}/{tag}"
            yield tag, scope


def _collect(op_output: Tensor, collections):
    graph_lib.get_default_graph().add_to_collections(
        [GraphKeys.SUMMARIES] if collections is None else collections, op_output)


def scalar(name: str, tensor, collections=None, family=None) -> Tensor:
    """A scalar string Tensor: a serialized ``Summary`` with one ``simple_value``.

    Raises:
        InvalidArgumentError (at run time): ``tensor`` is not a scalar (naming the tag).
    """
    with _summary_scope(name, family) as (tag, scope):
        value = summary_ops.scalar_summary(tag, tensor, scope)
    _collect(value, collections)
    return value


def histogram(name: str, values, collections=None, family=None) -> Tensor:
    """A serialized ``Summary`` with the ``HistogramProto`` of ``values`` (any shape, real dtype).

    Raises:
        InvalidArgumentError (at run time): ``values`` holds a NaN or Inf ("Nan in summary histogram for: …").
    """
    with _summary_scope(name, family) as (tag, scope):
        value = summary_ops.histogram_summary(tag, values, scope)
    _collect(value, collections)
    return value


def image(name: str, tensor, max_outputs: int = 3, collections=None, family=None) -> Tensor:
    """A serialized ``Summary`` with up to ``max_outputs`` PNG images of ``tensor``
    ([batch, height, width, 1|3|4], uint8 or float), tagged ``<tag>/image/<i>``.

    Raises:
        InvalidArgumentError (at run time): ``tensor`` is not 4-D with 1, 3 or 4 channels.
    """
    with _summary_scope(name, family) as (tag, scope):
        value = summary_ops.image_summary(tag, tensor, max_outputs, scope)
    _collect(value, collections)
    return value


def text(name: str, tensor, collections=None) -> Tensor:
    """A serialized ``Summary`` for TensorBoard's text dashboard (``tensor``: a string tensor, Markdown)."""
    with _summary_scope(name, None) as (tag, scope):
        value = summary_ops.text_summary(tag, tensor, scope)
    _collect(value, collections)
    return value


def merge(inputs, collections=None, name=None) -> Tensor:
    """One serialized ``Summary`` holding the values of all ``inputs``.

    The op is ``Merge/MergeSummary``, or ``<name>/<name>`` for a ``name`` (TF's ``merge_summary(name=name)``
    inside ``name_scope(name)``).

    Raises:
        InvalidArgumentError (at run time): two inputs share a tag ("Duplicate tag … found in summary inputs").
    Source: TF ``python/summary/summary.py`` (``merge``).
    """
    with graph_lib.get_default_graph().name_scope(name or "Merge"):
        value = summary_ops.merge_summary(list(inputs), name or "MergeSummary")
    if collections:
        graph_lib.get_default_graph().add_to_collections(collections, value)
    return value


def merge_all(key: str = GraphKeys.SUMMARIES, scope=None, name=None):
    """``merge`` of every summary in collection ``key`` (optionally under ``scope``), or None if there are none."""
    summaries = graph_lib.get_default_graph().get_collection(key, scope)
    if not summaries:
        return None
    return merge(summaries, name=name)
