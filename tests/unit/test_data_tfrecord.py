"""TFRecord files: writer/reader round trip, TFRecordDataset, corruption and truncation → DataLossError."""

import os
import struct
from pathlib import Path

import pytest

import dfcore as tf
from tests.unit.data_helpers import elements

RECORDS = [b"", b"a", b"hello world" * 50, bytes(range(256))]


def _write(path, records=RECORDS):
    with tf.python_io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)
    return str(path)


def test_round_trip_and_tf_framing(tmp_path):
    path = _write(tmp_path / "r.tfrecord")
    assert list(tf.io.tf_record_iterator(path)) == RECORDS
    assert struct.unpack("<Q", Path(path).read_bytes()[:8])[0] == 0  # first record: its length, little endian
    assert os.path.getsize(path) == sum(16 + len(r) for r in RECORDS)


def test_tfrecord_dataset_over_files(tmp_path):
    first, second = _write(tmp_path / "a.tfrecord"), _write(tmp_path / "b.tfrecord", [b"x", b"y"])
    ds = tf.data.TFRecordDataset([first, second])
    assert ds.output_types == tf.string and ds.output_shapes.as_list() == []
    assert elements(ds) == RECORDS + [b"x", b"y"]
    tf.reset_default_graph()
    names = tf.placeholder(tf.string, [None])
    assert elements(tf.data.TFRecordDataset(names), {names: [second]}) == [b"x", b"y"]


def test_corrupt_record_raises_data_loss_with_offset(tmp_path):
    path = _write(tmp_path / "c.tfrecord")
    data = bytearray(Path(path).read_bytes())
    second_record = 16 + len(RECORDS[0])
    data[second_record + 12] ^= 0xFF  # the data byte of record 2
    Path(path).write_bytes(bytes(data))
    next_element = tf.data.TFRecordDataset(path).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(next_element) == b""
        with pytest.raises(tf.errors.DataLossError, match=f"c.tfrecord: corrupted record at {second_record}"):
            sess.run(next_element)


def test_truncated_and_missing_files(tmp_path):
    path = _write(tmp_path / "t.tfrecord")
    Path(path).write_bytes(Path(path).read_bytes()[:-3])
    with pytest.raises(tf.errors.DataLossError, match="truncated record at"):
        list(tf.io.tf_record_iterator(path))
    with pytest.raises(tf.errors.NotFoundError):
        elements(tf.data.TFRecordDataset(str(tmp_path / "missing.tfrecord")))


def test_compression_is_refused(tmp_path):
    with pytest.raises(tf.errors.UnimplementedError):
        tf.data.TFRecordDataset(str(tmp_path / "x"), compression_type="GZIP")
