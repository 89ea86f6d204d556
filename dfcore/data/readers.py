"""``tf.data.TFRecordDataset``: the records of TFRecord files as scalar ``tf.string`` elements.

Source: ``tensorflow/python/data/ops/readers.py`` and ``core/kernels/data/reader_dataset_ops.cc``.
Files are read in order, lazily, by :func:`dfcore.data.tfrecord.tf_record_iterator`; a corrupt
record raises ``DataLossError`` (file and offset) at ``get_next``, a missing file ``NotFoundError``.
Elements are raw bytes; ``map`` them through ``tf.parse_single_example`` for ``tf.train.Example`` records.
"""

from typing import Any

import numpy as np

from ..framework import dtypes
from ..framework.tensor import Tensor
from ..framework.tensor_shape import TensorShape
from .dataset_ops import Dataset
from .tfrecord import check_options, tf_record_iterator


class TFRecordDataset(Dataset):
    """The records of ``filenames`` (a path, a list of paths, or a string Tensor of them), file by file.

    Raises:
        TypeError: filenames that are not strings; UnimplementedError: a ``compression_type``.
    """

    def __init__(self, filenames: Any, compression_type: str | None = None, buffer_size: int | None = None,
                 num_parallel_reads: int | None = None):
        check_options(compression_type)
        if not isinstance(filenames, Tensor):
            names = [filenames] if isinstance(filenames, (str, bytes)) else list(np.reshape(filenames, -1))
            if not all(isinstance(n, (str, bytes)) for n in names):
                raise TypeError("`filenames` must be a `tf.Tensor` of `tf.string` or a list of strings.")
            filenames = np.array([n.encode() if isinstance(n, str) else n for n in names], dtype=object)
        self._filenames = filenames
        super().__init__(0, [dtypes.string], [TensorShape([])], tensors=(filenames,))

    def _iterate(self, run):
        for name in np.reshape(run.value(self._filenames), -1):
            path = name.decode() if isinstance(name, bytes) else str(name)
            for record in tf_record_iterator(path):
                run.check_stopped()
                yield (np.array(record, dtype=object),)
