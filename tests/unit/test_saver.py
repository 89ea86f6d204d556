"""Saver: round trips, fresh-graph restore, max_to_keep, atomic saves, the checkpoint state file."""

import errno
import os
import zlib

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors
from dfcore.train import checkpoint_management as cm

W = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.array([0.5, -1.5])


def _model(w=W, b=B):
    """Variables w (float32 [2,3]), layer/b (float64 [2]) and the global step (int64 scalar)."""
    w_var = tf.Variable(w, name="w")
    b_var = tf.Variable(b, name="layer/b")
    gs = tf.train.get_or_create_global_step()
    return w_var, b_var, gs


def _save_one(directory, step=None, **saver_kwargs):
    _, _, gs = _model()
    saver = tf.train.Saver(**saver_kwargs)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(gs.assign(7))
        return saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=step)


def test_round_trip_in_same_session(tmp_path):
    w, b, gs = _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
        assert path == str(tmp_path / "model.ckpt")
        sess.run([w.assign(np.zeros((2, 3), np.float32)), b.assign(np.zeros(2)), gs.assign(3)])
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(w), W)
        np.testing.assert_array_equal(sess.run(b), B)
        assert sess.run(gs) == 0
    assert sorted(np.load(path + ".npz").files) == ["global_step", "layer/b", "w"]
    assert tf.get_default_graph().get_operation_by_name("save/restore_all").type == "NoOp"


def test_restore_into_fresh_graph_and_session(tmp_path):
    path = _save_one(str(tmp_path), step=5)
    assert path.endswith("model.ckpt-5")
    with tf.Graph().as_default():
        gs = tf.train.get_or_create_global_step()  # a different creation order than at save time
        b = tf.Variable(np.zeros(2), name="layer/b")
        w = tf.Variable(np.zeros((2, 3), np.float32), name="w")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))  # no initializer run
            np.testing.assert_array_equal(sess.run(w), W)
            np.testing.assert_array_equal(sess.run(b), B)
            assert sess.run(gs) == 7


def test_global_step_tensor_names_the_checkpoint(tmp_path):
    _, _, gs = _model()
    saver = tf.train.Saver(pad_step_number=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(gs.assign(42))
        assert saver.save(sess, str(tmp_path / "m"), global_step=gs).endswith("m-00000042")


def test_missing_variable_is_not_found_and_nothing_restored(tmp_path):
    path = _save_one(str(tmp_path))
    with tf.Graph().as_default():
        _model()
        extra = tf.Variable(1.0, name="extra")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            with pytest.raises(errors.NotFoundError, match="Key extra not found in checkpoint"):
                saver.restore(sess, path)
            assert not sess.run(tf.is_variable_initialized(tf.global_variables()[0]))
            assert not sess.run(tf.is_variable_initialized(extra))


def test_shape_and_dtype_mismatch_are_invalid_argument(tmp_path):
    path = _save_one(str(tmp_path))
    with tf.Graph().as_default():
        tf.Variable(np.zeros((3, 2), np.float32), name="w")
        saver = tf.train.Saver()
        with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError,
                                                 match=r"lhs shape= \[3,2\] rhs shape= \[2,3\]"):
            saver.restore(sess, path)
    with tf.Graph().as_default():
        tf.Variable(np.zeros((2, 3)), name="w")
        saver = tf.train.Saver()
        with tf.Session() as sess, pytest.raises(
                errors.InvalidArgumentError, match="expected dtype double does not equal original dtype float"):
            saver.restore(sess, path)


def test_var_list_dict_and_subset(tmp_path):
    w, _, _ = _model()
    saver = tf.train.Saver({"weights": w})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "sub"))
    assert np.load(path + ".npz").files == ["weights"]
    with tf.Graph().as_default():
        v = tf.Variable(np.zeros((2, 3), np.float32), name="other_name")
        with tf.Session() as sess:
            tf.train.Saver({"weights": v}).restore(sess, path)
            np.testing.assert_array_equal(sess.run(v), W)


def test_max_to_keep_deletes_old_checkpoints(tmp_path):
    w, _, _ = _model()
    saver = tf.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(4):
            sess.run(w.assign(np.full((2, 3), step, np.float32)))
            saver.save(sess, prefix, global_step=step)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt-2.meta", "model.ckpt-2.npz",
                                            "model.ckpt-3.meta", "model.ckpt-3.npz"]  # .meta deleted too, as TF
    assert saver.last_checkpoints == [f"{prefix}-2", f"{prefix}-3"]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == f"{prefix}-3"
    assert state.all_model_checkpoint_paths == [f"{prefix}-2", f"{prefix}-3"]
    assert tf.train.latest_checkpoint(str(tmp_path)) == f"{prefix}-3"


