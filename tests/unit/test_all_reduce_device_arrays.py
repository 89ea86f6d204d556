"""The runtime all-reduce on device arrays, with array_api_strict standing in for cupy: its devices refuse to
mix arrays of two devices, so every message must be copied onto the receiver's device; the results, the
rendezvous traffic and the trace must be those of the numpy path."""

import array_api_strict as xp
import numpy as np
import pytest

from dfcore import errors
from dfcore.distribute import all_reduce
from dfcore.distribute.schedules import ALGORITHMS

_DEVICES = [xp.Device("CPU_DEVICE"), xp.Device("device1"), xp.Device("device2")]


def _inputs(n, count, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(-8, 8, size=count).astype(np.float32) for _ in range(n)]


def _host(array):
    return np.asarray(array.to_device(_DEVICES[0]))


def _on_devices(arrays, shape=None):
    """Rank r's array on strict device r mod 3 (ranks 0 and 3 share one, as logical GPUs share a board)."""
    return [xp.asarray(a if shape is None else a.reshape(shape), device=_DEVICES[r % 3])
            for r, a in enumerate(arrays)]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("reduction", ["sum", "mean", "max"])
def test_device_arrays_reduce_as_numpy_and_stay_on_their_devices(algorithm, reduction):
    host = _inputs(4, 23)
    result = all_reduce(_on_devices(host, (23,)), algorithm=algorithm, reduction=reduction, trace=False)
    reference = all_reduce(host, algorithm=algorithm, reduction=reduction, trace=False)
    for r, (out, ref) in enumerate(zip(result.outputs, reference.outputs)):
        assert out.device == _DEVICES[r % 3]
        np.testing.assert_array_equal(_host(out), ref)
    expected = {"sum": np.sum, "mean": np.mean, "max": np.max}[reduction](np.stack(host), axis=0)
    np.testing.assert_allclose(_host(result.outputs[0]), expected, rtol=1e-6)


def test_ring_moves_the_same_messages_and_traces_the_same_values_as_numpy():
    host = _inputs(4, 10, seed=3)
    ours = all_reduce(_on_devices(host), algorithm="ring", num_subchunks=2)
    ref = all_reduce(host, algorithm="ring", num_subchunks=2)
    assert [(t.key, t.nbytes, t.src_device, t.dst_device) for t in ours.transfers] == [
        (t.key, t.nbytes, t.src_device, t.dst_device) for t in ref.transfers]
    assert ours.simulated_time_s == ref.simulated_time_s
    ours_msgs = [m for r in ours.trace.rounds for m in r.transfers]
    ref_msgs = [m for r in ref.trace.rounds for m in r.transfers]
    assert [(m.chunk_id, m.element_range, m.nbytes, m.op, m.key) for m in ours_msgs] == [
        (m.chunk_id, m.element_range, m.nbytes, m.op, m.key) for m in ref_msgs]
    for a, b in zip(ours_msgs, ref_msgs):
        assert isinstance(a.value_sent, np.ndarray) and isinstance(a.partial_sum_after, np.ndarray)
        np.testing.assert_array_equal(a.value_sent, b.value_sent)
        np.testing.assert_array_equal(a.partial_sum_after, b.partial_sum_after)
    for a, b in zip(ours.trace.inputs, ref.trace.inputs):
        np.testing.assert_array_equal(a, b)


def test_in_place_writes_into_the_device_arrays():
    host = _inputs(3, 7, seed=5)
    expected = np.sum(np.stack(host), axis=0)
    values = _on_devices(host, (7, 1))
    result = all_reduce(values, in_place=True, trace=False)
    assert all(out is value for out, value in zip(result.outputs, values))
    for value in values:
        np.testing.assert_array_equal(_host(value)[:, 0], expected)


def test_device_arrays_are_checked_as_numpy_ones():
    good = _on_devices(_inputs(2, 4))
    with pytest.raises(TypeError, match="float16, float32 and float64"):
        all_reduce([xp.asarray([1, 2]), xp.asarray([3, 4])])
    with pytest.raises(TypeError, match="one dtype"):
        all_reduce([good[0], xp.astype(good[1], xp.float64)])
    with pytest.raises(ValueError, match="one shape"):
        all_reduce([good[0], good[1][:3]])
    with pytest.raises(TypeError, match="arrays of one library"):
        all_reduce([good[0], np.zeros(4, np.float32)])
    bad = [good[0], xp.asarray([1.0, float("nan"), 0.0, 0.0], dtype=xp.float32, device=_DEVICES[1])]
    with pytest.raises(errors.InvalidArgumentError, match=r"device:GPU:1 : Tensor had NaN values"):
        all_reduce(bad, check_numerics=True)


def test_the_graph_collective_runs_on_the_devices_arrays(monkeypatch):
    # simulated GPUs holding array_api_strict arrays: CollectiveAllReduce hands the schedule their own arrays
    import dfcore as tf
    from dfcore import backends
    from dfcore.distribute import all_reduce_arrays, collective_all_reduce

    monkeypatch.setenv(backends.SIMULATED_GPU_BACKEND_ENV, "array_api_strict")
    runs = []
    original = all_reduce_arrays.run_device_schedule
    monkeypatch.setattr(all_reduce_arrays, "run_device_schedule",
                        lambda *args, **kwargs: runs.append(args[0].algorithm) or original(*args, **kwargs))
    host = _inputs(3, 9, seed=7)
    tensors = []
    for r, value in enumerate(host):
        with tf.device(f"/gpu:{r}"):
            tensors.append(tf.identity(tf.constant(value)))
    outs = collective_all_reduce(tensors, algorithm="ring")
    with tf.Session(config=tf.ConfigProto(device_count={"GPU": 3}, allow_soft_placement=True)) as sess:
        results = sess.run(outs)
    assert runs == ["ring"]
    for result in results:
        np.testing.assert_array_equal(result, np.sum(np.stack(host), axis=0))
