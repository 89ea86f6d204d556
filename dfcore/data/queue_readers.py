"""TF 1.x's queue-fed readers: ``tf.TFRecordReader``, ``tf.WholeFileReader``, ``tf.IdentityReader``
(``key, value = reader.read(filename_queue)``).

Source: ``tensorflow/python/ops/io_ops.py`` (``ReaderBase`` and the readers) and
``core/framework/reader_base.cc`` / ``core/kernels/{tf_record,whole_file,identity}_reader_op.cc``
(op types ``TFRecordReaderV2``, ``WholeFileReaderV2``, ``IdentityReaderV2``, ``ReaderReadV2``,
``ReaderReadUpToV2``, ``ReaderNumRecordsProducedV2``, ``ReaderNumWorkUnitsCompletedV2``,
``ReaderResetV2``). A read takes the next record of the current work unit (a file name); when
that one is done it dequeues the next from the queue (the read ends with the queue's
``OutOfRangeError`` once it is closed and empty). Keys, as TF's: ``<file name>:<byte offset>``
for TFRecord records, the file name for a whole file, the work unit itself for the identity
reader (whose value is the work unit too); keys fetch as bytes, as TF's strings do. The dequeue
never holds a thread: the read waits as the queue's waiter; if that wait fails (the step's
deadline), the records the read already took are kept for the next read. Reads of one reader from
several threads each get whole records, every record once.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..framework import dtypes, registry
from ..framework.tensor import Tensor
from ..framework.tensor_conversion import convert_to_tensor
from ..framework.tensor_shape import TensorShape
from ..ops import common_shapes
from ..ops.op_util import apply_op, apply_op1
from .tfrecord import check_options, tf_record_iterator

if TYPE_CHECKING:
    from ..framework.operation import Operation
    from ..ops.data_flow_ops import QueueBase

__all__ = ["IdentityReader", "ReaderBase", "TFRecordReader", "WholeFileReader"]

_USERS = ("ReaderReadV2", "ReaderReadUpToV2", "ReaderNumRecordsProducedV2", "ReaderNumWorkUnitsCompletedV2",
          "ReaderResetV2")
_READERS = ("TFRecordReaderV2", "WholeFileReaderV2", "IdentityReaderV2")
registry.mark_stateful(*_READERS, *_USERS)
for _op_type in _READERS + _USERS:
    registry.NotDifferentiable(_op_type)
for _op_type in _USERS:
    registry.register_ref_inputs(_op_type, 0)
for _op_type in _READERS:
    registry.RegisterShape(_op_type)(lambda op: [(dtypes.string._as_ref, TensorShape([]))])
registry.RegisterShape("ReaderReadV2")(lambda op: [(dtypes.string, TensorShape([]))] * 2)
registry.RegisterShape("ReaderReadUpToV2")(lambda op: [(dtypes.string, TensorShape([None]))] * 2)
registry.RegisterShape("ReaderNumRecordsProducedV2")(common_shapes.scalar_of(dtypes.int64))
registry.RegisterShape("ReaderNumWorkUnitsCompletedV2")(common_shapes.scalar_of(dtypes.int64))
registry.RegisterShape("ReaderResetV2")(common_shapes.no_outputs)


# A work unit's (key, value) records, from its name.
Records = Callable[[str], Iterator[tuple[Any, Any]]]


class ReaderBase:
    """A reader: its ops read records from the work units (file names) of a queue (TF's ``tf.ReaderBase``)."""

    def __init__(self, reader_ref: Tensor):
        self._reader_ref = reader_ref

    @property
    def reader_ref(self) -> Tensor:
        return self._reader_ref

    @property
    def supports_serialize(self) -> bool:
        return False

    def read(self, queue: Tensor | QueueBase, name: str | None = None) -> tuple[Tensor, Tensor]:
        """``(key, value)``: string scalars, the next record and ``<file>:<offset>``; ``queue`` a queue of
        file names (or its handle). Raises (when run) the queue's OutOfRangeError once it is closed and done."""
        queue_ref = queue if isinstance(queue, Tensor) else queue.queue_ref
        op = apply_op("ReaderReadV2", [self._reader_ref, queue_ref], {}, name or "ReaderReadV2")
        return op.outputs[0], op.outputs[1]

    def read_up_to(self, queue: Tensor | QueueBase, num_records: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
        """``(keys, values)``: string vectors of up to ``num_records`` records (fewer only at the queue's end)."""
        queue_ref = queue if isinstance(queue, Tensor) else queue.queue_ref
        num_records = convert_to_tensor(num_records, dtype=dtypes.int64, name="num_records")
        op = apply_op("ReaderReadUpToV2", [self._reader_ref, queue_ref, num_records], {}, name or "ReaderReadUpToV2")
        return op.outputs[0], op.outputs[1]

    def num_records_produced(self, name: str | None = None) -> Tensor:
        """An int64 scalar: the records this reader has read."""
        return apply_op1("ReaderNumRecordsProducedV2", [self._reader_ref], {}, name or "ReaderNumRecordsProducedV2")

    def num_work_units_completed(self, name: str | None = None) -> Tensor:
        """An int64 scalar: the files this reader has finished."""
        return apply_op1("ReaderNumWorkUnitsCompletedV2", [self._reader_ref], {},
                         name or "ReaderNumWorkUnitsCompletedV2")

    def reset(self, name: str | None = None) -> Operation:
        """The op restoring the reader to its initial state (no file, counters at 0)."""
        return apply_op("ReaderResetV2", [self._reader_ref], {}, name or "ReaderResetV2")


class TFRecordReader(ReaderBase):
    """Reads the records of TFRecord files (TF's ``tf.TFRecordReader``, op ``TFRecordReaderV2``).

    Raises:
        UnimplementedError: compression ``options`` (dfcore reads uncompressed files only).
    """

    def __init__(self, name: str | None = None, options: Any = None):
        check_options(options)
        super().__init__(apply_op1("TFRecordReaderV2", [], {"container": "", "shared_name": "",
                                                            "compression_type": ""}, name or "TFRecordReaderV2"))


class WholeFileReader(ReaderBase):
    """Reads each file whole: key the file name, value its bytes (TF's ``tf.WholeFileReader``)."""

    def __init__(self, name: str | None = None):
        super().__init__(apply_op1("WholeFileReaderV2", [], {"container": "", "shared_name": ""},
                                   name or "WholeFileReaderV2"))


class IdentityReader(ReaderBase):
    """Outputs each work unit as both key and value (TF's ``tf.IdentityReader``)."""

    def __init__(self, name: str | None = None):
        super().__init__(apply_op1("IdentityReaderV2", [], {"container": "", "shared_name": ""},
                                   name or "IdentityReaderV2"))


def _tf_records(path):
    offset = 0
    for record in tf_record_iterator(path):
        yield f"{path}:{offset}".encode(), record
        offset += 16 + len(record)  # TF's framing: length, its CRC, the data, its CRC


def _whole_file(path):
    try:
        with open(path, "rb") as handle:
            yield path.encode(), handle.read()
    except OSError as error:
        raise errors.error_from_os_error(error, path) from None


def _identity(work):
    yield work.encode(), work.encode()


class ReaderResource:
    """A reader's state in a session: the open work unit, the ones dequeued but not opened yet, counters;
    ``records(work)`` yields a work unit's ``(key, value)`` pairs."""

    def __init__(self, name: str, records: Records):
        self.name = name
        self._records = records
        self._lock = threading.Lock()
        self._reset_state()

    def _reset_state(self):
        self._current = None  # the (key, value) iterator of the work unit being read
        self._work: collections.deque[str] = collections.deque()  # file names dequeued, not opened yet
        # (key, record) taken by a read that then failed: served first
        self._held: collections.deque[tuple[Any, Any]] = collections.deque()
        self.records_produced = 0
        self.work_units_completed = 0

    def retire(self, error: errors.OpError | None) -> None:
        """Its session closed: close the open file."""
        self.reset()

    def reset(self) -> None:
        with self._lock:
            if self._current is not None:
                self._current.close()
            self._reset_state()

    def read(self, ctx: Any, queue: Any, n: int, up_to: bool,
             done: Callable[[errors.OpError | None, Any], None]) -> None:
        """``done(None, (keys, values))`` with ``n`` records (fewer with ``up_to`` once the queue is done)."""
        keys: list[Any] = []
        values: list[Any] = []

        def more():
            try:
                with self._lock:
                    while len(keys) < n and self._next(keys, values):
                        pass
            except errors.OpError as error:
                done(error, None)
                return
            if len(keys) == n:
                done(None, (keys, values))
            else:
                queue.dequeue(ctx, 1, False, got_work)

        def got_work(error, value):
            if error is None:
                with self._lock:
                    self._work.append(_text(value[0]))
                more()
            elif up_to and keys and isinstance(error, errors.OutOfRangeError):
                done(None, (keys, values))
            else:
                with self._lock:  # e.g. the step's deadline: the records taken go back for the next read
                    self._held.extendleft(reversed(list(zip(keys, values))))
                    self.records_produced -= len(keys)
                done(error, None)

        more()

    def _next(self, keys, values):
        """Append the next record (lock held); False when a file name must be dequeued first."""
        if self._held:
            key, record = self._held.popleft()
            keys.append(key)
            values.append(record)
            self.records_produced += 1
            return True
        while True:
            if self._current is None:
                if not self._work:
                    return False
                self._current = self._records(self._work.popleft())
            pair = next(self._current, None)
            if pair is not None:
                keys.append(pair[0])
                values.append(pair[1])
                self.records_produced += 1
                return True
            self._current = None
            self.work_units_completed += 1


def _text(value):
    value = np.asarray(value, dtype=object).item()
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _strings(items):
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array


def reader_kernel(kind: str,
                  records_of: Callable[[Operation], Records]) -> Callable[[Operation], Callable[[Any], ReaderResource]]:
    """The kernel factory of a reader op: a session resource ``kind`` reading with ``records_of(op)(work)``."""
    def factory(op):
        name = op.get_attr("shared_name") or op.name
        records = records_of(op)
        return lambda ctx: ctx.resources.resource(kind, name, ctx.device, lambda: ReaderResource(name, records))

    return factory


registry.RegisterKernel("TFRecordReaderV2", needs_context=True)(reader_kernel("TFRecordReader", lambda op: _tf_records))
registry.RegisterKernel("WholeFileReaderV2", needs_context=True)(
    reader_kernel("WholeFileReader", lambda op: _whole_file))
registry.RegisterKernel("IdentityReaderV2", needs_context=True)(reader_kernel("IdentityReader", lambda op: _identity))


@registry.RegisterKernel("ReaderReadV2", is_async=True)
def _read_kernel(op):
    def compute(ctx, done, reader, queue):
        def finish(error, value):
            done(error, None if error is not None else (np.asarray(value[0][0], dtype=object),
                                                        np.asarray(value[1][0], dtype=object)))

        reader.read(ctx, queue, 1, False, finish)

    return compute


@registry.RegisterKernel("ReaderReadUpToV2", is_async=True)
def _read_up_to_kernel(op):
    def compute(ctx, done, reader, queue, num_records):
        n = int(num_records)
        if n <= 0:
            raise errors.InvalidArgumentError(None, None, f"num_records must be positive, got {n}")
        reader.read(ctx, queue, n, True,
                    lambda error, value: done(error, None if error is not None else
                                              (_strings(value[0]), _strings(value[1]))))

    return compute


@registry.RegisterKernel("ReaderNumRecordsProducedV2")
def _records_produced_kernel(op):
    return lambda reader: np.int64(reader.records_produced)


@registry.RegisterKernel("ReaderNumWorkUnitsCompletedV2")
def _work_units_kernel(op):
    return lambda reader: np.int64(reader.work_units_completed)


@registry.RegisterKernel("ReaderResetV2")
def _reset_kernel(op):
    return lambda reader: reader.reset()
