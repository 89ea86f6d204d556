"""``tf.gfile`` (and ``tf.io.gfile``): TF's file API on local paths.

Source: ``tensorflow/python/platform/gfile.py`` and ``tensorflow/python/lib/io/file_io.py``. Failures
raise TF's classes with TF's wording: a missing path is ``NotFoundError("<path>; No such file or
directory")`` (``error_from_os_error``), a rename or copy onto an existing file without ``overwrite``
is ``AlreadyExistsError("file already exists")``. A :class:`GFile` opens lazily, as TF's: a missing
file raises at the first read, not at construction. Text modes read and write ``str``, ``b`` modes
``bytes``; writes accept either. Only local paths (no ``gs://`` or ``hdfs://`` schemes).
"""

import glob as _glob
import os
import shutil
from collections.abc import Iterator
from typing import IO, Any, NamedTuple

from . import errors

__all__ = ["Copy", "DeleteRecursively", "Exists", "FastGFile", "GFile", "Glob", "IsDirectory", "ListDirectory",
           "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat", "Walk"]

_MODES = ("r", "w", "a", "r+", "w+", "a+")


def _os_call(path: str, call: Any, *args: Any) -> Any:
    """``call(*args)``, an ``OSError`` turned into TF's error class naming ``path``."""
    try:
        return call(*args)
    except OSError as error:
        raise errors.error_from_os_error(error, path) from None


