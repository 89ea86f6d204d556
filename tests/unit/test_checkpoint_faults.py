"""Checkpoint faults: corrupt files raise ``DataLossError`` naming the file; a failed or killed save
keeps the previous checkpoint intact and leaves no temp file behind."""

import errno
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import types

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors

W = np.arange(12, dtype=np.float32).reshape(3, 4)


@pytest.fixture
def model():
    """w (float32 [3,4]) and the global step (7) in their own graph and session, with a Saver."""
    with tf.Graph().as_default():
        w = tf.Variable(W, name="w")
        gs = tf.train.get_or_create_global_step()
        saver = tf.train.Saver(max_to_keep=3)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(gs.assign(7))
            yield types.SimpleNamespace(w=w, gs=gs, saver=saver, sess=sess)


def _assert_holds(m, w_value, step=7):
    np.testing.assert_array_equal(m.sess.run(m.w), w_value)
    assert m.sess.run(m.gs) == step


def _temp_files(directory):
    return [name for name in os.listdir(directory) if name.endswith(".tmp")]


def _stuck_temp_files(directory):
    """The temp files of _KILLED_SAVER's second save (step 2), which never finishes; its first save's
    temp file exists only for a moment before it is renamed."""
    return [name for name in _temp_files(directory) if "-2." in name]


def _flip(data, offset, bit=0x01):
    flipped = bytearray(data)
    flipped[offset] ^= bit
    return bytes(flipped)


# -- the error class ------------------------------------------------------------------
def test_data_loss_error_is_tf_class():
    assert errors.DATA_LOSS == 15
    error = tf.errors.DataLossError(None, None, "bad bytes")
    assert isinstance(error, tf.errors.OpError) and error.error_code == 15 and str(error) == "bad bytes"
    assert errors.exception_type_from_error_code(15) is tf.errors.DataLossError
    assert tf.compat.v1.errors.DataLossError is tf.errors.DataLossError


