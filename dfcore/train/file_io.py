"""Atomic file writes for checkpoints and the files beside them, and cleanup after killed writers.

Source: ``tensorflow/python/lib/io/file_io.py`` (``atomic_write_string_to_file``: write a temp
file, then rename it over the target). A reader sees the old file or the new one, never a
mix; a failed write leaves the old file untouched and no temp file behind. Temp files are
named ``.<name>.<host>.<pid>.<random>.tmp`` in the target's directory, so the next save can
remove those of a writer that was killed (:func:`remove_stale_temp_files`).
"""

import logging
import os
import re
import secrets
import socket
from collections.abc import Callable
from typing import BinaryIO

from .. import errors

_LOG = logging.getLogger(__name__)
_HOST = re.sub(r"[^A-Za-z0-9-]", "_", socket.gethostname()) or "localhost"
_TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.(?P<host>[A-Za-z0-9_-]+)\.(?P<pid>[1-9][0-9]*)\.[0-9a-f]{8}\.tmp$")
_NOTHING_WRITTEN = "Nothing was written: an earlier file at that path is unchanged. Free space, make the " \
                   "directory writable, or write elsewhere"


def atomic_write(path: str, write: Callable[[BinaryIO], object], sync: bool = True) -> None:
    """Call ``write(fileobj)`` on a new temp file beside ``path``, sync it, then rename it to ``path``.

    The file gets the mode a plain ``open(path, "wb")`` would (0666 less the umask), and
    the directory is synced after the rename so the new file survives a power cut. With
    ``sync=False`` (files rewritten every step, such as progress notes) nothing is synced: a
    reader still sees the old file or the new one, but a power cut may lose the latest.
    Raises:
        PermissionDeniedError, ResourceExhaustedError, ...: an ``OSError`` on the way, as
            :func:`dfcore.errors.error_from_os_error` maps it, naming ``path``; nothing changed.
        Whatever ``write`` raises (KeyboardInterrupt included), after removing the temp file.
    """
    directory = os.path.dirname(path) or "."
    tmp = None
    try:
        tmp, fd = _create_temp(directory, os.path.basename(path))
        with os.fdopen(fd, "wb") as f:
            write(f)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        if tmp is not None:
            _remove_if_exists(tmp)
        if isinstance(error, OSError):
            raise errors.error_from_os_error(error, path, _NOTHING_WRITTEN) from error
        raise
    if sync:
        _sync_directory(directory)


def _create_temp(directory, name):
    """``(path, fd)`` of a new, empty temp file for ``name``; the umask applies to its mode."""
    while True:
        tmp = os.path.join(directory, f".{name}.{_HOST}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue


def _sync_directory(directory):
    """fsync ``directory``: on POSIX a rename is durable only once its directory is synced."""
    try:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as error:
        raise errors.error_from_os_error(error, directory, "The new file is in place but may not survive a "
                                                           "power cut") from error


def _remove_if_exists(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def remove_stale_temp_files(directory: str) -> None:
    """Remove the temp files in ``directory`` that :func:`atomic_write` calls of a killed process left.

    Only temp files of this host whose process is gone are removed: a writer still at
    work elsewhere keeps its file. (A process id reused since then keeps the file too.)
    Best effort: a failure is logged, and the write that follows reports its own errors.
    """
    try:
        for entry in os.listdir(directory):
            match = _TEMP_NAME.match(entry)
            if match and match["host"] == _HOST and not _process_alive(int(match["pid"])):
                _LOG.warning("Removing %s, left by process %s that was killed while writing %s", entry,
                             match["pid"], match["name"])
                _remove_if_exists(os.path.join(directory, entry))
    except OSError as error:  # the write that follows reports a read-only or unreadable directory itself
        _LOG.warning("Could not remove stale temp files in %s: %s", directory, error)


def _process_alive(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True
