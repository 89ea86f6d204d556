"""The executor's plumbing for real devices, with a stand-in DeviceContext on a simulated GPU: its kernels run
inside the device's scope (on a real GPU: the CUDA device made current), constants are made there, and a
traced step's measured times for that device are the kernel timer's (CUDA events on a real GPU)."""

import threading

import pytest

import dfcore as tf
from dfcore.runtime import session as session_lib
from dfcore.runtime.config import step_records
from dfcore.runtime.device_context import DeviceContext, device_context
from dfcore.runtime.device_set import make_device

_GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
_KERNEL_S = 0.25


class _Scope:
    """Records which threads are inside the scope when GPU:0's kernels run."""

    def __init__(self):
        self.inside = threading.local()
        self.entered = 0

    def __call__(self):
        return self

    def __enter__(self):
        self.entered += 1
        self.inside.value = True

    def __exit__(self, *exc):
        self.inside.value = False


class _Timer:
    started = stopped = 0
    scope = None
    outside_scope = 0

    def start(self):
        _Timer.started += 1
        _Timer.outside_scope += not getattr(_Timer.scope.inside, "value", False)

    def stop(self):
        _Timer.stopped += 1

    def elapsed_s(self):
        return _KERNEL_S


@pytest.fixture
def gpu_context(monkeypatch):
    scope = _Scope()
    _Timer.scope, _Timer.started, _Timer.stopped, _Timer.outside_scope = scope, 0, 0, 0
    context = DeviceContext(scope, _Timer)
    monkeypatch.setattr(session_lib, "device_context", lambda d: context if d.name == _GPU0 else None)
    return scope


def test_gpu_kernels_run_in_the_device_scope_and_traced_times_are_the_timers(gpu_context):
    x = tf.placeholder(tf.float32, [2, 2], name="x")
    with tf.device("/gpu:0"):
        a = tf.constant([[1.0, 0.0], [0.0, 1.0]], name="a")
        b = tf.matmul(x, a, name="b")
        b2 = tf.matmul(b, b, name="b2")
    with tf.device("/cpu:0"):
        c = tf.identity(b2, name="c")
    metadata = tf.RunMetadata()
    with tf.Session(config=tf.ConfigProto(device_count={"GPU": 1}, allow_soft_placement=True)) as sess:
        result = sess.run(c, {x: [[1.0, 2.0], [3.0, 4.0]]}, run_metadata=metadata,
                          options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
    assert result.tolist() == [[7.0, 10.0], [15.0, 22.0]]
    assert gpu_context.entered >= 2  # the constants at compile time, then the executor's loop
    assert _Timer.outside_scope == 0, "a GPU kernel ran outside its device's scope"
    stats = {d.device: d for d in step_records(metadata).step_stats.dev_stats}
    gpu_nodes = {n.node_name: n for n in stats[_GPU0].node_stats}
    assert gpu_nodes["b2"].op_end_rel_micros == gpu_nodes["b2"].all_end_rel_micros == int(_KERNEL_S * 1e6)
    # every synchronous node is timed; a _Recv (asynchronous: it waits, queues no kernel) is not
    assert _Timer.started == _Timer.stopped == sum(n.op_type != "_Recv" for n in gpu_nodes.values())
    cpu = next(d for name, d in stats.items() if name.endswith("CPU:0"))
    assert all(n.op_end_rel_micros < _KERNEL_S * 1e6 for n in cpu.node_stats)


def test_simulated_devices_and_cpus_have_no_context():
    assert device_context(make_device("localhost", 0, 0, "GPU", 0)) is None
    assert device_context(make_device("localhost", 0, 0, "CPU", 0)) is None