def test_max_to_keep_none_keeps_every_file(tmp_path):
    _model()
    saver = tf.train.Saver(max_to_keep=None)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(3):
            saver.save(sess, str(tmp_path / "m"), global_step=step)
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".npz")]) == 3
    assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == [str(tmp_path / "m-2")]


def _save_with_sidecars(saver, sess, prefix, steps):
    """Save at each step, and write a sidecar file ``<checkpoint>.driver.json`` beside each checkpoint."""
    for step in steps:
        path = saver.save(sess, prefix, global_step=step)
        with open(path + ".driver.json", "w") as f:
            f.write("{}")


def test_max_to_keep_keeps_exactly_that_many_with_their_sidecars(tmp_path):
    _model()
    saver = tf.train.Saver(max_to_keep=3)
    prefix = str(tmp_path / "m")
    (tmp_path / "m-0.py").write_text("# a user's file, not part of checkpoint m-0\n")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _save_with_sidecars(saver, sess, prefix, range(7))
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-0.py"] + [f"m-{s}.{ext}" for s in (4, 5, 6)
                                                                      for ext in ("driver.json", "meta", "npz")]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.all_model_checkpoint_paths == [f"{prefix}-{s}" for s in (4, 5, 6)]


def test_max_to_keep_zero_keeps_every_file(tmp_path):
    _model()
    saver = tf.train.Saver(max_to_keep=0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _save_with_sidecars(saver, sess, str(tmp_path / "m"), range(7))
    assert len(os.listdir(tmp_path)) == 3 * 7 + 1  # .npz, .meta and a sidecar per checkpoint, and the state


def test_recovered_checkpoints_beyond_max_to_keep_are_deleted_at_the_next_save(tmp_path):
    _model()
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _save_with_sidecars(tf.train.Saver(max_to_keep=None), sess, prefix, range(5))
        saver = tf.train.Saver(max_to_keep=3)
        saver.recover_last_checkpoints([f"{prefix}-{s}" for s in range(5)])
        saver.save(sess, prefix, global_step=5)
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".npz")) == ["m-3.npz", "m-4.npz", "m-5.npz"]
    assert saver.last_checkpoints == [f"{prefix}-{s}" for s in (3, 4, 5)]


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)], ids=["022", "077", "002"])
def test_checkpoint_files_respect_the_umask(tmp_path, umask, mode):
    _model()
    saver = tf.train.Saver()
    old_umask = os.umask(umask)
    try:
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "m"))
    finally:
        os.umask(old_umask)
    assert oct(os.stat(path + ".npz").st_mode & 0o777) == oct(mode)
    assert oct(os.stat(tmp_path / "checkpoint").st_mode & 0o777) == oct(mode)


def test_keep_checkpoint_every_n_hours_preserves_old_ones(tmp_path):
    _model()
    saver = tf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1e-12)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(3):
            saver.save(sess, str(tmp_path / "m"), global_step=step)
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".npz")) == ["m-0.npz", "m-1.npz", "m-2.npz"]


def test_crash_during_save_keeps_previous_checkpoint(tmp_path, monkeypatch):
    w, _, _ = _model()
    saver = tf.train.Saver()
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, prefix)
        state_before = (tmp_path / "checkpoint").read_text()
        real_write = np.lib.format.write_array
        calls = []

        def failing_write(*args, **kwargs):
            calls.append(1)
            if len(calls) == 2:
                raise OSError(errno.EIO, "I/O error (simulated)")
            return real_write(*args, **kwargs)

        monkeypatch.setattr(np.lib.format, "write_array", failing_write)
        sess.run(w.assign(np.zeros((2, 3), np.float32)))
        with pytest.raises(errors.UnknownError, match=r"model\.ckpt\.npz; I/O error \(simulated\)"):
            saver.save(sess, prefix)
        monkeypatch.undo()
        assert len(calls) == 2  # the crash happened midway through the file
        assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt.meta", "model.ckpt.npz"]  # no temp file
        assert (tmp_path / "checkpoint").read_text() == state_before
        saver.restore(sess, prefix)
        np.testing.assert_array_equal(sess.run(w), W)


