"""dfcore's checkpoint file: one ``.npz`` archive per checkpoint, with a CRC-32 per tensor.

Source: the role of TF's tensor bundle (``tensorflow/core/util/tensor_bundle/tensor_bundle.cc``
and ``CheckpointReader``); the format is dfcore's, not TF's. The file ``<prefix>.npz`` is an
uncompressed zip archive (``numpy.load`` reads it) with one member ``<key>.npy`` per tensor,
named by its checkpoint key (``layer1/weights``). The zip headers carry each member's CRC-32
(``zlib.crc32`` of its bytes), checked on every read: dfcore's counterpart of the crc32c that
TF's ``.index`` file stores per tensor (TF's is a masked crc32c, this one plain CRC-32). The
archive comment ``dfcore checkpoint: <n> tensors`` records how many tensors were written, so
damage that hides a member from the zip directory is caught too. A file that fails any check
raises ``DataLossError`` naming it.
"""

from __future__ import annotations

import contextlib
import io
import re
import struct
import zipfile
from collections.abc import Mapping
from typing import BinaryIO

import numpy as np

from .. import errors

SUFFIX = ".npz"
_MEMBER_SUFFIX = ".npy"
_COMMENT = re.compile(rb"^dfcore checkpoint: ([0-9]+) tensors$")
# What the zip and .npy parsers raise on bytes that are not what was written (they parse bytes
# already in memory, so an OSError there is a bad offset, not an I/O failure).
_CORRUPT = (zipfile.BadZipFile, EOFError, ValueError, KeyError, NotImplementedError, RuntimeError, struct.error,
            OverflowError, OSError)


def write_tensors(fileobj: BinaryIO, values: Mapping[str, np.ndarray]) -> None:
    """Write ``{key: array}`` to ``fileobj`` in the format above (no pickled objects)."""
    with zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED) as archive:
        for key, value in values.items():
            with archive.open(key + _MEMBER_SUFFIX, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asarray(value), allow_pickle=False)
        archive.comment = f"dfcore checkpoint: {len(values)} tensors".encode()


class CheckpointReader:
    """The tensors of checkpoint ``<prefix>.npz``, read and verified (a context manager).

    Opening reads the whole file (so an I/O error is never mistaken for corruption) and checks
    the zip directory, every member's header and the tensor count; each :meth:`get_tensor`
    checks that tensor's CRC-32.
    Raises:
        DataLossError: the file is truncated or corrupt (names the file, and the tensor).
        NotFoundError, PermissionDeniedError, ...: the file cannot be read (errno as TF maps it).
    """

    def __init__(self, prefix: str):
        self.path = prefix + SUFFIX
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError as error:
            raise errors.error_from_os_error(error, self.path, "Cannot read this checkpoint file") from error
        with self._parsing("the tensor directory"):
            self._archive = zipfile.ZipFile(io.BytesIO(data))
        try:
            self._members = self._verified_members()
        except BaseException:
            self._archive.close()
            raise

    def _verified_members(self):
        infos = self._archive.infolist()
        written = _COMMENT.match(self._archive.comment)
        if written is None or int(written[1]) != len(infos):
            raise self._data_loss("the tensor directory", f"it lists {len(infos)} tensors but the archive comment "
                                  f"says {self._archive.comment[:60]!r}")
        members = {}
        for info in infos:
            with self._parsing(f"the header of {info.filename!r}"):
                self._archive.open(info).close()  # zipfile compares the header's name with the directory's
            if not info.filename.endswith(_MEMBER_SUFFIX):
                raise self._data_loss("the tensor directory", f"member {info.filename!r} is not a .npy tensor")
            members[info.filename[: -len(_MEMBER_SUFFIX)]] = info
        return members

    def keys(self) -> list:
        """The checkpoint keys of the stored tensors, sorted."""
        return sorted(self._members)

    def has_tensor(self, key: str) -> bool:
        return key in self._members

    def get_tensor(self, key: str) -> np.ndarray:
        """The stored array for ``key`` (KeyError if there is none; see :meth:`has_tensor`)."""
        info = self._members[key]
        with self._parsing(f"tensor {key}"):
            data = self._archive.read(info)  # zipfile checks the CRC-32 of the member's bytes
            return np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)

    @contextlib.contextmanager
    def _parsing(self, what):
        try:
            yield
        except _CORRUPT as error:
            raise self._data_loss(what, f"{type(error).__name__}: {error}") from error

    def _data_loss(self, what, detail):
        return errors.DataLossError(
            None, None, f"Unable to read {what} from checkpoint file {self.path}: Data loss: {detail}. The file is "
            "truncated or corrupt (its checksums or zip structure differ from what was written); restore an "
            "earlier checkpoint (the 'checkpoint' state file lists those kept) or retrain.")

    def close(self) -> None:
        self._archive.close()

    def __enter__(self) -> CheckpointReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
