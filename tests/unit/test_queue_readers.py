"""TF 1.x's queue-fed readers: tf.TFRecordReader in the file pipeline (file-name queue → reader →
parse_single_example → batch) against the numpy source, keys, counters, several threads on one reader, a
corrupt file; tf.WholeFileReader and tf.IdentityReader."""

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import dfcore as tf

FEATURES = {"x": tf.FixedLenFeature([2], tf.float32), "y": tf.FixedLenFeature([], tf.int64)}
X = np.arange(14, dtype=np.float32).reshape(7, 2)
Y = np.arange(7, dtype=np.int64)


@pytest.fixture(autouse=True)
def no_thread_left():
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5
    while not set(threading.enumerate()) <= before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert set(threading.enumerate()) <= before


def _write(tmp_path, rows_per_file=(3, 0, 4)):
    """Files of serialized Examples of (X, Y), split as ``rows_per_file`` (an empty file among them)."""
    paths, start = [], 0
    for i, count in enumerate(rows_per_file):
        path = str(tmp_path / f"part-{i}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for x, y in zip(X[start:start + count], Y[start:start + count]):
                features = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                            "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[y]))}
                writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
        paths.append(path)
        start += count
    return paths


def _record_size():
    """Bytes of one framed record: every row's Example serializes to the same length (packed floats, small ints)."""
    features = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=X[0])),
                "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[Y[0]]))}
    return 16 + len(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())


def _drain(sess, fetches):
    out = []
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)
    try:
        while True:
            out.append(sess.run(fetches))
    except tf.errors.OutOfRangeError:
        return out
    finally:
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)


def test_the_classic_file_pipeline_gives_back_the_numpy_source(tmp_path):
    paths = _write(tmp_path)
    graph = tf.Graph()
    with graph.as_default():
        files = tf.train.string_input_producer(paths, num_epochs=2, shuffle=False)
        reader = tf.TFRecordReader()
        key, record = reader.read(files)
        parsed = tf.parse_single_example(record, FEATURES)
        batch = tf.train.batch([key, parsed["x"], parsed["y"]], batch_size=7)
        counts = [reader.num_records_produced(), reader.num_work_units_completed()]
        init = tf.local_variables_initializer()
    assert key.shape.as_list() == [] and record.dtype == tf.string
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        batches = _drain(sess, batch)
        assert list(sess.run(counts)) == [14, 6]
    assert len(batches) == 2
    for keys, x, y in batches:
        np.testing.assert_array_equal(x, X)
        np.testing.assert_array_equal(y, Y)
        # <file>:<byte offset>, as bytes
        assert list(keys[:2]) == [f"{paths[0]}:0".encode(), f"{paths[0]}:{_record_size()}".encode()]


def test_read_up_to_and_several_threads_on_one_reader_read_every_record_once(tmp_path):
    paths = _write(tmp_path)
    graph = tf.Graph()
    with graph.as_default():
        files = tf.train.string_input_producer(paths, num_epochs=3, shuffle=True, seed=4)
        reader = tf.TFRecordReader()
        _, record = reader.read(files)
        y = tf.parse_single_example(record, FEATURES)["y"]
        ys = tf.train.shuffle_batch([y], batch_size=4, capacity=10, min_after_dequeue=2, num_threads=3,
                                    allow_smaller_final_batch=True)
        init = tf.local_variables_initializer()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        got = np.concatenate(_drain(sess, ys))
    np.testing.assert_array_equal(np.sort(got), np.repeat(Y, 3))

    graph = tf.Graph()
    with graph.as_default():
        files = tf.FIFOQueue(4, tf.string, shapes=[[]])
        fill, close = files.enqueue_many([paths]), files.close()
        keys, records = tf.TFRecordReader().read_up_to(files, 5)
    assert records.shape.as_list() == [None]
    with tf.Session(graph=graph) as sess:
        sess.run([fill, close])
        sizes = []
        while True:
            try:
                sizes.append(len(sess.run(records)))
            except tf.errors.OutOfRangeError:
                break
    assert sizes == [5, 2]  # across files; fewer only once the queue is done


