"""``tf.FixedLengthRecordReader``: records of a fixed byte length from binary files (CIFAR-10's format).

Source: ``tensorflow/python/ops/io_ops.py`` and ``core/kernels/fixed_length_record_reader_op.cc`` (op
``FixedLengthRecordReaderV2``): each file skips ``header_bytes``, then yields ``record_bytes`` at a time,
each ``hop_bytes`` after the last (``record_bytes`` when 0), while a whole record fits before the
``footer_bytes``; a shorter tail is dropped. Keys are ``b"<file name>:<record index>"``. The reading itself
(queue of file names, counters, reset) is :mod:`dfcore.data.queue_readers`'.
"""

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor_shape import TensorShape
from ..ops.op_util import apply_op1
from .queue_readers import ReaderBase, reader_kernel

__all__ = ["FixedLengthRecordReader"]

registry.mark_stateful("FixedLengthRecordReaderV2")
registry.NotDifferentiable("FixedLengthRecordReaderV2")
registry.RegisterShape("FixedLengthRecordReaderV2")(lambda op: [(dtypes.string._as_ref, TensorShape([]))])


class FixedLengthRecordReader(ReaderBase):
    """Reads fixed-length records (TF's ``tf.FixedLengthRecordReader``); sizes in bytes.

    Raises:
        UnimplementedError: an ``encoding`` (compressed files) other than none.
    """

    def __init__(self, record_bytes: int, header_bytes: int | None = None, footer_bytes: int | None = None,
                 hop_bytes: int | None = None, name: str | None = None, encoding: str | None = None) -> None:
        if encoding:
            raise errors.UnimplementedError(None, None, f"FixedLengthRecordReader: encoding {encoding!r} is not "
                                                        "supported by dfcore (uncompressed files only)")
        attrs = {"container": "", "shared_name": "", "record_bytes": int(record_bytes),
                 "header_bytes": int(header_bytes or 0), "footer_bytes": int(footer_bytes or 0),
                 "hop_bytes": int(hop_bytes or 0), "encoding": ""}
        super().__init__(apply_op1("FixedLengthRecordReaderV2", [], attrs, name or "FixedLengthRecordReaderV2"))


def _fixed_records(op):
    record, header = op.get_attr("record_bytes"), op.get_attr("header_bytes")
    footer, hop = op.get_attr("footer_bytes"), op.get_attr("hop_bytes") or op.get_attr("record_bytes")

    def records(path):
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as error:
            raise errors.error_from_os_error(error, path) from None
        end = len(data) - footer
        for index, start in enumerate(range(header, end - record + 1, hop)):
            yield f"{path}:{index}".encode(), data[start:start + record]

    return records


registry.RegisterKernel("FixedLengthRecordReaderV2", needs_context=True)(
    reader_kernel("FixedLengthRecordReader", _fixed_records))
