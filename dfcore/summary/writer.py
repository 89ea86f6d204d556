"""``tf.summary.FileWriter``: TF's event files, which ``tensorboard --logdir`` reads.

Source: ``tensorflow/python/summary/writer/writer.py`` (``SummaryToEventTransformer``: ``add_summary``,
``add_graph``, ``add_run_metadata``, ``add_session_log``) and ``event.proto``. The records are written by
:class:`~dfcore.summary.event_file.EventFile`, which raises a failed write (a full disk, a file-size limit)
from the next ``add_*``, ``flush`` or ``close`` with the number of events lost.
"""

import os
import time

from .. import errors
from ..framework.protos import Event, MetaGraphDef, SessionLog, Summary, TaggedRunMetadata
from ..framework.run_metadata import message_of
from .event_file import EventFile


class FileWriter:
    """Writes ``Event`` records (summaries, graphs, run metadata) to an event file in ``logdir``.

    Args:
        logdir: directory for the event file (created if missing).
        graph: a Graph to write at once (as ``add_graph``); ``graph_def`` likewise for a GraphDef.
        max_queue: events held before a write; flush_secs: seconds between flushes.
        filename_suffix: appended to the event file's name.
    Raises:
        PermissionDeniedError, NotFoundError, ...: ``logdir`` cannot be created or written (naming it).
        ResourceExhaustedError (full disk), OutOfRangeError (over the file-size limit), ... (by errno, as TF's
            ``ErrnoToCode``): from ``add_*``, ``flush`` or ``close`` once an event could not be written; the
            message says how many were lost (:attr:`events_lost`).
    """

    def __init__(self, logdir: str, graph=None, max_queue: int = 10, flush_secs: float = 120,
                 graph_def=None, filename_suffix: str = "", session=None):
        del session  # TF 2's writer resource; TF 1.x graph mode writes from Python, as here
        logdir = os.fspath(logdir)
        try:
            os.makedirs(logdir, exist_ok=True)
            if not os.access(logdir, os.W_OK | os.X_OK):
                raise PermissionError(13, "Permission denied", logdir)
        except OSError as error:
            raise errors.error_from_os_error(error, f"Cannot write event files to {logdir}") from None
        self._options = (max_queue, flush_secs, filename_suffix or "")
        self._logdir = logdir
        self._writer = EventFile(logdir, *self._options)
        self._closed = False
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        return self._logdir

    @property
    def events_lost(self) -> int:
        """How many added events the current event file could not write (dfcore)."""
        return self._writer.events_lost

    def add_event(self, event: Event) -> None:
        """Write ``event`` (an ``Event`` message) as it is."""
        if self._closed:
            raise RuntimeError("FileWriter is closed; call reopen() before adding events.")
        if not isinstance(event, Event):
            raise TypeError(f"add_event() expects an Event; got {type(event).__name__}")
        self._writer.add(event.SerializeToString())

    def add_summary(self, summary, global_step=None) -> None:
        """Write a ``Summary`` (the message, or the serialized string a summary op returns) at ``global_step``."""
        if isinstance(summary, bytes):
            summary = Summary.FromString(summary)
        elif hasattr(summary, "item") and not isinstance(summary, Summary):
            summary = Summary.FromString(summary.item())
        if not isinstance(summary, Summary):
            raise TypeError(f"add_summary() expects a Summary or its serialized bytes; got {type(summary).__name__}")
        self._add(Event(summary=summary), global_step)

    def add_graph(self, graph, global_step=None, graph_def=None) -> None:
        """Write a Graph's GraphDef (TensorBoard's Graphs dashboard; devices show in its "Device" colouring)."""
        if graph is not None:
            graph_def = graph.as_graph_def(add_shapes=True)
        if graph_def is None:
            raise ValueError("add_graph() needs a graph or a graph_def")
        self._add(Event(graph_def=graph_def.SerializeToString()), global_step)

    def add_meta_graph(self, meta_graph_def, global_step=None) -> None:
        """Write a ``MetaGraphDef`` (TensorBoard reads the graph and its collections from it).

        Raises:
            TypeError: ``meta_graph_def`` is not a ``MetaGraphDef``.
        """
        if not isinstance(meta_graph_def, MetaGraphDef):
            raise TypeError(f"add_meta_graph() expects a MetaGraphDef; got {type(meta_graph_def).__name__}")
        self._add(Event(meta_graph_def=meta_graph_def.SerializeToString()), global_step)

    def add_run_metadata(self, run_metadata, tag: str, global_step=None) -> None:
        """Write one step's ``RunMetadata`` under ``tag`` (TensorBoard's per-node compute time and memory).

        Raises:
            TypeError: ``run_metadata`` is not a ``RunMetadata``.
            ValueError: ``tag`` is empty.
        """
        try:
            message = message_of(run_metadata)
        except TypeError:
            raise TypeError(f"add_run_metadata() expects a RunMetadata; got {type(run_metadata).__name__}") from None
        if not tag:
            raise ValueError("add_run_metadata() needs a non-empty tag, such as 'step%d' % step")
        tagged = TaggedRunMetadata(tag=tag, run_metadata=message.SerializeToString())
        self._add(Event(tagged_run_metadata=tagged), global_step)

    def add_session_log(self, session_log: SessionLog, global_step=None) -> None:
        """Write a ``SessionLog`` (``START``, ``STOP`` or ``CHECKPOINT``)."""
        self._add(Event(session_log=session_log), global_step)

    def _add(self, event: Event, global_step) -> None:
        event.wall_time = time.time()
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)

    def flush(self) -> None:
        """Write every pending event to disk."""
        self._writer.flush()

    def close(self) -> None:
        """Flush, stop the writer thread and close the file (idempotent)."""
        if not self._closed:
            self._closed = True
            self._writer.close()

    def reopen(self) -> None:
        """After :meth:`close`, start a new event file in the same logdir."""
        if self._closed:
            self._writer = EventFile(self._logdir, *self._options)
            self._closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
