"""An event file (``events.out.tfevents.*``) that reports every event it could not write.

Source: TF's ``EventsWriter`` (``tensorflow/core/util/events_writer.cc``: TFRecord records, the first one
an ``Event`` with ``file_version: "brain.Event:2"``; a failed write is an error ``Status`` by errno, as
``ErrnoToCode``) and the Python ``EventFileWriter`` (events are held until ``max_queue`` of them are
pending or ``flush_secs`` passed). Records are framed by ``tensorboard``'s ``RecordWriter`` (length, masked
CRC-32C of it, data, masked CRC-32C of the data).

Events are written by the thread that adds them once ``max_queue`` are pending, by :meth:`flush` and
:meth:`close`, and every ``flush_secs`` by a timer thread. A failed write is never raised on the timer
thread (nor printed): the file is cut back to its last whole record, the events not written from then on
are counted, and the next ``add``, ``flush`` or ``close`` raises the error, saying how many were lost.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time

from tensorboard.summary.writer.record_writer import RecordWriter

from .. import errors
from ..framework.protos import Event

_UIDS = itertools.count()


class EventFile:
    """Appends serialized ``Event`` records to a new event file in ``logdir``.

    Args:
        logdir: an existing directory; max_queue: events held before a write (>= 1); flush_secs: the
            longest an added event waits before it is written (s); filename_suffix: appended to the name.
    Raises:
        OpError by errno (``PermissionDeniedError``, ``ResourceExhaustedError`` for a full disk, ...): the
            file cannot be created, or its first record written.
    """

    def __init__(self, logdir: str, max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = ""):
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.{next(_UIDS)}"
        self.path = os.path.join(logdir, name + filename_suffix)
        try:
            self._file = open(self.path, "wb", buffering=0)  # closed by close()
        except OSError as error:
            raise errors.error_from_os_error(error, f"Cannot create event file {self.path}") from None
        self._records = RecordWriter(self)
        self._max_queue, self._flush_secs = max(1, int(max_queue)), float(flush_secs)
        self._lock = threading.Lock()
        self._pending: list[bytes] = []
        self._error: OSError | None = None
        #: Events added so far, and those that could not be written (dfcore).
        self.events_added = self.events_lost = 0
        self._stop = threading.Event()
        self._timer = threading.Thread(target=self._flush_periodically, name="FileWriter-flush", daemon=True)
        try:
            self.add(Event(wall_time=time.time(), file_version="brain.Event:2").SerializeToString())
            self.flush()
        except errors.OpError:
            self._file.close()
            raise
        self._timer.start()

    def add(self, record: bytes) -> None:
        """Queue one serialized ``Event``; write the queue once ``max_queue`` events are pending.

        Raises:
            OpError by errno: an earlier write failed (this event is counted as lost too).
        """
        with self._lock:
            self.events_added += 1
            if self._error is not None:
                self.events_lost += 1
            else:
                self._pending.append(record)
                if len(self._pending) >= self._max_queue:
                    self._write_pending()
        self._raise_if_failed()

    def flush(self) -> None:
        """Write every pending event. Raises: as :meth:`add`."""
        with self._lock:
            self._write_pending()
        self._raise_if_failed()

    def close(self) -> None:
        """Write the pending events, stop the timer and close the file. Raises: as :meth:`add`."""
        self._stop.set()
        if self._timer.is_alive():
            self._timer.join()
        with self._lock:
            self._write_pending()
            self._file.close()
        self._raise_if_failed()

    def write(self, data: bytes) -> None:
        """Write one framed record whole (``RecordWriter`` calls this); on a failure cut the file back to the
        record's start, so that it ends with whole records."""
        start = self._file.tell()
        view = memoryview(data)
        try:
            while view:
                view = view[self._file.write(view) or 0:]
        except OSError:
            try:
                self._file.truncate(start)
                self._file.seek(start)
            except OSError:
                pass
            raise

    def _write_pending(self) -> None:
        """Write the pending events (the lock held); count those a failed write lost."""
        pending, self._pending = self._pending, []
        for record in pending:
            if self._error is not None:
                self.events_lost += 1
                continue
            try:
                self._records.write(record)
            except OSError as error:
                self._error = error
                self.events_lost += 1

    def _flush_periodically(self) -> None:
        while not self._stop.wait(self._flush_secs):
            with self._lock:
                self._write_pending()

    def _raise_if_failed(self) -> None:
        error = self._error
        if error is not None:
            raise errors.error_from_os_error(
                error, f"FileWriter could not write {self.events_lost} of {self.events_added} events to "
                f"{self.path}")
