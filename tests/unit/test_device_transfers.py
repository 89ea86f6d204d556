"""Tensors crossing between devices whose backend has devices of its own (cupy on real GPUs): the sender's copy
is made on its device (``copy_on_device``) and never goes through the host, and the ``_Recv`` places what
arrives on the receiving device (``receiver()``, captured in the receiver's scope). A stand-in backend on
array_api_strict records the calls; feeds, fetches and a CPU consumer still cross through the host."""

import numpy as np
import pytest

import dfcore as tf
from dfcore import backends
from dfcore.backends.strict_backend import StrictBackend


class _DeviceBackend(StrictBackend):
    name = "strict_devices"

    def __init__(self):
        self.copied_on_device = 0
        self.placed = []

    def copy_on_device(self, value):
        self.copied_on_device += 1
        return self.xp.asarray(value, copy=True)

    def receiver(self):
        def place(value):
            self.placed.append(type(value).__module__.split(".")[0])
            return value if self.is_native(value) else self.from_host(value)
        return place


BACKEND = _DeviceBackend()


@pytest.fixture
def device_backend(monkeypatch):
    backends.register(BACKEND.name, __name__)
    # this very object, looked up first: its arrays are array_api_strict's, which a cupy array is not
    loaded = dict(backends._LOADED)
    backends._LOADED.clear()
    backends._LOADED.update({BACKEND.name: BACKEND, **loaded})
    monkeypatch.setenv(backends.SIMULATED_GPU_BACKEND_ENV, BACKEND.name)
    BACKEND.copied_on_device, BACKEND.placed = 0, []
    yield BACKEND
    backends._MODULES.pop(BACKEND.name, None)
    backends._LOADED.pop(BACKEND.name, None)


def test_gpu_to_gpu_tensors_are_copied_on_the_device_and_placed_by_the_receiver(device_backend):
    x = tf.placeholder(tf.float32, [2, 2], name="x")
    with tf.device("/gpu:0"):
        a = tf.matmul(x, x, name="a")
    with tf.device("/gpu:1"):
        b = tf.add(a, 1.0, name="b")
    with tf.device("/cpu:0"):
        c = tf.identity(b, name="c")
    config = tf.ConfigProto(device_count={"GPU": 2}, allow_soft_placement=True)
    feed = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    with tf.Session(config=config) as sess:
        assert sess._device_set.device("/job:localhost/replica:0/task:0/device:GPU:1").backend == BACKEND.name
        out = sess.run(c, {x: feed})
    np.testing.assert_array_equal(out, feed @ feed + 1)
    assert type(out) is np.ndarray
    # GPU:0 -> GPU:1 (a) and GPU:1 -> CPU:0 (b) leave a device array: copied on the sender's device
    assert device_backend.copied_on_device == 2
    # GPU:0 receives the fed x from the host (numpy), GPU:1 receives a from GPU:0 (a device array)
    assert sorted(device_backend.placed) == ["array_api_strict", "numpy"]