# -- corrupt checkpoint files -----------------------------------------------------------
def _corrupt_tensor_bytes(data):
    """Flip one bit inside w's values: the zip and the .npy header still parse."""
    return _flip(data, data.index(W.tobytes()) + W.nbytes // 2)


@pytest.mark.parametrize("corrupt", [
    pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
    pytest.param(lambda data: b"", id="empty"),
    pytest.param(lambda data: _flip(data, len(data) // 2, 0x10), id="byte-flipped-in-the-middle"),
    pytest.param(_corrupt_tensor_bytes, id="bit-flipped-in-a-tensor"),
    pytest.param(lambda data: np.random.default_rng(0).bytes(len(data)), id="garbage"),
    pytest.param(lambda data: b"\x80\x04\x95" + data[3:], id="pickle-header"),
])
def test_corrupt_checkpoint_raises_data_loss_naming_the_file(model, tmp_path, corrupt):
    path = model.saver.save(model.sess, str(tmp_path / "model.ckpt"), global_step=7)
    data_file = tmp_path / "model.ckpt-7.npz"
    data_file.write_bytes(corrupt(data_file.read_bytes()))
    model.sess.run(model.w.assign(np.zeros((3, 4), np.float32)))
    with pytest.raises(errors.DataLossError, match=re.escape(str(data_file))):
        model.saver.restore(model.sess, path)
    _assert_holds(model, np.zeros((3, 4), np.float32))  # nothing restored


def test_bit_flip_in_tensor_names_the_checksum(model, tmp_path):
    path = model.saver.save(model.sess, str(tmp_path / "m"))
    data_file = tmp_path / "m.npz"
    data_file.write_bytes(_corrupt_tensor_bytes(data_file.read_bytes()))
    with pytest.raises(errors.DataLossError, match=r"(?i)tensor w.*CRC-32"):
        model.saver.restore(model.sess, path)


def test_every_single_bit_flip_restores_exactly_or_raises_data_loss(model, tmp_path):
    """Bit rot anywhere in the file never restores a wrong value and never raises anything else."""
    model.saver.save(model.sess, str(tmp_path / "m"))
    data = (tmp_path / "m.npz").read_bytes()
    flipped_file, outcomes = tmp_path / "flipped.npz", {"restored": 0, "data_loss": 0}
    for offset in range(len(data)):
        flipped_file.write_bytes(_flip(data, offset, 0x01 << (offset % 8)))
        try:
            model.saver.restore(model.sess, str(tmp_path / "flipped"))
        except errors.DataLossError:
            outcomes["data_loss"] += 1
            continue
        outcomes["restored"] += 1
        _assert_holds(model, W)
    assert outcomes["data_loss"] > len(data) // 2  # the flips that matter are caught; some hit unused fields


# -- corrupt "checkpoint" state files -------------------------------------------------------
def _two_checkpoints(model, directory):
    for step in (1, 2):
        model.saver.save(model.sess, os.path.join(directory, "model.ckpt"), global_step=step)
    return os.path.join(directory, "checkpoint")


@pytest.mark.parametrize("corrupt", [
    pytest.param(lambda text: text.replace(b"model.ckpt-2", b"model.ckpt-1", 1), id="flip-that-still-parses"),
    pytest.param(lambda text: text[: len(text) // 2], id="truncated"),
    pytest.param(lambda text: text[: text.rindex(b"\n", 0, len(text) - 1) + 1], id="truncated-at-a-line"),
    pytest.param(lambda text: b"", id="empty"),
    pytest.param(lambda text: b"\xff\xfe\x00garbage\x80", id="garbage"),
    pytest.param(lambda text: b'{"model_checkpoint_path": "m-1"}', id="json"),
])
def test_corrupt_state_file_raises_data_loss_naming_it(model, tmp_path, corrupt):
    state_file = _two_checkpoints(model, str(tmp_path))
    with open(state_file, "rb") as f:
        text = f.read()
    with open(state_file, "wb") as f:
        f.write(corrupt(text))
    for read in (tf.train.latest_checkpoint, tf.train.get_checkpoint_state):
        with pytest.raises(errors.DataLossError, match=re.escape(state_file)):
            read(str(tmp_path))


def test_every_single_bit_flip_in_state_file_reads_the_same_or_raises_data_loss(model, tmp_path):
    state_file = _two_checkpoints(model, str(tmp_path))
    with open(state_file, "rb") as f:
        text = f.read()
    expected = tf.train.get_checkpoint_state(str(tmp_path))
    for offset in range(len(text)):
        for bit in (0x01, 0x20, 0x80):
            with open(state_file, "wb") as f:
                f.write(_flip(text, offset, bit))
            try:
                state = tf.train.get_checkpoint_state(str(tmp_path))
            except errors.DataLossError:
                continue
            assert state == expected, (offset, bit)


def test_state_file_written_by_tensorflow_still_reads(tmp_path):
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "m-2"\nall_model_checkpoint_paths: "m-1"\n'
                                         'all_model_checkpoint_paths: "m-2"\n# a comment\n')
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.all_model_checkpoint_paths == [str(tmp_path / "m-1"), str(tmp_path / "m-2")]


# -- failed saves ---------------------------------------------------------------------------
def _fail_nth(monkeypatch, module, name, nth, error, under):
    """Make the ``nth`` call of ``module.name`` on a path under ``under`` (or any call without a path) raise."""
    real = getattr(module, name)
    calls = []

    def failing(*args, **kwargs):
        if not isinstance(args[0], (str, os.PathLike)) or str(args[0]).startswith(under):
            calls.append(args)
            if len(calls) == nth:
                raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, failing)
    return calls


FAILURES = {
    "create-temp": (os, "open", 1),
    "write-data": (np.lib.format, "write_array", 1),
    "fsync-data": (os, "fsync", 1),
    "replace-data": (os, "replace", 1),
    "replace-state-file": (os, "replace", 2),
}
ERRNOS = {errno.EACCES: errors.PermissionDeniedError, errno.EROFS: errors.PermissionDeniedError,
          errno.ENOSPC: errors.ResourceExhaustedError, errno.EDQUOT: errors.ResourceExhaustedError}


@pytest.mark.parametrize("where", list(FAILURES))
@pytest.mark.parametrize("code", list(ERRNOS), ids=[errno.errorcode[c] for c in ERRNOS])
def test_failed_save_raises_tf_error_and_keeps_previous_checkpoint(model, tmp_path, monkeypatch, where, code):
    prefix = str(tmp_path / "model.ckpt")
    model.saver.save(model.sess, prefix, global_step=1)
    listing, state_text = sorted(os.listdir(tmp_path)), (tmp_path / "checkpoint").read_bytes()
    model.sess.run([model.w.assign(np.ones((3, 4), np.float32)), model.gs.assign(8)])
    module, name, nth = FAILURES[where]
    calls = _fail_nth(monkeypatch, module, name, nth, OSError(code, os.strerror(code)), str(tmp_path))
    with pytest.raises(ERRNOS[code], match=re.escape(str(tmp_path)) + ".*" + re.escape(os.strerror(code))):
        model.saver.save(model.sess, prefix, global_step=2)
    monkeypatch.undo()
    assert len(calls) >= nth
    assert sorted(os.listdir(tmp_path)) == listing  # no temp file, no half-saved checkpoint
    assert (tmp_path / "checkpoint").read_bytes() == state_text
    latest = tf.train.latest_checkpoint(str(tmp_path))
    assert latest == f"{prefix}-1"
    model.saver.restore(model.sess, latest)
    _assert_holds(model, W)
    assert model.saver.save(model.sess, prefix, global_step=3) == f"{prefix}-3"  # the Saver still works
    assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == [f"{prefix}-1", f"{prefix}-3"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_directory_is_permission_denied(model, tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    model.saver.save(model.sess, prefix)
    os.chmod(tmp_path, 0o555)
    try:
        with pytest.raises(errors.PermissionDeniedError, match=re.escape(str(tmp_path))):
            model.saver.save(model.sess, prefix, global_step=2)
    finally:
        os.chmod(tmp_path, 0o755)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt.npz"]


def test_keyboard_interrupt_mid_write_keeps_previous_checkpoint(model, tmp_path, monkeypatch):
    prefix = str(tmp_path / "m")
    model.saver.save(model.sess, prefix)
    listing = sorted(os.listdir(tmp_path))
    model.sess.run(model.w.assign(np.ones((3, 4), np.float32)))
    _fail_nth(monkeypatch, np.lib.format, "write_array", 2, KeyboardInterrupt(), str(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        model.saver.save(model.sess, prefix)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == listing
    model.saver.restore(model.sess, prefix)
    _assert_holds(model, W)


_KILLED_SAVER = textwrap.dedent("""
    import sys, time
    import numpy as np
    import dfcore as tf
    w = tf.Variable(np.arange(12, dtype=np.float32).reshape(3, 4), name="w")
    gs = tf.train.get_or_create_global_step()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(gs.assign(7))
        saver.save(sess, sys.argv[1], global_step=1)
        real_write = np.lib.format.write_array
        def stuck_write(*args, **kwargs):
            real_write(*args, **kwargs)
            time.sleep(600)
        np.lib.format.write_array = stuck_write
        saver.save(sess, sys.argv[1], global_step=2)
""")


def test_temp_file_of_a_killed_save_is_removed_by_the_next_save(model, tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_SAVER, prefix])
    try:
        deadline = time.monotonic() + 60
        while not _stuck_temp_files(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _stuck_temp_files(tmp_path), "the child never started its second save"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert tf.train.latest_checkpoint(str(tmp_path)) == f"{prefix}-1"
    model.saver.restore(model.sess, f"{prefix}-1")
    _assert_holds(model, W)
    model.saver.save(model.sess, prefix, global_step=3)
    assert _temp_files(tmp_path) == []
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt-1.meta", "model.ckpt-1.npz",
                                            "model.ckpt-3.meta", "model.ckpt-3.npz"]


def test_temp_file_of_a_live_process_is_left_alone(model, tmp_path):
    """Another process still writing keeps its temp file."""
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_SAVER, str(tmp_path / "other")])
    try:
        deadline = time.monotonic() + 60
        while not _stuck_temp_files(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        (live,) = _stuck_temp_files(tmp_path)
        model.saver.save(model.sess, str(tmp_path / "m"), global_step=2)
        assert _temp_files(tmp_path) == [live]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


@pytest.mark.parametrize("text", ['{"version": 3, "time_s": 1.5, "clo', "\x00\x01", '{"version": 3}',
                                  '{"version": 3, "time_s": 1.5, "clocks": ["x"]}'])
def test_corrupt_parameter_server_sidecar_is_data_loss(tmp_path, text):
    """The PS driver's ``.driver.json`` beside a checkpoint: truncated or mangled -> DataLossError naming it
    (it used to be a JSONDecodeError or KeyError); a well-formed one round-trips."""
    from dfcore.distribute.ps_chief import load_sidecar, save_sidecar

    path = str(tmp_path / "model.ckpt-3")
    save_sidecar(path, 3, 1.5, [3, 2])
    assert load_sidecar(path, 3, 2) == {"version": 3, "time_s": 1.5, "clocks": [3, 2]}
    (tmp_path / "model.ckpt-3.driver.json").write_text(text)
    with pytest.raises(errors.DataLossError, match="model.ckpt-3.driver.json"):
        load_sidecar(path, 3, 2)
