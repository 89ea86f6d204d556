"""MetaGraphDef: export/import round trips of a trained model, collections, SaverDef, scopes, devices, bad files."""

import logging
import os

import numpy as np
import pytest
from google.protobuf import text_format, wrappers_pb2

import dfcore as tf
from dfcore import errors
from dfcore.framework.protos import MetaGraphDef, SaverDef, VariableDef
from dfcore.train.graph_io import read_proto

X = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
Y = np.array([[1.0], [-1.0]], np.float32)


def _train_and_save(directory, steps=3, as_text=False, **save_kwargs):
    """Build a linear model on /cpu:0, train it ``steps`` steps and save it (checkpoint and ``.meta``, a text
    one with ``as_text``); returns (prefix, values)."""
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        with tf.variable_scope("layer"):
            w = tf.Variable(tf.ones([2, 1]), name="w")
            b = tf.Variable(tf.zeros([1]), name="b")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="loss")
        step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=step)
    frozen = tf.Variable(3.0, trainable=False, name="frozen")
    tf.add_to_collection("my_train_ops", train_op)
    tf.add_to_collection("my_tensors", loss)
    tf.add_to_collection("my_tensors", x)
    tf.add_to_collection("my_ints", 7)
    tf.add_to_collection("my_floats", 0.25)
    tf.add_to_collection("my_strings", "hello")
    saver = tf.train.Saver(max_to_keep=3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(train_op, {x: X, y: Y})
        values = sess.run({"layer/w": w, "layer/b": b, "global_step": step, "frozen": frozen})
        save_kwargs.setdefault("write_meta_graph", not as_text)
        prefix = saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=step, **save_kwargs)
    if as_text:
        saver.export_meta_graph(prefix + ".meta", as_text=True)
    return prefix, values


@pytest.mark.parametrize("as_text", [False, True], ids=["binary", "text"])
def test_trained_model_round_trips_through_checkpoint_and_meta_file(tmp_path, as_text):
    prefix, values = _train_and_save(str(tmp_path), as_text=as_text)
    assert prefix.endswith("model.ckpt-3")
    data = open(prefix + ".meta", "rb").read()
    assert data.startswith(b"meta_info_def {") == as_text
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(prefix + ".meta")
        assert [v.name for v in tf.trainable_variables()] == ["layer/w:0", "layer/b:0"]
        assert [v.name for v in tf.global_variables()] == ["layer/w:0", "layer/b:0", "global_step:0",
                                                             "frozen:0"]
        assert tf.train.get_global_step() is tf.global_variables()[2]  # one Variable per VariableDef
        [train_op] = tf.get_collection("my_train_ops")
        assert isinstance(train_op, tf.Operation) and train_op.name == "GradientDescent"
        assert [t.name for t in tf.get_collection("my_tensors")] == ["loss:0", "x:0"]
        assert tf.get_collection("my_ints") == [7] and tf.get_collection("my_floats") == [0.25]
        assert tf.get_collection("my_strings") == [b"hello"]  # bytes, as TF gives them back
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            got = sess.run({"layer/w": "layer/w:0", "layer/b": "layer/b:0", "global_step": "global_step:0",
                            "frozen": "frozen:0"})
            for key, value in values.items():
                np.testing.assert_allclose(got[key], value)
            sess.run(train_op, {"x:0": X, "y:0": Y})  # training goes on from the restored values
            assert sess.run(tf.train.get_global_step()) == 4


def test_meta_graph_def_is_tf_message_and_says_dfcore_wrote_it(tmp_path):
    prefix, _ = _train_and_save(str(tmp_path))
    meta = read_proto(prefix + ".meta", MetaGraphDef)
    assert MetaGraphDef.FromString(meta.SerializeToString()) == meta
    assert text_format.Parse(text_format.MessageToString(meta), MetaGraphDef()) == meta
    assert meta.meta_info_def.tensorflow_version == f"dfcore {tf.__version__}"
    info = wrappers_pb2.StringValue()
    assert meta.meta_info_def.any_info.Unpack(info) and "dfcore" in info.value
    assert meta.saver_def.restore_op_name == "save/restore_all" and meta.saver_def.max_to_keep == 3
    assert meta.collection_def["my_train_ops"].node_list.value == ["GradientDescent"]
    assert meta.collection_def["my_ints"].int64_list.value == [7]
    assert meta.collection_def["my_floats"].float_list.value == [0.25]
    assert meta.collection_def["my_strings"].bytes_list.value == [b"hello"]
    [w_def, b_def] = [VariableDef.FromString(v) for v in meta.collection_def["trainable_variables"].bytes_list.value]
    assert w_def == VariableDef(variable_name="layer/w:0", initial_value_name="layer/ones:0",
                                initializer_name="layer/w/Assign", snapshot_name="layer/w/read:0", trainable=True)
    assert b_def.variable_name == "layer/b:0"
    assert {n.name for n in meta.graph_def.node} >= {"layer/w", "save/SaveV2", "save/restore_all", "GradientDescent"}


