"""Real GPUs in the DeviceSet (TF's GPU device factory rules) with the detection replaced by a fake host,
and the CPU-only guarantee: importing dfcore or running a CPU session never imports cupy."""

import os
import subprocess
import sys

import pytest

import dfcore as tf
from dfcore import errors
from dfcore.runtime import device_set, placer, real_gpus
from dfcore.runtime.device_set import DeviceSet

_PREFIX = "/job:localhost/replica:0/task:0/device:"
_H200 = real_gpus.PhysicalGpu(0, "NVIDIA H200", "0000:19:00.0", "9.0", 150 * 10**9)
_A100 = real_gpus.PhysicalGpu(1, "NVIDIA A100-SXM4-80GB", "0000:3b:00.0", "8.0", 80 * 10**9)


@pytest.fixture
def host(monkeypatch):
    """A host whose CUDA runtime shows the boards given to the returned setter (their tensors numpy arrays:
    no cupy here)."""
    def show(*gpus):
        monkeypatch.setattr(real_gpus, "detect_gpus", lambda: tuple(gpus))
        monkeypatch.setattr(device_set, "REAL_GPU_BACKEND", "numpy")
    return show


def test_real_gpus_are_the_default_devices_with_the_drivers_names(host):
    host(_H200, _A100)
    devices = DeviceSet.from_config(tf.ConfigProto())
    assert devices.names() == [_PREFIX + n for n in ("CPU:0", "GPU:0", "GPU:1")]
    gpu0, gpu1 = devices.device(_PREFIX + "GPU:0"), devices.device(_PREFIX + "GPU:1")
    assert (gpu0.profile_name, gpu0.simulated, gpu0.platform_device_id) == ("NVIDIA H200", False, 0)
    assert gpu0.backend == device_set.REAL_GPU_BACKEND  # "cupy" on a real host; the fake boards hold numpy
    # TF's GetShortDeviceDescription: the board's ordinal, name, PCI bus id and compute capability
    assert gpu0.physical_device_desc == ("device: 0, name: NVIDIA H200, pci bus id: 0000:19:00.0, "
                                         "compute capability: 9.0")
    assert gpu1.physical_device_desc == ("device: 1, name: NVIDIA A100-SXM4-80GB, pci bus id: 0000:3b:00.0, "
                                         "compute capability: 8.0")
    assert placer.placement_log_lines(devices, [])[:3] == [
        "Device mapping:", _PREFIX + "GPU:0 -> " + gpu0.physical_device_desc,
        _PREFIX + "GPU:1 -> " + gpu1.physical_device_desc]


def test_device_count_picks_the_first_k_real_gpus_and_caps_at_the_real_ones_as_tf(host):
    host(_H200, _A100)
    one = DeviceSet.from_config(tf.ConfigProto(device_count={"GPU": 1}))
    assert [d.profile_name for d in one if d.device_type == "GPU"] == ["NVIDIA H200"]
    many = DeviceSet.from_config(tf.ConfigProto(device_count={"GPU": 4}))
    assert [d.index for d in many if d.device_type == "GPU"] == [0, 1]
    assert DeviceSet.from_config(tf.ConfigProto(device_count={"GPU": 0})).names() == [_PREFIX + "CPU:0"]


def test_a_gpu_beyond_the_real_ones_fails_in_the_placer_in_tfs_words(host):
    host(_H200)
    with tf.device("/device:GPU:3"):
        tf.constant(1.0, name="c")
    with tf.Session(config=tf.ConfigProto(device_count={"GPU": 4})) as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"Cannot assign a device for operation 'c': Operation "
                                                              r"was explicitly assigned to /device:GPU:3 but available "
                                                              r"devices are \[ .*CPU:0, .*GPU:0 \]"):
            sess.run("c:0")


def test_virtual_devices_carve_logical_gpus_out_of_one_board(host):
    host(_H200)
    config = tf.ConfigProto()
    config.gpu_options.experimental.virtual_devices.add().memory_limit_mb.extend([1024, 1024, 2048, 512])
    devices = DeviceSet.from_config(config)
    gpus = [d for d in devices if d.device_type == "GPU"]
    assert [d.index for d in gpus] == [0, 1, 2, 3]
    assert {d.platform_device_id for d in gpus} == {0}
    assert [d.memory_limit_bytes for d in gpus] == [1 << 30, 1 << 30, 2 << 30, 512 << 20]
    # every logical GPU names the board it runs on, as TF's description does
    assert {d.physical_device_desc for d in gpus} == {_H200.desc}
    assert len({d.incarnation for d in gpus}) == 4


