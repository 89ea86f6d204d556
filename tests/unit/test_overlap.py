"""Backward/communication overlap (dfcore.distribute.overlap): timeline order, same gradients, hand-built times."""

import numpy as np
import pytest

from dfcore.distribute import all_reduce
from dfcore.distribute.fusion import fusion_groups
from dfcore.distribute.overlap import overlapped_all_reduce
from dfcore.runtime import cost_model

SHAPES = [(256, 256), (256,), (256, 256), (256,), (256, 10), (10,)]


def _grads(n=4, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(n)]


@pytest.mark.parametrize("cap", [0, 4096, 300_000, 64 << 20])
def test_overlap_changes_the_timing_not_the_gradients(cap):
    grads = _grads()
    backward = [200e-6, 20e-6, 200e-6, 20e-6, 50e-6, 10e-6]
    on = overlapped_all_reduce(grads, backward, bucket_cap_bytes=cap, overlap=True)
    off = overlapped_all_reduce(grads, backward, bucket_cap_bytes=cap, overlap=False)
    want = [np.mean([g[j] for g in grads], axis=0) for j in range(len(SHAPES))]
    for outputs in (on.outputs, off.outputs):
        for device_out in outputs:
            for got, expected in zip(device_out, want):
                assert got.shape == expected.shape
                np.testing.assert_allclose(got, expected, atol=1e-6)
    for a, b in zip(on.outputs, off.outputs):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, atol=1e-6)
    assert on.step_time_s <= off.step_time_s + 1e-12
    assert [b.gradients for b in on.buckets] == list(fusion_groups(grads[0], cap))


def test_timeline_order_with_and_without_overlap():
    backward = [300e-6] * len(SHAPES)
    on = overlapped_all_reduce(_grads(), backward, bucket_cap_bytes=0, overlap=True)
    off = overlapped_all_reduce(_grads(), backward, bucket_cap_bytes=0, overlap=False)
    assert on.backward_end_s == pytest.approx(off.backward_end_s) == pytest.approx(6 * 300e-6)
    for result in (on, off):
        for first, second in zip(result.buckets, result.buckets[1:]):
            assert second.start_s >= first.end_s - 1e-15  # one bucket at a time, in order
        for device_tasks in result.backward:  # backward runs gradient after gradient
            assert [j for j, _, _ in device_tasks] == list(range(len(SHAPES)))
            assert all(b[1] >= a[2] - 1e-15 for a, b in zip(device_tasks, device_tasks[1:]))
    for bucket in on.buckets:  # a bucket starts once its last gradient is ready on every device
        ready = max(tasks[bucket.gradients[-1]][2] for tasks in on.backward)
        assert bucket.ready_s == pytest.approx(ready)
        assert bucket.start_s >= ready - 1e-15
    assert on.buckets[0].start_s == pytest.approx(300e-6)  # the first gradient's all-reduce starts at once
    assert on.buckets[0].start_s < on.backward_end_s  # ... while backward goes on
    assert all(b.start_s >= off.backward_end_s - 1e-15 for b in off.buckets)
    assert on.exposed_communication_s < off.exposed_communication_s


def test_without_overlap_the_step_is_backward_plus_the_all_reduces_one_after_another():
    grads = _grads(n=2)
    backward = [100e-6] * len(SHAPES)
    result = overlapped_all_reduce(grads, backward, bucket_cap_bytes=0, overlap=False, forward_s=50e-6,
                                   reduction="sum")
    comm = sum(all_reduce([g[j] for g in grads]).simulated_time_s for j in range(len(SHAPES)))
    assert result.backward_end_s == pytest.approx(50e-6 + 6 * 100e-6)
    assert result.step_time_s == pytest.approx(result.backward_end_s + comm, rel=1e-9)


def test_one_fused_bucket_is_one_all_reduce_with_the_fusion_copies():
    grads = _grads(n=2)
    result = overlapped_all_reduce(grads, [0.0] * len(SHAPES), bucket_cap_bytes=64 << 20, reduction="sum")
    (bucket,) = result.buckets
    assert bucket.gradients == tuple(range(len(SHAPES)))
    assert bucket.nbytes == sum(g.nbytes for g in grads[0])
    copies = [name for name in result.sim.order if "FUSION_BUFFER" in name]
    assert len(copies) == 4  # in and out, on each of the two devices
    # the copies and the additions run on the communication streams, not on the compute lanes
    streams = {r for r in result.sim.busy_s if r.endswith(" comm")}
    assert len(streams) == 2


def test_bad_arguments_raise_clear_errors():
    grads = _grads(n=2)
    with pytest.raises(ValueError, match="one per gradient"):
        overlapped_all_reduce(grads, [1e-6])
    with pytest.raises(ValueError, match="finite and >= 0"):
        overlapped_all_reduce(grads, [-1.0] * len(SHAPES))
    with pytest.raises(ValueError, match="bucket_cap_bytes"):
        overlapped_all_reduce(grads, [0.0] * len(SHAPES), bucket_cap_bytes=-1)
    with pytest.raises(ValueError, match="same, nonzero number"):
        overlapped_all_reduce([grads[0], grads[1][:2]], [0.0] * len(SHAPES))
    with pytest.raises(ValueError, match="at least one device"):
        overlapped_all_reduce([], [])


def test_communication_on_a_slower_link_is_exposed_longer():
    grads = _grads(n=2)
    backward = [50e-6] * len(SHAPES)
    fast = overlapped_all_reduce(grads, backward, bucket_cap_bytes=0)
    devices = ["/job:localhost/replica:0/task:0/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:1"]
    slow_machine = cost_model.MachineProfile({d: cost_model.TESLA_K20M for d in devices},
                                             links={(a, b): cost_model.ETHERNET_10G for a in devices for b in devices
                                                    if a != b})
    slow = overlapped_all_reduce(grads, backward, devices=devices, bucket_cap_bytes=0, machine=slow_machine)
    assert slow.exposed_communication_s > fast.exposed_communication_s


def test_with_no_backward_work_overlap_changes_nothing():
    grads = _grads(n=3)
    on = overlapped_all_reduce(grads, [0.0] * len(SHAPES), bucket_cap_bytes=0, overlap=True, algorithm="tree")
    off = overlapped_all_reduce(grads, [0.0] * len(SHAPES), bucket_cap_bytes=0, overlap=False, algorithm="tree")
    assert on.step_time_s == pytest.approx(off.step_time_s)
    assert [b.start_s for b in on.buckets] == pytest.approx([b.start_s for b in off.buckets])


def test_the_forward_pass_delays_every_backward_task_and_bucket():
    grads = _grads(n=2)
    plain = overlapped_all_reduce(grads, [100e-6] * len(SHAPES), bucket_cap_bytes=0)
    later = overlapped_all_reduce(grads, [100e-6] * len(SHAPES), bucket_cap_bytes=0, forward_s=1e-3)
    assert later.backward[0][0][1] == pytest.approx(1e-3)
    assert later.step_time_s == pytest.approx(plain.step_time_s + 1e-3)
    assert [b.start_s for b in later.buckets] == pytest.approx([b.start_s + 1e-3 for b in plain.buckets])
