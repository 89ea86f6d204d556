"""The array-backend seam (dfcore/backends): names, transfers, the devices' backends
(``DFCORE_SIMULATED_GPU_BACKEND``), and TF's rules for a kernel a device's backend lacks (placer, compile)."""

import subprocess
import sys

import numpy as np
import pytest
from _requirements import require_module

import dfcore as tf
from dfcore import backends
from dfcore.runtime.device_set import DeviceSet
from dfcore.runtime.partition_compiler import instantiate_kernel

require_module("array_api_strict")
STRICT = "array_api_strict"


def test_registered_backends_and_an_unknown_name():
    assert {"numpy", STRICT, "cupy"} <= set(backends.names())
    assert backends.get("numpy").xp is np  # numpy >= 2: no wrapper between the kernels and numpy
    with pytest.raises(ValueError, match="Unknown array backend 'jax'"):
        backends.get("jax")


def test_a_cpu_run_never_imports_cupy():
    code = ("import sys, numpy as np, dfcore as tf\n"
            "with tf.Session() as s: s.run(tf.matmul(tf.ones([2, 2]), tf.ones([2, 2])))\n"
            "print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_transfer_round_trip_and_values_that_are_not_arrays():
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    strict = backends.transfer(value, "numpy", STRICT)
    assert backends.get(STRICT).is_native(strict) and not backends.get("numpy").is_native(strict)
    assert backends.backend_of(strict).name == STRICT
    back = backends.to_numpy(strict)
    assert type(back) is np.ndarray and back.dtype == np.float32
    np.testing.assert_array_equal(back, value)
    assert backends.transfer(value, None, "numpy") is value  # already there: no copy
    marker = object()
    assert backends.transfer(marker, None, STRICT) is marker
    strings = np.array([b"a", b"b"], dtype=object)
    assert backends.transfer(strings, None, STRICT) is strings  # the standard has no string dtype


def test_shapes_and_byte_counts_of_any_backend():
    strict = backends.transfer(np.ones((3, 5), np.float64), None, STRICT)
    assert backends.shape_of(strict) == (3, 5)
    assert backends.itemsize_of(strict) == 8
    assert backends.nbytes_of(strict) == 120 == backends.nbytes_of(np.ones((3, 5)))


def test_devices_carry_a_backend_chosen_by_the_environment(monkeypatch):
    monkeypatch.delenv(backends.SIMULATED_GPU_BACKEND_ENV, raising=False)
    devices = DeviceSet.from_config(tf.ConfigProto(device_count={"GPU": 2}))
    assert [d.backend for d in devices] == ["numpy"] * 3
    monkeypatch.setenv(backends.SIMULATED_GPU_BACKEND_ENV, STRICT)
    devices = DeviceSet.from_config(tf.ConfigProto(device_count={"GPU": 2}))
    assert [(d.device_type, d.backend) for d in devices] == [("CPU", "numpy"), ("GPU", STRICT), ("GPU", STRICT)]
    assert devices.backends_of_type("GPU") == frozenset({STRICT})
    monkeypatch.setenv(backends.SIMULATED_GPU_BACKEND_ENV, "nonesuch")
    with pytest.raises(ValueError, match="DFCORE_SIMULATED_GPU_BACKEND='nonesuch' names no array backend"):
        DeviceSet.from_config(tf.ConfigProto(device_count={"GPU": 1}))


def _gather_graph(device):
    graph = tf.Graph()
    with graph.as_default():
        params = tf.constant(np.arange(6.0, dtype=np.float32))
        with tf.device(device):
            out = tf.gather(params, [4, 1])  # GatherV2: a numpy-only kernel
    return graph, out


def _placed_on(sess, graph, out, config):
    metadata = tf.RunMetadata()
    value = sess.run(out, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
    np.testing.assert_array_equal(value, [4.0, 1.0])
    return [d.device for d in metadata.step_stats.dev_stats for n in d.node_stats if n.node_name == out.op.name]


@pytest.mark.parametrize("backend,soft,where", [("numpy", False, "GPU:0"), (STRICT, True, "CPU:0")])
def test_a_numpy_only_kernel_stays_on_numpy_devices(backend, soft, where, monkeypatch):
    monkeypatch.setenv(backends.SIMULATED_GPU_BACKEND_ENV, backend)
    graph, out = _gather_graph("/device:GPU:0")
    config = tf.ConfigProto(device_count={"GPU": 1}, allow_soft_placement=soft)
    with tf.Session(graph=graph, config=config) as sess:
        assert [d[-5:] for d in _placed_on(sess, graph, out, config)] == [where]


def test_an_unrequested_numpy_only_op_goes_to_the_cpu(monkeypatch):
    monkeypatch.setenv(backends.SIMULATED_GPU_BACKEND_ENV, STRICT)
    graph, out = _gather_graph(None)
    config = tf.ConfigProto(device_count={"GPU": 1})
    with tf.Session(graph=graph, config=config) as sess:
        assert [d[-5:] for d in _placed_on(sess, graph, out, config)] == ["CPU:0"]


def test_a_numpy_only_kernel_requested_on_a_strict_gpu_is_tfs_error(monkeypatch):
    monkeypatch.setenv(backends.SIMULATED_GPU_BACKEND_ENV, STRICT)
    graph, out = _gather_graph("/device:GPU:0")
    with tf.Session(graph=graph, config=tf.ConfigProto(device_count={"GPU": 1})) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(out)
    assert ("Could not satisfy explicit device specification '/device:GPU:0' because no supported kernel for GPU "
            "devices is available.") in str(info.value)
    assert "device='CPU'" in str(info.value) and "device='GPU'" not in str(info.value)


def test_a_numpy_only_kernel_has_no_instance_on_another_backend():
    graph, out = _gather_graph("/device:GPU:0")
    with pytest.raises(tf.errors.NotFoundError, match=r"No registered 'GatherV2' OpKernel for 'GPU' devices compatible "
                       r"with node \{\{node GatherV2\}\} \(its kernel is numpy-only; this device's array backend is "
                       r"array_api_strict\)"):
        instantiate_kernel(out.op, out.op.type, out.op.name, backend=STRICT)
    compute, _, _ = instantiate_kernel(out.op, out.op.type, out.op.name)  # numpy: found
    assert callable(compute)
