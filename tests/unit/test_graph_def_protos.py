"""GraphDefs are TF's protobuf messages: attrs round-trip, a GraphDef real TensorFlow wrote imports and runs
to TF's numbers, write_graph writes binary and text, and bad files and unknown ops raise typed errors."""

import os

import numpy as np
import pytest
from tensorboard.compat.proto import types_pb2

import dfcore as tf
from dfcore.framework.attr_value import from_attr_value, to_attr_value
from dfcore.framework.tensor_shape import TensorShape
from dfcore.train.graph_io import read_graph_def

DATA = os.path.join(os.path.dirname(__file__), "data")
_TF_NAMES = {"float16": "DT_HALF", "float32": "DT_FLOAT", "float64": "DT_DOUBLE", "string": "DT_STRING"}


@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64, tf.int8, tf.int16, tf.int32, tf.int64,
                                   tf.uint8, tf.bool, tf.string])
def test_dtypes_carry_tfs_datatype_enum(dtype):
    expected = types_pb2.DataType.Value(_TF_NAMES.get(dtype.name, "DT_" + dtype.name.upper()))
    assert dtype.as_datatype_enum == expected and tf.as_dtype(expected) is dtype
    assert dtype._as_ref.as_datatype_enum == expected + 100 and tf.as_dtype(expected + 100) is dtype._as_ref


@pytest.mark.parametrize("value", [
    "SAME", 3, -7, True, False, 0.5, tf.float32, TensorShape([None, 784]), TensorShape(None), TensorShape([]),
    [1, 2, 2, 1], [tf.float32, tf.int64], [TensorShape([2]), TensorShape(None)], [], ["loc:@w"],
])
def test_attr_values_round_trip(value):
    attr = to_attr_value(value)
    assert tf.AttrValue.FromString(attr.SerializeToString()) == attr
    assert from_attr_value(attr) == value


def test_array_attrs_round_trip_with_their_dtype():
    for array in (np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, -2], np.int64), np.array(True),
                  np.array([b"ab", b"c"], dtype=object)):
        back = from_attr_value(to_attr_value(array))
        assert back.dtype == array.dtype and back.shape == array.shape and (back == array).all()


def test_an_attr_python_cannot_hold_names_its_type():
    with pytest.raises(TypeError, match="attr value of type dict"):
        to_attr_value({"a": 1})


def test_a_graph_def_real_tensorflow_wrote_imports_and_runs_to_tfs_numbers():
    graph_def = read_graph_def(os.path.join(DATA, "tf_small_mlp.pbtxt"))
    y, z, p = tf.import_graph_def(graph_def, return_elements=["y:0", "z:0", "p:0"], name="")
    assert y.op.device == "/device:CPU:0" and y.op.type == "Relu"
    with tf.Session() as sess:
        values = sess.run([y, z, p], {"x:0": np.array([[1.0, -1.0, 2.0]], np.float32)})
    np.testing.assert_allclose(values[0], [[8.5, 9.5]])
    np.testing.assert_allclose(values[1], [18.0])
    np.testing.assert_allclose(values[2], [[0.26894143, 0.73105854]], rtol=1e-6)


def test_import_scopes_names_maps_inputs_and_returns_elements():
    source = tf.Graph()
    with source.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        tf.multiply(x, 3.0, name="y")
    with tf.Graph().as_default() as target:
        fed = tf.constant([1.0, 2.0], name="fed")
        (y,) = tf.import_graph_def(source.as_graph_def(), input_map={"x:0": fed}, return_elements=["y:0"])
        (y_again,) = tf.import_graph_def(source.as_graph_def(), input_map={"x": fed}, return_elements=["y:0"])
        assert (y.name, y_again.name) == ("import/y:0", "import_1/y:0")
        with tf.Session(graph=target) as sess:
            np.testing.assert_array_equal(sess.run(y), [3.0, 6.0])
        with pytest.raises(ValueError, match="Requested return_element 'nope' not found"):
            tf.import_graph_def(source.as_graph_def(), return_elements=["nope"])
        with pytest.raises(TypeError, match="must be a GraphDef proto"):
            tf.import_graph_def({"node": []})


def test_a_graph_def_with_an_op_dfcore_lacks_is_not_found_naming_the_op_type():
    graph_def = tf.GraphDef()
    graph_def.node.add(name="warp", op="ImageProjectiveTransformV3")
    with pytest.raises(tf.errors.NotFoundError, match="Op type not registered 'ImageProjectiveTransformV3'.*'warp'"):
        tf.import_graph_def(graph_def)
    assert tf.get_default_graph().get_operations() == []


def test_write_graph_binary_and_text_read_back_equal(tmp_path):
    a = tf.constant([[1.0, 2.0]], name="a")
    tf.matmul(a, a, transpose_b=True, name="mm")
    graph_def = tf.get_default_graph().as_graph_def()
    text = tf.train.write_graph(tf.get_default_graph(), str(tmp_path / "sub"), "g.pbtxt")
    binary = tf.train.write_graph(graph_def, str(tmp_path), "g.pb", as_text=False)
    assert open(text).read().startswith('node {\n  name: "a"')
    with open(binary, "rb") as f:
        from_bytes = tf.GraphDef.FromString(f.read())
    assert read_graph_def(text) == graph_def == read_graph_def(binary) == from_bytes


def test_a_corrupt_pb_is_data_loss_and_a_missing_one_not_found(tmp_path):
    path = tmp_path / "g.pb"
    tf.constant([1.0, 2.0], name="a")
    data = tf.get_default_graph().as_graph_def().SerializeToString()
    for corrupt in (data[:len(data) // 2], b"\xff\xfe" + bytes(range(40))):
        path.write_bytes(corrupt)
        with pytest.raises(tf.errors.DataLossError, match="neither a binary GraphDef nor a text one"):
            read_graph_def(str(path))
    with pytest.raises(tf.errors.NotFoundError, match="missing.pb"):
        read_graph_def(str(tmp_path / "missing.pb"))


def test_graph_def_versions_from_version_and_output_shapes():
    tf.constant(1.0, name="a")
    version = tf.get_default_graph().version
    tf.placeholder(tf.float32, [None, 3], name="b")
    graph_def = tf.get_default_graph().as_graph_def(from_version=version, add_shapes=True)
    assert [n.name for n in graph_def.node] == ["b"] and graph_def.versions.producer > 0
    assert from_attr_value(graph_def.node[0].attr["_output_shapes"]) == [TensorShape([None, 3])]
    assert str(tf.get_default_graph().get_operation_by_name("b")) == str(graph_def.node[0].__class__(
        name="b", op="Placeholder", attr={k: v for k, v in graph_def.node[0].attr.items() if k != "_output_shapes"}))
