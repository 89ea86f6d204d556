"""An in-graph all-reduce on the step's simulated clock: its messages take link time (never below the ring
bound), wait for every rank's input, the op itself costs nothing, and timelines draw its messages."""

import numpy as np
import pytest

import dfcore as tf
from dfcore.distribute import collective_all_reduce
from dfcore.runtime import cost_model as cm
from dfcore.runtime.config import step_records
from widgets import _timeline

N = 2_000_000  # float32 elements per rank: 8 MB


def _traced_step(tensors_on_gpus, feeds=None, num_gpus=2, **kwargs):
    outs = collective_all_reduce(tensors_on_gpus, **kwargs)
    with tf.Session(config=tf.ConfigProto(device_count={"GPU": num_gpus})) as sess:
        md = tf.RunMetadata()
        values = sess.run(outs, feed_dict=feeds, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                          run_metadata=md)
        machine = sess._resources.machine
    stats = step_records(md).step_stats
    nodes = {ns.node_name: (dev.device, ns) for dev in stats.dev_stats for ns in dev.node_stats}
    return values, stats, nodes, machine


@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_all_reduce_takes_at_least_the_ring_bound_on_the_step_clock(n):
    with tf.Graph().as_default():
        xs = []
        for i in range(n):
            with tf.device(f"/gpu:{i}"):
                xs.append(tf.constant(np.full(N, i + 1.0, np.float32)))
        values, stats, nodes, _ = _traced_step(xs, num_gpus=n)
    np.testing.assert_array_equal(values[0], np.full(N, n * (n + 1) / 2, np.float32))
    bound_us = cm.ring_allreduce_time_s(N * 4, n, cm.PCIE_2_X16) * 1e6  # 2(N-1)/N·K/B + 2(N-1)α on a K20m's bus
    ops = [ns for _, ns in nodes.values() if ns.op_type == "CollectiveAllReduce"]
    assert len(ops) == n and all(ns.sim_end_micros >= bound_us - 1 for ns in ops)
    # the op costs nothing of its own: it ends when the collective's last message (and reduction) does
    messages = [ns for name, (_, ns) in nodes.items() if name.startswith("collective/") and ns.op_type == "_Recv"]
    assert len(messages) == 2 * (n - 1) * n  # ring: 2(N-1) steps, one message per rank each
    assert all(ns.sim_start_micros == ns.sim_end_micros for ns in ops)
    assert max(ns.sim_end_micros for ns in messages) <= min(ns.sim_end_micros for ns in ops)


def test_every_first_message_waits_for_every_ranks_input():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, (1024, 1024))
        with tf.device("/gpu:0"):
            slow = tf.reshape(tf.matmul(a, a), (-1,))  # 2·1024³ flops on a K20m: ~0.6 ms
        with tf.device("/gpu:1"):
            fast = tf.reshape(a, (-1,)) * 2.0
        ones = np.ones((1024, 1024), np.float32)
        values, _, nodes, _ = _traced_step([slow, fast], {a: ones})
    np.testing.assert_allclose(values[1], np.full(1024 * 1024, 1026.0, np.float32))
    matmul_end = max(ns.sim_end_micros for _, ns in nodes.values() if ns.op_type == "MatMul")
    firsts = [ns for name, (_, ns) in nodes.items()
              if name.startswith("collective/") and ("message000000/" in name or "message000001/" in name)]
    assert firsts and all(ns.sim_start_micros >= matmul_end for ns in firsts)


def test_the_session_machine_is_the_collectives_and_timelines_draw_its_messages():
    with tf.Graph().as_default():
        xs = []
        for i in range(2):
            with tf.device(f"/gpu:{i}"):
                xs.append(tf.constant(np.ones(N, np.float32)))
        _, stats, nodes, machine = _traced_step(xs)
    assert sorted(machine.devices) == sorted({dev.device for dev in stats.dev_stats})
    spans = _timeline.step_spans(stats)
    ring = [t for t in spans.transfers if t.tensor_name.startswith("collective/")]
    assert len(ring) == 4 and {t.nbytes for t in ring} == {N * 4 // 2}
    # each message is one half of the tensor over PCIe 2.0: 10 µs + 4 MB / 6 GB/s
    one_us = cm.transfer_time_s(N * 4 // 2, cm.PCIE_2_X16) * 1e6
    assert all(t.end_us - t.start_us == pytest.approx(one_us, abs=1) for t in ring)