def test_num_virtual_devices_per_gpu_splits_each_board_evenly(host):
    host(_H200, _A100)
    config = tf.ConfigProto()
    config.gpu_options.experimental.num_virtual_devices_per_gpu = 2
    gpus = [d for d in DeviceSet.from_config(config) if d.device_type == "GPU"]
    assert [(d.index, d.platform_device_id, d.memory_limit_bytes) for d in gpus] == [
        (0, 0, _H200.memory_bytes // 2), (1, 0, _H200.memory_bytes // 2),
        (2, 1, _A100.memory_bytes // 2), (3, 1, _A100.memory_bytes // 2)]


def test_visible_device_list_picks_and_orders_the_boards(host):
    host(_H200, _A100)
    config = tf.ConfigProto()
    config.gpu_options.visible_device_list = "1,0"
    gpus = [d for d in DeviceSet.from_config(config) if d.device_type == "GPU"]
    assert [(d.index, d.profile_name) for d in gpus] == [(0, _A100.name), (1, _H200.name)]
    config.gpu_options.visible_device_list = "2"
    with pytest.raises(errors.InvalidArgumentError,
                       match="'visible_device_list' listed an invalid Device id '2' but visible device count is 2"):
        DeviceSet.from_config(config)
    config.gpu_options.visible_device_list = "x"
    with pytest.raises(errors.InvalidArgumentError, match="Could not parse entry in 'visible_device_list'"):
        DeviceSet.from_config(config)


def test_virtual_devices_need_one_entry_per_visible_gpu(host):
    host(_H200, _A100)
    config = tf.ConfigProto()
    config.gpu_options.experimental.virtual_devices.add().memory_limit_mb.append(100)
    with pytest.raises(errors.InvalidArgumentError, match=r"virtual_devices \(1\) must be 0 or the number of "
                                                          r"visible GPUs \(2\)"):
        DeviceSet.from_config(config)


def test_real_gpus_hold_cupy_arrays():
    assert device_set.REAL_GPU_BACKEND == "cupy"


def test_without_real_gpus_the_gpus_are_simulated(host):
    host()
    devices = DeviceSet.from_config(tf.ConfigProto(device_count={"GPU": 2}))
    assert [(d.profile_name, d.simulated, d.platform_device_id) for d in devices if d.device_type == "GPU"] == [
        ("Tesla K20m", True, None)] * 2


def test_simulated_gpus_switch_ignores_real_ones(monkeypatch):
    monkeypatch.setenv(real_gpus.SIMULATED_GPUS_ENV, "1")
    monkeypatch.setattr(real_gpus, "_probe", lambda: pytest.fail("probed the GPUs though simulated ones were asked"))
    assert real_gpus.detect_gpus() == ()
    monkeypatch.setenv(real_gpus.SIMULATED_GPUS_ENV, "0")
    assert not real_gpus.simulated_gpus_requested()


def test_cpu_runs_never_import_cupy(tmp_path):
    # a fresh interpreter in which "cupy" is importable (a stand-in that records being imported): importing
    # dfcore and running a CPU-only session must not import it (real-GPU detection is not even asked)
    fake = tmp_path / "site" / "cupy"
    fake.mkdir(parents=True)
    marker = tmp_path / "cupy-was-imported"
    (fake / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError('stand-in')\n")
    program = ("import sys, dfcore as tf\n"
               "c = tf.constant(2.0) * 3.0\n"
               "with tf.Session(config=tf.ConfigProto(device_count={'GPU': 0})) as s: assert s.run(c) == 6.0\n"
               "assert 'cupy' not in sys.modules, 'cupy was imported'\n")
    env = dict(os.environ)
    env.pop(real_gpus.SIMULATED_GPUS_ENV, None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(fake.parent), env.get("PYTHONPATH", "")) if p)
    result = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert not marker.exists(), "a CPU run imported cupy"
    # the stand-in is found: a session that asks for GPUs does probe it (and, as it fails, simulates them)
    subprocess.run([sys.executable, "-c", "import dfcore as tf; tf.Session()"], env=env, capture_output=True,
                   timeout=120, check=True)
    assert marker.exists(), "the stand-in cupy was never found: this test could not fail"
