"""Collectives on real GPUs: dfcore's schedules on cupy arrays against numpy's reduction and NCCL's result,
and the nccl-tests-style bench and lesson 05's table end to end (small sizes)."""

import numpy as np
import pytest

from dfcore.distribute import all_reduce
from dfcore.distribute.nccl import nccl_all_reduce, nccl_module
from dfcore.distribute.schedules import ALGORITHMS


def _ranks(gpus):
    """One rank per GPU on several GPUs, else four logical GPUs on GPU 0."""
    return [g.platform_id for g in gpus] if len(gpus) > 1 else [0, 0, 0, 0]


def _inputs(ids, count=1000, seed=0):
    import cupy

    rng = np.random.default_rng(seed)
    host = [rng.integers(-8, 8, size=count).astype(np.float32) for _ in ids]
    on_gpu = []
    for pid, h in zip(ids, host):
        with cupy.cuda.Device(pid):
            on_gpu.append(cupy.asarray(h))
    return host, on_gpu


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("reduction", ["sum", "mean", "max"])
def test_schedules_on_cupy_arrays_match_numpy(gpus, algorithm, reduction):
    ids = _ranks(gpus)
    host, values = _inputs(ids, 1001)
    result = all_reduce(values, algorithm=algorithm, reduction=reduction, num_subchunks=2)
    reference = all_reduce(host, algorithm=algorithm, reduction=reduction, num_subchunks=2)
    for pid, out, ref in zip(ids, result.outputs, reference.outputs):
        assert out.device.id == pid
        np.testing.assert_array_equal(out.get(), ref)
    assert [t.key for t in result.transfers] == [t.key for t in reference.transfers]
    ours = [m for r in result.trace.rounds for m in r.transfers]
    theirs = [m for r in reference.trace.rounds for m in r.transfers]
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.value_sent, b.value_sent)
        np.testing.assert_array_equal(a.partial_sum_after, b.partial_sum_after)


def test_nccl_is_the_reference_where_there_are_gpus_to_reduce_across(gpus):
    if nccl_module() is None:
        pytest.skip("cupy.cuda.nccl is not available (no libnccl)")
    import cupy

    host, values = _inputs([0], 64)
    (single,) = nccl_all_reduce(values)  # one rank: NCCL's all-reduce is a copy
    np.testing.assert_array_equal(single.get(), host[0])
    with pytest.raises(ValueError, match="one rank per GPU"):
        nccl_all_reduce([values[0], cupy.array(values[0])])
    if len(gpus) < 2:
        print("one GPU: NCCL has nothing to reduce across (one rank per GPU)")
        return
    ids = [g.platform_id for g in gpus]
    host, values = _inputs(ids, 4097, seed=1)
    ours = all_reduce(values, trace=False).outputs
    theirs = nccl_all_reduce(values)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.get(), b.get())
    np.testing.assert_array_equal(theirs[0].get(), np.sum(np.stack(host), axis=0))


def test_bench_prints_both_rows_with_no_wrong_elements(gpus):
    from dfcore.bench.gpu_all_reduce import copy_bandwidth_GBps, gpu_busbw_table, run_gpu

    lines = []
    average = run_gpu(1 << 12, 1 << 20, 16, iters=3, warmup=1, out=lines.append)
    print("\n".join(lines))
    rows = [line.split() for line in lines if line and not line.startswith("#")]
    assert len(rows) == 3 and average > 0
    assert all(int(row[8]) == 0 for row in rows), "dfcore's #wrong"
    assert copy_bandwidth_GBps(1 << 24) > 1.0
    table = []
    result = gpu_busbw_table(sizes=("64K", "1M"), iters=2, out=table.append)
    print("\n".join(table))
    assert [r["nbytes"] for r in result] == [1 << 16, 1 << 20]
    assert all(r["real_busbw_GBps"] > 0 and r["simulated_busbw_GBps"] > 0 for r in result)


def test_graph_collective_on_logical_gpus_of_one_board(gpus):
    import dfcore as tf
    from dfcore.distribute import collective_all_reduce

    config = tf.ConfigProto(allow_soft_placement=True)
    config.gpu_options.visible_device_list = "0"
    config.gpu_options.experimental.virtual_devices.add().memory_limit_mb.extend([1024] * 4)
    host = [np.random.default_rng(r).integers(-8, 8, size=(33, 5)).astype(np.float32) for r in range(4)]
    tensors = []
    for r, value in enumerate(host):
        with tf.device(f"/gpu:{r}"):
            tensors.append(tf.identity(tf.constant(value)))
    outs = collective_all_reduce(tensors, algorithm="ring", reduction="sum")
    with tf.Session(config=config) as sess:
        results = sess.run(outs)
    for result in results:
        np.testing.assert_array_equal(result, np.sum(np.stack(host), axis=0))
