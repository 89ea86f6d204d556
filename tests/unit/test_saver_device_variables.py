"""Variables live in their device's memory (array_api_strict standing in for a GPU library), and the Saver
moves them to the host: the checkpoint holds numpy values equal to the device's, and a restore writes
device arrays back."""

import array_api_strict as xp
import numpy as np
import pytest

import dfcore as tf
from dfcore import backends
from dfcore.train.checkpoint_format import CheckpointReader

_GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


@pytest.fixture(autouse=True)
def _strict_gpus(monkeypatch):
    monkeypatch.setenv(backends.SIMULATED_GPU_BACKEND_ENV, "array_api_strict")


def _model():
    with tf.device("/gpu:0"):
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
        b = tf.Variable(np.ones(3, np.float32), name="b")
        step = tf.group(tf.assign_add(w, 2 * tf.ones([2, 3])), tf.assign(b, b * 3.0))
    return w, b, step, tf.train.Saver()


def test_variables_live_on_the_device_and_the_saver_moves_them_to_the_host(tmp_path):
    w, b, step, saver = _model()
    config = tf.ConfigProto(device_count={"GPU": 1}, allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        assert sess._device_set.device(_GPU0).backend == "array_api_strict"
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        stored = sess._variables.value("w")
        assert isinstance(stored, type(xp.asarray(0))), f"w is stored as {type(stored)}, not on the device"
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
    with CheckpointReader(path) as reader:
        w_saved, b_saved = reader.get_tensor("w"), reader.get_tensor("b")
    assert type(w_saved) is np.ndarray and type(b_saved) is np.ndarray
    np.testing.assert_array_equal(w_saved, np.arange(6, dtype=np.float32).reshape(2, 3) + 2)
    np.testing.assert_array_equal(b_saved, np.full(3, 3.0, np.float32))
    with tf.Session(config=config) as sess:
        saver.restore(sess, path)
        assert isinstance(sess._variables.value("b"), type(xp.asarray(0)))
        np.testing.assert_array_equal(sess.run(w), w_saved)
