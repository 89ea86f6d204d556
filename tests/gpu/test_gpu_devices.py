"""Real GPUs as dfcore devices, and the cupy backend's copies and timing (checked against cupy and numpy)."""

import numpy as np

import dfcore as tf
from dfcore.runtime import placer
from dfcore.runtime.device_set import DeviceSet

_PREFIX = "/job:localhost/replica:0/task:0/device:"


def test_default_devices_are_the_real_gpus_with_the_drivers_names(gpus):
    import cupy

    devices = DeviceSet.from_config(tf.ConfigProto())
    real = [d for d in devices if d.device_type == "GPU"]
    assert len(real) == cupy.cuda.runtime.getDeviceCount() == len(gpus)
    for device in real:
        props = cupy.cuda.runtime.getDeviceProperties(device.platform_device_id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        assert device.profile_name == name and not device.simulated
        assert device.physical_device_desc.startswith(f"device: {device.platform_device_id}, name: {name}, "
                                                      "pci bus id: ")
        capability = cupy.cuda.Device(device.platform_device_id).compute_capability  # "90"
        assert device.physical_device_desc.endswith(f"compute capability: {capability[:-1]}.{capability[-1]}")
    lines = placer.placement_log_lines(devices, [])
    print("\n".join(lines))
    assert lines[0] == "Device mapping:" and len(lines) == 1 + len(real)


def test_virtual_devices_give_four_logical_gpus_on_gpu_0(gpus):
    config = tf.ConfigProto()
    config.gpu_options.visible_device_list = "0"
    config.gpu_options.experimental.virtual_devices.add().memory_limit_mb.extend([1024] * 4)
    logical = [d for d in DeviceSet.from_config(config) if d.device_type == "GPU"]
    assert [(d.index, d.platform_device_id) for d in logical] == [(i, 0) for i in range(4)]


def test_host_device_round_trip_and_copies(gpus):
    import cupy

    from dfcore.backends.cupy_backend import BACKEND, KernelTimer, enable_peer_access

    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    with BACKEND.device_scope(0):
        on_gpu = BACKEND.from_host(host)
    assert isinstance(on_gpu, cupy.ndarray) and on_gpu.device.id == 0 and BACKEND.is_native(on_gpu)
    np.testing.assert_array_equal(BACKEND.to_host(on_gpu), host)
    copy = BACKEND.copy_to_device(on_gpu, 0)
    assert copy.data.ptr != on_gpu.data.ptr
    np.testing.assert_array_equal(copy.get(), host)
    np.testing.assert_array_equal(BACKEND.to_host(BACKEND.matmul(on_gpu, on_gpu, transpose_b=True)), host @ host.T)
    if len(gpus) > 1:
        print("peer access 1 -> 0:", enable_peer_access(1, 0))
        other = BACKEND.copy_to_device(on_gpu, 1)
        assert other.device.id == 1
        np.testing.assert_array_equal(other.get(), host)
    with BACKEND.device_scope(0):
        a = cupy.ones((2048, 2048), cupy.float32)
        timer = KernelTimer()
        timer.start()
        a @ a
        timer.stop()
        elapsed = timer.elapsed_s()
    print(f"2048^3 matmul: {elapsed * 1e6:.1f} us by CUDA events")
    assert 0 < elapsed < 1.0