class GFile:
    """A file as TF's ``tf.gfile.GFile``: ``mode`` one of ``r w a r+ w+ a+``, each with an optional ``b``.

    Raises:
        InvalidArgumentError: an unknown ``mode`` (at construction).
        NotFoundError: reading a missing file (at the first read).
        PermissionDeniedError: writing a file opened for reading, or reading one opened for writing.
    """

    def __init__(self, name: str, mode: str = "r") -> None:
        if mode.replace("b", "") not in _MODES:
            raise errors.InvalidArgumentError(None, None, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")
        self.name = os.fspath(name)
        self.mode = mode
        self._binary = "b" in mode
        self._file: IO[Any] | None = None

    def _open(self) -> IO[Any]:
        if self._file is None:
            self._file = _os_call(self.name, open, self.name, self.mode.replace("b", "") + "b")
        return self._file

    def _readable(self) -> IO[Any]:
        if not ("r" in self.mode or "+" in self.mode):
            raise errors.PermissionDeniedError(None, None, "File isn't open for reading")
        return self._open()

    def _decode(self, data: bytes) -> str | bytes:
        return data if self._binary else data.decode("utf-8")

    @property
    def closed(self) -> bool:
        return self._file is None or self._file.closed

    def size(self) -> int:
        """The file's length in bytes."""
        return Stat(self.name).length

    def read(self, n: int = -1) -> str | bytes:
        """Up to ``n`` bytes (all the rest when ``n`` is -1), as ``str`` in text mode."""
        return self._decode(_os_call(self.name, self._readable().read, n))

    def readline(self) -> str | bytes:
        """The next line, its newline kept (empty at the end)."""
        return self._decode(_os_call(self.name, self._readable().readline))

    def readlines(self) -> list[str | bytes]:
        """The remaining lines."""
        return list(self)

    def __iter__(self) -> Iterator[str | bytes]:
        while line := self.readline():
            yield line

    def __next__(self) -> str | bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def write(self, file_content: str | bytes) -> None:
        """Append ``file_content`` (``str`` is written as UTF-8)."""
        if "r" in self.mode and "+" not in self.mode:
            raise errors.PermissionDeniedError(None, None, "File isn't open for writing")
        data = file_content.encode("utf-8") if isinstance(file_content, str) else bytes(file_content)
        _os_call(self.name, self._open().write, data)

    def tell(self) -> int:
        """The position in bytes."""
        return self._open().tell()

    def seek(self, offset: int | None = None, whence: int = 0, position: int | None = None) -> int:
        """Move to ``offset`` (or TF's older ``position``) relative to ``whence`` (0 start, 1 here, 2 end)."""
        target = position if offset is None else offset
        return self._open().seek(target or 0, whence)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "GFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


Open = GFile
FastGFile = GFile


class FileStatistics(NamedTuple):
    """``tf.gfile.Stat``'s answer: ``length`` in bytes, ``mtime_nsec`` (ns since the epoch), ``is_directory``."""

    length: int
    mtime_nsec: int
    is_directory: bool


def Exists(filename: str) -> bool:
    """Whether ``filename`` (a file or a directory) exists."""
    return os.path.exists(filename)


def IsDirectory(dirname: str) -> bool:
    """Whether ``dirname`` is a directory (False when it is missing)."""
    return os.path.isdir(dirname)


def Stat(filename: str) -> FileStatistics:
    """Length, modification time and kind of ``filename``. Raises NotFoundError when it is missing."""
    info = _os_call(filename, os.stat, filename)
    return FileStatistics(info.st_size, info.st_mtime_ns, os.path.isdir(filename))


def MkDir(dirname: str) -> None:
    """Create ``dirname`` (its parent must exist; an existing directory is fine, as in TF 2.x's gfile)."""
    if not os.path.isdir(dirname):
        _os_call(dirname, os.mkdir, dirname)


def MakeDirs(dirname: str) -> None:
    """Create ``dirname`` and any missing parents; an existing directory is fine."""
    _os_call(dirname, os.makedirs, dirname, 0o777, True)


def Remove(filename: str) -> None:
    """Delete the file ``filename``. Raises NotFoundError when it is missing."""
    _os_call(filename, os.remove, filename)


def DeleteRecursively(dirname: str) -> None:
    """Delete ``dirname`` and everything under it (or a single file). Raises NotFoundError when missing."""
    if not os.path.lexists(dirname):
        raise errors.NotFoundError(None, None, f"{dirname} not found")
    if os.path.isdir(dirname) and not os.path.islink(dirname):
        _os_call(dirname, shutil.rmtree, dirname)
    else:
        _os_call(dirname, os.remove, dirname)


def ListDirectory(dirname: str) -> list[str]:
    """The names (not paths) of ``dirname``'s entries, in no set order. Raises NotFoundError when missing."""
    if not os.path.isdir(dirname):
        raise errors.NotFoundError(None, None, f"Could not find directory {dirname}")
    return _os_call(dirname, os.listdir, dirname)


def Glob(filename: str | list[str]) -> list[str]:
    """The paths matching a glob pattern (or any of a list of them); an empty list when none match."""
    patterns = [filename] if isinstance(filename, str | bytes) else list(filename)
    return [path for pattern in patterns for path in _glob.glob(os.fsdecode(pattern))]


def _refuse_existing(newpath: str, overwrite: bool) -> None:
    if not overwrite and os.path.exists(newpath):
        raise errors.AlreadyExistsError(None, None, "file already exists")


def Rename(oldname: str, newname: str, overwrite: bool = False) -> None:
    """Move ``oldname`` to ``newname``. Raises AlreadyExistsError if ``newname`` exists and not ``overwrite``,
    NotFoundError if ``oldname`` is missing."""
    _refuse_existing(newname, overwrite)
    _os_call(oldname, os.replace, oldname, newname)


def Copy(oldpath: str, newpath: str, overwrite: bool = False) -> None:
    """Copy the file ``oldpath`` to ``newpath``. Raises AlreadyExistsError if ``newpath`` exists and not
    ``overwrite``, NotFoundError if ``oldpath`` is missing."""
    _refuse_existing(newpath, overwrite)
    _os_call(oldpath, shutil.copyfile, oldpath, newpath)


def Walk(top: str, in_order: bool = True) -> Iterator[tuple[str, list[str], list[str]]]:
    """``(dirname, subdirs, files)`` for ``top`` and each directory under it, parents first when
    ``in_order`` (else children first); nothing for a missing ``top``."""
    yield from os.walk(top, topdown=in_order)
