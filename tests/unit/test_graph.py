"""Graph construction: TF1's naming, scopes, devices, control dependencies, colocation, export."""

import numpy as np
import pytest

import dfcore as tf


def test_op_names_are_unique_as_tf_makes_them():
    a = tf.constant(1.0)
    b = tf.constant(2.0)
    m1 = tf.add(a, b)
    m2 = tf.add(a, b)
    with tf.name_scope("layer1"):
        m3 = tf.add(a, b)
    with tf.name_scope("layer1"):
        m4 = tf.add(a, b)
    assert [a.op.name, b.op.name] == ["Const", "Const_1"]
    assert [m1.op.name, m2.op.name, m3.op.name, m4.op.name] == ["Add", "Add_1", "layer1/Add", "layer1_1/Add"]
    assert m1.name == "Add:0"


def test_names_are_case_insensitive_like_tf():
    tf.constant(1.0, name="foo")
    other = tf.constant(1.0, name="Foo")
    assert other.op.name == "Foo_1"


def test_name_scope_reentry_with_trailing_slash():
    with tf.name_scope("outer") as scope:
        pass
    with tf.name_scope(scope):
        c = tf.constant(1.0, name="c")
    assert c.op.name == "outer/c"


def test_name_scope_with_default_name_and_values():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(1.0)
    with tf.name_scope(None, "default", [x]) as scope:
        y = tf.identity(x)
    assert scope == "default/"
    assert y.graph is g and y.op.name == "default/Identity"


def test_nested_device_scopes_merge_field_by_field():
    with tf.device("/job:ps"):
        with tf.device("/gpu:1"):
            a = tf.constant(1.0)
        b = tf.constant(1.0)
    with tf.device("/device:GPU:0"):
        with tf.device(None):
            c = tf.constant(1.0)
    assert a.op.device == "/job:ps/device:GPU:1"
    assert b.op.device == "/job:ps"
    assert c.op.device == ""


def test_device_function_and_devicespec():
    def to_cpu(op):
        return "/cpu:0" if op.type == "Const" else "/gpu:0"

    with tf.device(to_cpu):
        a = tf.constant(1.0)
        b = a + a
    with tf.device(tf.DeviceSpec(job="worker", task=1)):
        c = tf.constant(1.0)
    assert a.op.device == "/cpu:0" and b.op.device == "/gpu:0"
    assert c.op.device == "/job:worker/task:1"


def test_control_dependencies_nesting_and_clearing():
    a = tf.constant(1.0)
    b = tf.constant(2.0)
    with tf.control_dependencies([a]):
        c = tf.identity(b)
        with tf.control_dependencies([b.op]):
            d = tf.identity(a)
        with tf.control_dependencies(None):
            e = tf.identity(a)
    assert c.op.control_inputs == [a.op]
    assert d.op.control_inputs == [b.op]  # a is a data input, so it is not repeated
    assert e.op.control_inputs == []


def test_control_dependency_skipped_when_input_created_inside_block():
    a = tf.constant(1.0)
    with tf.control_dependencies([a]):
        inner = tf.constant(2.0)
        b = tf.identity(inner)
    assert inner.op.control_inputs == [a.op]
    assert b.op.control_inputs == []  # already implied through its input, created in the block


def test_colocate_with_sets_class_attr_and_device():
    with tf.device("/gpu:1"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/cpu:0"):
        with tf.colocate_with(v.op):
            x = tf.identity(v)
    assert x.op.get_attr("_class") == ["loc:@v"]
    assert x.op.device == "/device:GPU:1"
    assert v.value().op.get_attr("_class") == ["loc:@v"]


def test_graph_lookup_and_errors():
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    g = tf.get_default_graph()
    assert g.get_tensor_by_name("x:0") is x
    assert g.get_operation_by_name("x") is x.op
    with pytest.raises(KeyError, match="The name 'nope:0' refers to a Tensor which does not exist"):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(KeyError, match="exists but only has 1 outputs"):
        g.get_tensor_by_name("x:1")
    with pytest.raises(KeyError, match="refers to an Operation not in the graph"):
        g.get_operation_by_name("nope")
    with pytest.raises(ValueError, match="looks a like an Operation name"):
        g.get_tensor_by_name("x")


def test_graph_def_export():
    with tf.device("/cpu:0"):
        a = tf.constant([[1.0, 2.0]], name="a")
    b = tf.matmul(a, a, transpose_b=True, name="mm")
    with tf.control_dependencies([a]):
        tf.no_op(name="n")
    graph_def = tf.get_default_graph().as_graph_def()
    assert isinstance(graph_def, tf.GraphDef)
    nodes = {n.name: n for n in graph_def.node}
    assert nodes["mm"].op == "MatMul" and list(nodes["mm"].input) == ["a", "a"]
    assert nodes["mm"].attr["transpose_b"].b is True
    assert nodes["a"].device == "/device:CPU:0"
    assert list(nodes["n"].input) == ["^a"]
    assert tf.GraphDef.FromString(graph_def.SerializeToString()) == graph_def
    assert b.shape.as_list() == [1, 1]


def test_finalize_blocks_new_ops():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0)
        g.finalize()
        with pytest.raises(RuntimeError, match="Graph is finalized"):
            tf.constant(2.0)


def test_tensor_from_another_graph_is_rejected():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = tf.constant(1.0)
    with g2.as_default():
        b = tf.constant(2.0)
        with pytest.raises(ValueError, match="must be from the same graph"):
            tf.add(a, b)


def test_reset_default_graph_inside_nested_graph_is_an_error():
    with tf.Graph().as_default():
        with pytest.raises(AssertionError, match="nested graphs"):
            tf.reset_default_graph()


def test_tensor_static_shape_and_dtype():
    x = tf.placeholder(tf.float32, [None, 3])
    assert x.shape.as_list() == [None, 3]
    assert str(x.shape) == "(?, 3)"
    assert x.get_shape()[1].value == 3
    assert x.dtype == tf.float32 and x.dtype == np.float32
    x.set_shape([5, 3])
    assert x.shape.as_list() == [5, 3]
    with pytest.raises(ValueError):
        x.set_shape([5, 4])


def test_tensor_bool_and_len_are_errors():
    x = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError):
        bool(x)
    with pytest.raises(TypeError):
        len(x)


def test_collections():
    v = tf.Variable(1.0, name="v")
    w = tf.Variable(1.0, name="w", trainable=False)
    assert tf.global_variables() == [v, w]
    assert tf.trainable_variables() == [v]
    tf.add_to_collection("mine", 3)
    assert tf.get_collection("mine") == [3]
    assert tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="w") == [w]
