"""``tf.summary.FileWriterCache``: one FileWriter per log directory, shared by the hooks that write there.

Source: ``tensorflow/python/summary/writer/writer_cache.py``.
"""

import os
import threading

from .writer import FileWriter


class FileWriterCache:
    """Process-wide cache of FileWriters by logdir."""

    _lock = threading.Lock()
    _writers: dict = {}

    @classmethod
    def get(cls, logdir: str) -> FileWriter:
        """The FileWriter of ``logdir``, created on first use (raises as :class:`FileWriter`)."""
        key = os.path.abspath(os.fspath(logdir))
        with cls._lock:
            if key not in cls._writers:
                cls._writers[key] = FileWriter(logdir)
            return cls._writers[key]

    @classmethod
    def clear(cls) -> None:
        """Close every cached writer and forget them."""
        with cls._lock:
            writers, cls._writers = list(cls._writers.values()), {}
        for writer in writers:
            writer.close()