def test_saving_uninitialized_variable_writes_nothing(tmp_path):
    _model()
    saver = tf.train.Saver()
    with tf.Session() as sess, pytest.raises(errors.FailedPreconditionError, match="uninitialized"):
        saver.save(sess, str(tmp_path / "m"))
    assert os.listdir(tmp_path) == []


def test_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="No variables to save"):
        tf.train.Saver()
    empty = tf.train.Saver(allow_empty=True)
    w, _, _ = _model()
    with pytest.raises(ValueError, match="At least two variables have the same name: w"):
        tf.train.Saver([w, w])
    with pytest.raises(TypeError, match="Variable to save is not a Variable"):
        tf.train.Saver([w.value()])
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert empty.save(sess, str(tmp_path / "e")) is None
        with pytest.raises(TypeError, match="'sess' must be a Session"):
            saver.save("not a session", str(tmp_path / "m"))
        with pytest.raises(ValueError, match="Parent directory of .* doesn't exist, can't save."):
            saver.save(sess, str(tmp_path / "missing" / "m"))
        with pytest.raises(ValueError, match="'latest_filename' collides with 'save_path'"):
            saver.save(sess, str(tmp_path / "checkpoint"))
        with pytest.raises(ValueError, match="Can't load save_path when it is None."):
            saver.restore(sess, None)
        with pytest.raises(ValueError, match="The passed save_path is not a valid checkpoint"):
            saver.restore(sess, str(tmp_path / "nothing"))


def test_relative_directory_stores_relative_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir("ckpt")
    _save_one("ckpt", step=1)
    body = 'model_checkpoint_path: "model.ckpt-1"\nall_model_checkpoint_paths: "model.ckpt-1"\n'
    assert (tmp_path / "ckpt" / "checkpoint").read_text() == f"# crc32: 0x{zlib.crc32(body.encode()):08x}\n{body}"
    assert tf.train.latest_checkpoint("ckpt") == os.path.join("ckpt", "model.ckpt-1")


def test_restore_moving_averages_into_variables(tmp_path):
    x = tf.Variable(np.array([1.0, 2.0]), name="x")
    ema = tf.train.ExponentialMovingAverage(0.5)
    update = ema.apply([x])
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(x.assign([3.0, 4.0]))
        sess.run(update)
        path = saver.save(sess, str(tmp_path / "m"))
    with tf.Graph().as_default():
        x = tf.Variable(np.zeros(2), name="x")
        restorer = tf.train.Saver(tf.train.ExponentialMovingAverage(0.5).variables_to_restore())
        with tf.Session() as sess:
            restorer.restore(sess, path)
            np.testing.assert_allclose(sess.run(x), [2.0, 3.0])


# -- the state file format ----------------------------------------------------------
@pytest.mark.parametrize("paths", [
    ["model.ckpt-1", "model.ckpt-2"],
    ['/tmp/we"ird\\dir/ck\tpt', "line\nbreak", "d\u00e9j\u00e0/\u6a21\u578b-3"],
])
def test_checkpoint_state_format_round_trip(paths):
    state = cm.CheckpointState(paths[-1], paths)
    text = cm.format_checkpoint_state(state)
    checksum_line, body = text.split("\n", 1)
    assert checksum_line == f"# crc32: 0x{zlib.crc32(body.encode()):08x}"
    assert len(body.splitlines()) == len(paths) + 1
    assert cm.parse_checkpoint_state(text) == state
    with pytest.raises(ValueError, match="Checksum does not match"):
        cm.parse_checkpoint_state(text.replace(paths[0][:3], paths[0][:2] + "X", 1))


def test_parse_checkpoint_state_as_tf_writes_it():
    text = ('model_checkpoint_path: "d\\303\\251j\\303\\240-2"\n'
            'all_model_checkpoint_paths: "m-1"\nall_model_checkpoint_paths: "d\\303\\251j\\303\\240-2"\n'
            "all_model_checkpoint_timestamps: 1545312385.2\nlast_preserved_timestamp: 1545312380.5\n")
    state = cm.parse_checkpoint_state(text)
    assert state == cm.CheckpointState("d\u00e9j\u00e0-2", ["m-1", "d\u00e9j\u00e0-2"])
    with pytest.raises(ValueError, match="cannot parse"):
        cm.parse_checkpoint_state("model_checkpoint_path: unquoted\n")