def test_callers_meta_info_def_is_kept_and_stamped():
    tf.Variable(1.0, name="v")
    own = MetaGraphDef.MetaInfoDef(tags=["serve"], meta_graph_version="v7")
    own.any_info.Pack(wrappers_pb2.StringValue(value="mine"))
    meta = tf.train.export_meta_graph(meta_info_def=own)
    info = wrappers_pb2.StringValue()
    assert meta.meta_info_def.tags == ["serve"] and meta.meta_info_def.meta_graph_version == "v7"
    assert meta.meta_info_def.any_info.Unpack(info) and info.value == "mine"
    assert meta.meta_info_def.tensorflow_version.startswith("dfcore ")
    with pytest.raises(TypeError, match="SaverDef argument must be of type SaverDef"):
        tf.train.export_meta_graph(saver_def=own)


def test_as_saver_def_names_the_graph_ops_and_its_save_tensor_writes_a_checkpoint(tmp_path):
    w = tf.Variable(np.arange(4.0, dtype=np.float32), name="w")
    saver = tf.train.Saver(max_to_keep=2, keep_checkpoint_every_n_hours=0.5)
    saver_def = saver.as_saver_def()
    assert saver_def == SaverDef(filename_tensor_name="save/Const:0", save_tensor_name="save/control_dependency:0",
                                 restore_op_name="save/restore_all", max_to_keep=2,
                                 keep_checkpoint_every_n_hours=0.5, version=SaverDef.V2)
    graph = tf.get_default_graph()
    assert graph.get_tensor_by_name(saver_def.save_tensor_name).op.control_inputs[0].type == "SaveV2"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        written = sess.run(saver_def.save_tensor_name, {saver_def.filename_tensor_name: str(tmp_path / "by_hand")})
        assert written == str(tmp_path / "by_hand")
        sess.run(w.assign(np.zeros(4, np.float32)))
        rebuilt = tf.train.Saver(saver_def=saver_def)
        assert rebuilt.as_saver_def() == saver_def and rebuilt._max_to_keep == 2
        rebuilt.restore(sess, str(tmp_path / "by_hand"))
        np.testing.assert_array_equal(sess.run(w), np.arange(4.0))


def test_saver_def_errors():
    tf.Variable(1.0, name="v")
    tf.train.Saver()
    with pytest.raises(TypeError, match="SaverDef"):
        tf.train.Saver(saver_def="save/restore_all")
    with pytest.raises(ValueError, match="not a dfcore Saver's save tensor"):
        tf.train.Saver(saver_def=SaverDef(filename_tensor_name="save/Const:0", save_tensor_name="save/Const:0",
                                          restore_op_name="save/restore_all"))
    with pytest.raises(KeyError):
        tf.train.Saver(saver_def=SaverDef(filename_tensor_name="nope:0", save_tensor_name="nope:0",
                                          restore_op_name="nope"))


def test_clear_devices_on_export_and_on_import(tmp_path):
    prefix, _ = _train_and_save(str(tmp_path))
    meta = read_proto(prefix + ".meta", MetaGraphDef)
    assert any(node.device for node in meta.graph_def.node)
    cleared = tf.train.export_meta_graph(str(tmp_path / "cleared.meta"), graph_def=meta.graph_def,
                                         clear_devices=True)
    assert not any(node.device for node in cleared.graph_def.node)
    with tf.Graph().as_default() as graph:
        tf.train.import_meta_graph(prefix + ".meta", clear_devices=True)
        assert not any(op.device for op in graph.get_operations())
    assert any(node.device for node in meta.graph_def.node)  # the message read is left as it was


def test_import_scope_prefixes_names_and_the_saver_restores_under_it(tmp_path):
    prefix, values = _train_and_save(str(tmp_path))
    with tf.Graph().as_default():
        tf.Variable(0.0, name="outside", trainable=False)
        saver = tf.train.import_meta_graph(prefix + ".meta", import_scope="imported")
        assert [v.name for v in tf.trainable_variables()] == ["imported/layer/w:0", "imported/layer/b:0"]
        assert [op.name for op in tf.get_collection("my_train_ops")] == ["imported/GradientDescent"]
        assert [t.name for t in tf.get_collection("my_tensors")] == ["imported/loss:0", "imported/x:0"]
        assert saver.as_saver_def().restore_op_name == "imported/save/restore_all"
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            np.testing.assert_allclose(sess.run("imported/layer/w:0"), values["layer/w"])


