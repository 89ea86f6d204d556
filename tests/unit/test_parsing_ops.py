"""tf.train.Example (TF's wire format) and tf.parse_example / tf.parse_single_example: values against their numpy
source through TFRecord files and Dataset.map, static shapes, and TF's error messages."""

import numpy as np
import pytest

import dfcore as tf
from tests.unit.data_helpers import elements

RNG = np.random.RandomState(0)
IMAGES = RNG.rand(5, 2, 3).astype(np.float32)
LABELS = np.arange(5, dtype=np.int64) * 3
NAMES = [f"image-{i}".encode() for i in range(5)]

FEATURES = {
    "image": tf.FixedLenFeature([2, 3], tf.float32),
    "label": tf.FixedLenFeature([], tf.int64),
    "name": tf.io.FixedLenFeature([], tf.string),
    "weight": tf.FixedLenFeature([1], tf.float32, default_value=[0.5]),
}


def _example(image=None, label=None, name=None, **extra):
    feature = {}
    if image is not None:
        feature["image"] = tf.train.Feature(float_list=tf.train.FloatList(value=np.reshape(image, -1)))
    if label is not None:
        feature["label"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))
    if name is not None:
        feature["name"] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[name]))
    feature.update(extra)
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _records():
    return [_example(image, label, name) for image, label, name in zip(IMAGES, LABELS, NAMES)]


def test_example_messages_are_tf_wire_format():
    record = _example(label=300)
    # Example.features (1) → Features.feature map entry (1) → key (1) "label", value (2) Feature →
    # int64_list (3) → packed value (1): 300 as a varint.
    entry = b"\n\x05label" + b"\x12\x06" + b"\x1a\x04" + b"\n\x02" + bytes([0xAC, 0x02])
    assert record == b"\n" + bytes([len(entry) + 2]) + b"\n" + bytes([len(entry)]) + entry
    # TF's bytes above, in dfcore's own package (so that dfcore and TF can share a process)
    assert tf.train.Example.DESCRIPTOR.full_name == "dfcore.tensorflow.Example"
    assert tf.train.SequenceExample(context=tf.train.Features()).HasField("context")
    assert tf.train.FeatureLists(feature_list={"a": tf.train.FeatureList()}).feature_list["a"] is not None


def test_tfrecord_dataset_map_parse_single_example_gives_back_the_numpy_source(tmp_path):
    path = str(tmp_path / "examples.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for record in _records():
            writer.write(record)
    dataset = tf.data.TFRecordDataset([path]).map(lambda r: tf.parse_single_example(r, FEATURES))
    assert dataset.output_shapes["image"].as_list() == [2, 3] and dataset.output_types["label"] == tf.int64
    got = elements(dataset.batch(2))
    np.testing.assert_array_equal(np.concatenate([b["image"] for b in got]), IMAGES)
    np.testing.assert_array_equal(np.concatenate([b["label"] for b in got]), LABELS)
    assert [bytes(n) for b in got for n in b["name"]] == NAMES
    np.testing.assert_array_equal(np.concatenate([b["weight"] for b in got]), np.full([5, 1], 0.5, np.float32))


def test_parse_example_parses_a_batch_with_static_shapes():
    serialized = tf.placeholder(tf.string, [None])
    parsed = tf.io.parse_example(serialized, FEATURES)
    assert parsed["image"].shape.as_list() == [None, 2, 3] and parsed["name"].dtype == tf.string
    assert parsed["image"].op.type == "ParseExample"
    with tf.Session() as sess:
        out = sess.run(parsed, {serialized: _records()})  # the label-0 record ends in a NUL byte: kept by the feed
        empty = sess.run(parsed["label"], {serialized: []})
    np.testing.assert_array_equal(out["image"], IMAGES)
    np.testing.assert_array_equal(out["label"], LABELS)
    assert list(out["name"]) == NAMES and empty.shape == (0,)


@pytest.mark.parametrize("batch", [False, True])
def test_bad_records_raise_tf_errors(batch):
    serialized = tf.placeholder(tf.string, [None] if batch else [])
    parse = (lambda f: tf.parse_example(serialized, f, example_names=["rec0"])) if batch else \
        (lambda f: tf.parse_single_example(serialized, f))
    prefix = "Name: rec0, " if batch else ""
    cases = [
        (_example(label=1), {"image": FEATURES["image"]},
         f"{prefix}Feature: image (data type: float) is required but could not be found."),
        (_example(label=1), {"label": tf.FixedLenFeature([], tf.float32)},
         f"{prefix}Feature: label.  Data types don't match. Expected type: float"),
        (_example(image=np.zeros(4)), {"image": FEATURES["image"]},
         f"{prefix}Key: image, Index: 0.  Number of float values != expected.  Values size: 4 but output shape: "
         "[2,3]"),
        (b"\xff\xff not a proto", {"label": FEATURES["label"]}, "Could not parse example input, value: "),
    ]
    with tf.Session() as sess:
        for record, features, message in cases:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(parse(features), {serialized: [record] if batch else record})
            assert info.value.message.startswith(message), info.value.message


def test_feature_specs_are_checked_when_the_graph_is_built():
    record = tf.constant(_example(label=1))
    with pytest.raises(ValueError, match="Missing: features was empty."):
        tf.parse_single_example(record, {})
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values: float32, int64, string"):
        tf.parse_single_example(record, {"label": tf.FixedLenFeature([], tf.int32)})
    with pytest.raises(ValueError, match="Missing shape for feature label."):
        tf.parse_single_example(record, {"label": tf.FixedLenFeature(None, tf.int64)})
    with pytest.raises(ValueError, match="Invalid feature label"):
        tf.parse_single_example(record, {"label": (tf.int64,)})
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.parse_single_example(tf.constant([b"a"]), {"label": FEATURES["label"]})
    with pytest.raises(AttributeError, match="does not implement it yet"):
        tf.VarLenFeature  # noqa: B018 - dfcore has no SparseTensor
