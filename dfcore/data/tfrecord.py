"""TFRecord files: TF's record framing, written and read.

Source: TF's ``core/lib/io/record_writer.cc`` / ``record_reader.cc`` and
``tensorflow/python/lib/io/tf_record.py``. Each record is ``uint64 length``, ``uint32 masked
CRC-32C of the length``, ``length`` bytes of data, ``uint32 masked CRC-32C of the data`` (little
endian). Writing uses the ``tensorboard`` package's ``RecordWriter`` (TF's framing and masked CRC);
reading is :func:`tf_record_iterator`, which checks both CRCs. Records are raw bytes, typically serialized
``tf.train.Example`` messages (``tf.parse_example``, :mod:`dfcore.ops.parsing_ops`).
Compression (GZIP, ZLIB) is not supported.
"""

import os
import struct
from collections.abc import Iterator
from typing import Self

from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
from tensorboard.summary.writer.record_writer import RecordWriter

from .. import errors

_HEADER = 12
_FOOTER = 4


def check_options(options: object) -> None:
    if options not in (None, "", 0):
        raise errors.UnimplementedError(None, None, f"dfcore's TFRecord files are not compressed; got options "
                                        f"{options!r}.")


class TFRecordWriter:
    """Writes records (bytes) to a TFRecord file (TF's ``tf.io.TFRecordWriter``); a context manager.

    Raises:
        UnimplementedError: compression ``options``; TypeError: a record that is not bytes or str.
    """

    def __init__(self, path: str, options: object = None):
        check_options(options)
        self._path = path
        self._writer = RecordWriter(open(path, "wb"))  # closed by close()

    def write(self, record: bytes | str) -> None:
        if isinstance(record, str):
            record = record.encode()
        if not isinstance(record, (bytes, bytearray)):
            raise TypeError(f"TFRecordWriter.write expects bytes, got {type(record).__name__}")
        self._writer.write(bytes(record))

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        if not self._writer.closed:
            self._writer.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def tf_record_iterator(path: str, options: object = None) -> Iterator[bytes]:
    """The records of a TFRecord file, in order (TF's ``tf.compat.v1.io.tf_record_iterator``).

    Raises:
        NotFoundError: no such file; DataLossError: a record that is truncated or fails a CRC check,
        naming the file and the record's byte offset (TF's "corrupted record at <offset>").
    """
    check_options(options)
    if not os.path.isfile(path):
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory")
    with open(path, "rb") as handle:
        offset = 0
        while True:
            header = handle.read(_HEADER)
            if not header:
                return
            if len(header) < _HEADER:
                raise _loss(path, "truncated", offset)
            length_bytes, length_crc = header[:8], struct.unpack("<I", header[8:])[0]
            if masked_crc32c(length_bytes) != length_crc:
                raise _loss(path, "corrupted", offset)
            length = struct.unpack("<Q", length_bytes)[0]
            data = handle.read(length)
            footer = handle.read(_FOOTER)
            if len(data) < length or len(footer) < _FOOTER:
                raise _loss(path, "truncated", offset)
            if masked_crc32c(data) != struct.unpack("<I", footer)[0]:
                raise _loss(path, "corrupted", offset)
            yield data
            offset += _HEADER + length + _FOOTER


def _loss(path: str, what: str, offset: int) -> errors.DataLossError:
    return errors.DataLossError(None, None, f"{path}: {what} record at {offset}")