def test_export_scope_strips_the_scope_and_marks_unbound_inputs():
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.variable_scope("tower"):
        v = tf.Variable([1.0, 2.0], name="v")
        out = tf.add(v, x, name="out")
    tf.add_to_collection("outs", out)
    meta = tf.train.export_meta_graph(export_scope="tower")
    assert {n.name for n in meta.graph_def.node} == {"v", "v/Assign", "v/read", "v/initial_value", "out"}
    assert list(next(n for n in meta.graph_def.node if n.name == "out").input) == ["v/read", "$unbound_inputs_x"]
    assert meta.collection_def["unbound_inputs"].bytes_list.value == [b"$unbound_inputs_x"]
    assert meta.collection_def["outs"].node_list.value == ["out:0"]
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Graph contains unbound inputs: \\$unbound_inputs_x"):
            tf.train.import_meta_graph(meta)
        z = tf.constant([10.0, 20.0], name="z")
        tf.train.import_meta_graph(meta, import_scope="copy", input_map={"$unbound_inputs_x": z})
        assert [v.name for v in tf.global_variables()] == ["copy/v:0"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(tf.get_collection("outs")[0]), [11.0, 22.0])


def test_clear_extraneous_savers_keeps_only_the_given_saver():
    tf.Variable(1.0, name="v")
    kept = tf.train.Saver()
    other = tf.train.Saver(name="other_saver")
    tf.add_to_collection(tf.GraphKeys.SAVERS, kept)
    tf.add_to_collection(tf.GraphKeys.SAVERS, other)
    full = tf.train.export_meta_graph(saver_def=kept.as_saver_def())
    assert any(n.name.startswith("other_saver/") for n in full.graph_def.node)
    assert len(full.collection_def[tf.GraphKeys.SAVERS].bytes_list.value) == 2
    meta = kept.export_meta_graph(clear_extraneous_savers=True)
    assert not any(n.name.startswith("other_saver/") for n in meta.graph_def.node)
    assert [SaverDef.FromString(s) for s in meta.collection_def[tf.GraphKeys.SAVERS].bytes_list.value] == [
        kept.as_saver_def()]
    with tf.Graph().as_default():
        tf.train.import_meta_graph(meta)
        [saver] = tf.get_collection(tf.GraphKeys.SAVERS)
        assert isinstance(saver, tf.train.Saver) and saver.as_saver_def() == kept.as_saver_def()


def test_unencodable_collection_is_skipped_with_a_warning(caplog):
    tf.Variable(1.0, name="v")
    tf.add_to_collection("objects", object())
    tf.add_to_collection("mixed", 1)
    tf.add_to_collection("mixed", "one")
    tf.get_variable("from_a_store", [1])  # its store lives in a collection with a tuple key, left out silently
    with caplog.at_level(logging.WARNING):
        meta = tf.train.export_meta_graph()
    assert "objects" not in meta.collection_def and "mixed" not in meta.collection_def
    assert "string type keys" not in caplog.text
    assert "Error encountered when serializing objects" in caplog.text
    assert "Error encountered when serializing mixed" in caplog.text
    assert tf.GraphKeys.GLOBAL_VARIABLES in meta.collection_def
    meta = tf.train.export_meta_graph(collection_list=["variables"])
    assert list(meta.collection_def) == ["variables"]


def test_import_without_saver_def():
    tf.Variable(1.0, name="v")
    with_vars = tf.train.export_meta_graph()
    tf.reset_default_graph()
    tf.constant(1.0, name="c")
    no_vars = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(with_vars)
        assert isinstance(saver, tf.train.Saver) and saver.as_saver_def().restore_op_name == "save/restore_all"
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(no_vars) is None


def test_variable_def_round_trip():
    with tf.variable_scope("s"):
        v = tf.Variable(tf.zeros([3]), name="v", trainable=False)
    proto = v.to_proto()
    assert proto.variable_name == "s/v:0" and not proto.trainable
    assert v.to_proto(export_scope="s").variable_name == "v:0"
    assert v.to_proto(export_scope="elsewhere") is None
    again = tf.Variable.from_proto(proto)
    assert (again.op, again.initializer, again.value(), again.initial_value) == (
        v.op, v.initializer, v.value(), v.initial_value)
    assert not again.trainable
    with pytest.raises(ValueError, match="mutually exclusive"):
        tf.Variable(1.0, variable_def=proto)


def test_corrupt_meta_file_raises_data_loss_and_missing_file_not_found(tmp_path):
    prefix, _ = _train_and_save(str(tmp_path))
    data = open(prefix + ".meta", "rb").read()
    corrupt = tmp_path / "corrupt.meta"
    corrupt.write_bytes(data[: len(data) // 2] + b"\xff\xfe\x00garbage")
    with tf.Graph().as_default():
        with pytest.raises(errors.DataLossError, match="corrupt.meta holds neither a binary MetaGraphDef"):
            tf.train.import_meta_graph(str(corrupt))
        with pytest.raises(errors.NotFoundError, match="missing.meta"):
            tf.train.import_meta_graph(str(tmp_path / "missing.meta"))


def test_write_meta_graph_false_and_meta_graph_suffix(tmp_path):
    prefix, _ = _train_and_save(str(tmp_path), write_meta_graph=False)
    assert not os.path.exists(prefix + ".meta")
    tf.reset_default_graph()
    prefix, _ = _train_and_save(str(tmp_path / ""), meta_graph_suffix="graph")
    assert os.path.isfile(prefix + ".graph")