def test_a_corrupt_file_stops_the_pipeline_with_data_loss(tmp_path):
    paths = _write(tmp_path, rows_per_file=(3,))
    data = bytearray(Path(paths[0]).read_bytes())
    data[20] ^= 0xFF  # inside the first record's data
    Path(paths[0]).write_bytes(bytes(data))
    graph = tf.Graph()
    with graph.as_default():
        files = tf.train.string_input_producer(paths, shuffle=False)
        _, record = tf.TFRecordReader().read(files)
        batch = tf.train.batch([record], batch_size=2)
    with tf.Session(graph=graph) as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(batch)
        with pytest.raises(tf.errors.DataLossError, match="part-0.tfrecord: corrupted record at 0"):
            coord.join(threads, stop_grace_period_secs=5)


def test_records_taken_by_a_read_that_times_out_waiting_for_a_file_are_read_next(tmp_path):
    paths = _write(tmp_path, rows_per_file=(3,))
    graph = tf.Graph()
    with graph.as_default():
        files = tf.FIFOQueue(4, tf.string, shapes=[[]])
        fill = files.enqueue(paths[0])
        reader = tf.TFRecordReader()
        keys, _ = reader.read_up_to(files, 5)
        key, _ = reader.read(files)
        produced = reader.num_records_produced()
    with tf.Session(graph=graph) as sess:
        sess.run(fill)
        with pytest.raises(tf.errors.DeadlineExceededError):  # 3 records, then it waits for a second file
            sess.run(keys, options=tf.RunOptions(timeout_in_ms=100))
        assert sess.run(produced) == 0
        assert [sess.run(key) for _ in range(3)] == [f"{paths[0]}:{i * _record_size()}".encode() for i in range(3)]


def test_match_filenames_once_feeds_the_pipeline_the_sorted_matches(tmp_path):
    paths = _write(tmp_path, rows_per_file=(2, 5))
    (tmp_path / "notes.txt").write_text("not a record file")
    graph = tf.Graph()
    with graph.as_default():
        names = tf.train.match_filenames_once(str(tmp_path / "part-*.tfrecord"))
        assert names.op.name == "matching_filenames" and tf.io.match_filenames_once is tf.train.match_filenames_once
        files = tf.train.string_input_producer(names, num_epochs=1, shuffle=False)
        _, record = tf.TFRecordReader().read(files)
        y = tf.parse_single_example(record, FEATURES)["y"]
        nothing = tf.matching_files(str(tmp_path / "*.missing"))
        init = tf.local_variables_initializer()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        assert list(sess.run(names)) == sorted(paths) and sess.run(nothing).shape == (0,)
        ys = _drain(sess, y)
    assert ys == list(Y)


def test_whole_file_and_identity_readers(tmp_path):
    paths = [tmp_path / "a.txt", tmp_path / "b.txt"]
    paths[0].write_bytes(b"first\x00file")
    paths[1].write_bytes(b"")
    graph = tf.Graph()
    with graph.as_default():
        files = tf.FIFOQueue(4, tf.string, shapes=[[]])
        fill = files.enqueue_many([[str(p) for p in paths] + [str(tmp_path / "missing.txt")]])
        whole = tf.WholeFileReader().read(files)
        words = tf.FIFOQueue(4, tf.string, shapes=[[]])
        fill_words, close_words = words.enqueue_many([["x", "y"]]), words.close()
        identity = tf.IdentityReader()
        pair = identity.read(words)
        produced = identity.num_records_produced()
    with tf.Session(graph=graph) as sess:
        sess.run([fill, fill_words, close_words])
        assert list(sess.run(whole)) == [str(paths[0]).encode(), b"first\x00file"]  # keys are bytes, as TF's
        assert list(sess.run(whole)) == [str(paths[1]).encode(), b""]
        with pytest.raises(tf.errors.NotFoundError, match="missing.txt"):
            sess.run(whole)
        assert [list(sess.run(pair)) for _ in range(2)] == [[b"x", b"x"], [b"y", b"y"]]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(pair)
        assert sess.run(produced) == 2
