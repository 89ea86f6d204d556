"""tf.gfile / tf.io.gfile on local paths, and tf.compat's string helpers, against TF's behaviour.

The expected values and messages were recorded with TensorFlow 2.21 (``tf.compat.v1.gfile``) on the same
operations in a temp directory.
"""

import os

import pytest

import dfcore as tf


@pytest.fixture
def text_file(tmp_path):
    path = str(tmp_path / "t.txt")
    with tf.gfile.GFile(path, "w") as f:
        f.write("l1\nl2\nl3")
    return path


def test_read_forms(text_file):
    # Recorded: read() 'l1\nl2\nl3'; 'rb' b'l1\nl2\nl3'; readline 'l1\n'; readlines/iteration
    # ['l1\n', 'l2\n', 'l3']; read(2) 'l1'; size() 8; read(3) then tell() 3.
    assert tf.gfile.GFile(text_file).read() == "l1\nl2\nl3"
    assert tf.gfile.GFile(text_file, "rb").read() == b"l1\nl2\nl3"
    assert tf.gfile.GFile(text_file).readline() == "l1\n"
    assert tf.gfile.GFile(text_file).readlines() == ["l1\n", "l2\n", "l3"]
    assert list(tf.gfile.Open(text_file)) == ["l1\n", "l2\n", "l3"]
    assert tf.gfile.GFile(text_file).read(2) == "l1"
    assert tf.gfile.GFile(text_file).size() == 8
    f = tf.io.gfile.GFile(text_file)
    assert (f.read(3), f.tell()) == ("l1\n", 3)


def test_missing_file_errors(tmp_path):
    missing = str(tmp_path / "missing")
    assert not tf.gfile.Exists(missing) and not tf.gfile.IsDirectory(missing)
    lazy = tf.gfile.GFile(missing)  # TF opens lazily: no error until the first read
    with pytest.raises(tf.errors.NotFoundError, match=f"^{missing}; No such file or directory$"):
        lazy.read()
    for call in (tf.gfile.Stat, tf.gfile.Remove, lambda p: tf.gfile.Copy(p, p + "2")):
        with pytest.raises(tf.errors.NotFoundError, match="; No such file or directory$"):
            call(missing)
    with pytest.raises(tf.errors.NotFoundError, match=f"^{missing} not found$"):
        tf.gfile.DeleteRecursively(missing)
    with pytest.raises(tf.errors.NotFoundError, match=f"^Could not find directory {missing}$"):
        tf.gfile.ListDirectory(missing)


def test_directories_and_moves(tmp_path, text_file):
    d = str(tmp_path)
    tf.gfile.MakeDirs(os.path.join(d, "a/b"))
    tf.gfile.MakeDirs(os.path.join(d, "a/b"))  # again: fine
    tf.gfile.MkDir(d)  # an existing directory: fine in TF 2.21's gfile
    tf.gfile.GFile(os.path.join(d, "u.txt"), "w").write(b"x")  # bytes in text mode: accepted
    assert sorted(tf.gfile.ListDirectory(d)) == ["a", "t.txt", "u.txt"]
    assert sorted(tf.gfile.Glob(os.path.join(d, "*.txt"))) == [text_file, os.path.join(d, "u.txt")]
    assert tf.gfile.Stat(text_file).length == 8 and tf.gfile.Stat(d).is_directory
    for move in (tf.gfile.Rename, tf.gfile.Copy):
        with pytest.raises(tf.errors.AlreadyExistsError, match="^file already exists$"):
            move(text_file, os.path.join(d, "u.txt"))
    tf.io.gfile.copy(text_file, os.path.join(d, "u.txt"), overwrite=True)
    assert tf.io.gfile.GFile(os.path.join(d, "u.txt")).read() == "l1\nl2\nl3"
    tf.gfile.Rename(os.path.join(d, "u.txt"), os.path.join(d, "a/v.txt"))
    assert [sorted(files) for _, _, files in tf.gfile.Walk(d)] == [["t.txt"], ["v.txt"], []]
    tf.io.gfile.rmtree(os.path.join(d, "a"))
    assert tf.io.gfile.listdir(d) == ["t.txt"]


def test_mode_errors(text_file):
    with pytest.raises(tf.errors.PermissionDeniedError, match="^File isn't open for writing$"):
        tf.gfile.GFile(text_file, "r").write("x")
    with pytest.raises(tf.errors.InvalidArgumentError, match="^mode is not 'r' or 'w'"):
        tf.gfile.GFile(text_file, "x")


def test_compat_strings():
    assert tf.compat.as_bytes("é") == b"\xc3\xa9" and tf.compat.as_bytes(bytearray(b"a")) == b"a"
    assert tf.compat.as_text(b"\xc3\xa9") == "é" and tf.compat.as_str(b"a") == "a"
    assert tf.compat.as_str_any(3) == "3" and tf.compat.as_str_any(b"x") == "x"
    with pytest.raises(TypeError, match="Expected binary or unicode string, got 3"):
        tf.compat.as_bytes(3)
    with pytest.raises(TypeError, match="Expected binary or unicode string, got 3"):
        tf.compat.as_text(3)
