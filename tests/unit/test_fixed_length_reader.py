"""tf.decode_raw and tf.FixedLengthRecordReader against TF's recorded behaviour.

Expected values recorded with TensorFlow 2.21 (``tf.compat.v1``, graph mode) on the same inputs and files.
"""

import numpy as np
import pytest

import dfcore as tf


def test_decode_raw_values_and_shapes():
    with tf.Graph().as_default(), tf.Session() as sess:
        # Recorded: [[1, 2], [3, 4]] uint8; [[513, 1027]] int16; big-endian [258, 772]; float32 [1.5, -2.].
        u8 = sess.run(tf.decode_raw(tf.constant([b"\x01\x02", b"\x03\x04"]), tf.uint8))
        np.testing.assert_array_equal(u8, [[1, 2], [3, 4]])
        assert u8.dtype == np.uint8
        np.testing.assert_array_equal(sess.run(tf.decode_raw(tf.constant([b"\x01\x02\x03\x04"]), tf.int16)),
                                      [[513, 1027]])
        np.testing.assert_array_equal(sess.run(tf.decode_raw(tf.constant(b"\x01\x02\x03\x04"), tf.int16,
                                                             little_endian=False)), [258, 772])
        f32 = tf.io.decode_raw(tf.constant(np.float32([1.5, -2]).tobytes()), tf.float32)
        np.testing.assert_array_equal(sess.run(f32), np.float32([1.5, -2]))
        # Recorded: a [2, 3] string placeholder gives shape [2, 3, ?].
        assert tf.decode_raw(tf.placeholder(tf.string, [2, 3]), tf.int16).shape.as_list() == [2, 3, None]


def test_decode_raw_errors():
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Input to DecodeRaw has length 3 that is not a multiple of 2, the size of int16"):
            sess.run(tf.decode_raw(tf.constant([b"\x01\x02\x03"]), tf.int16))
        # TF's wording, recorded: the first element's size, then the element's own.
        with pytest.raises(tf.errors.InvalidArgumentError, match="element 1 has size 2 != 4"):
            sess.run(tf.decode_raw(tf.constant([b"\x01\x02", b"\x01\x02\x03\x04"]), tf.int16))


def _read_all(key, value, sess):
    out = []
    while True:
        try:
            out.append(tuple(sess.run([key, value])))
        except tf.errors.OutOfRangeError:
            return out


def test_fixed_length_reader_header_footer_hop(tmp_path):
    a, b = str(tmp_path / "a.bin"), str(tmp_path / "b.bin")
    (tmp_path / "a.bin").write_bytes(bytes(range(3)) + bytes(range(10, 20)) + b"\xff\xfe")
    (tmp_path / "b.bin").write_bytes(bytes(range(50, 59)))
    with tf.Graph().as_default():
        queue = tf.FIFOQueue(10, tf.string)
        fill = [queue.enqueue_many([[a, b]]), queue.close()]
        reader = tf.FixedLengthRecordReader(record_bytes=4, header_bytes=3, footer_bytes=2)
        assert reader.reader_ref.op.type == "FixedLengthRecordReaderV2"
        key, value = reader.read(queue)
        hop_queue = tf.FIFOQueue(10, tf.string)
        hop_fill = [hop_queue.enqueue_many([[b]]), hop_queue.close()]
        hop_key, hop_value = tf.FixedLengthRecordReader(record_bytes=4, hop_bytes=3).read(hop_queue)
        with tf.Session() as sess:
            sess.run(fill + hop_fill)
            # Recorded: the 2 records between a.bin's header and footer (a 2-byte tail dropped), then the one
            # record between b.bin's (the same header and footer); with hop_bytes=3, records at offsets 0 and 3.
            assert _read_all(key, value, sess) == [(f"{a}:0".encode(), b"\n\x0b\x0c\r"),
                                                   (f"{a}:1".encode(), b"\x0e\x0f\x10\x11"),
                                                   (f"{b}:0".encode(), b"5678")]
            assert _read_all(hop_key, hop_value, sess) == [(f"{b}:0".encode(), b"2345"),
                                                           (f"{b}:1".encode(), b"5678")]


def test_cifar_style_pipeline(tmp_path):
    """The CIFAR-10 tutorial's pattern: label byte + 3x32x32 image bytes, decode_raw, slice, reshape."""
    rng = np.random.default_rng(0)
    records = rng.integers(0, 256, size=(5, 1 + 3 * 32 * 32), dtype=np.uint8)
    path = str(tmp_path / "data_batch_1.bin")
    records.tofile(path)
    with tf.Graph().as_default():
        queue = tf.train.string_input_producer([path], num_epochs=1, shuffle=False)
        _, value = tf.FixedLengthRecordReader(record_bytes=1 + 3072).read(queue)
        raw = tf.decode_raw(value, tf.uint8)
        label = tf.cast(tf.strided_slice(raw, [0], [1]), tf.int32)
        image = tf.transpose(tf.reshape(tf.strided_slice(raw, [1], [3073]), [3, 32, 32]), [1, 2, 0])
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            got_label, got_image = sess.run([label, image])
            coord.request_stop()
            coord.join(threads)
    assert got_label.tolist() == [int(records[0, 0])]
    np.testing.assert_array_equal(got_image, records[0, 1:].reshape(3, 32, 32).transpose(1, 2, 0))
