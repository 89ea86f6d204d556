"""Independent heavy ops on different devices run at the same time when the session has 2+ inter-op threads.

Reference: TF's executor (``core/common_runtime/executor.cc``) hands every ready expensive kernel to the
inter-op pool, so two independent products on two devices overlap (the whitepaper's §3.2 picture; lesson
01). Nothing here is timed: each kernel of the test op type ``InterOpOverlapTestMeet`` marks that it has
started and then waits (with a deadline) for the other one to have started too. If the two ran one after
the other, the first would give up at its deadline and report that it ran alone.
"""

import threading

import numpy as np
import pytest

import dfcore as tf
from dfcore.framework import registry
from dfcore.runtime import compiled_partition, thread_pools
from dfcore.runtime.grappler import no_rewrite_session_config

MEET_S = 10.0  # how long a kernel waits for the other one before it reports that it ran alone
_STARTED = {name: threading.Event() for name in ("left", "right")}


@registry.RegisterShape("InterOpOverlapTestMeet")
def _meet_shape(op):
    return [(op.inputs[0].dtype.base_dtype, op.inputs[0].shape)]


@registry.RegisterKernel("InterOpOverlapTestMeet")
def _meet_kernel(op):
    me, other = op.get_attr("me"), op.get_attr("other")

    def compute(x):
        _STARTED[me].set()
        met = _STARTED[other].wait(MEET_S)
        return np.full_like(x, 1.0 if met else 0.0)

    return compute


@registry.RegisterCost("InterOpOverlapTestMeet")
def _meet_cost(input_shapes, output_shapes, attrs):
    return 10**9, 0  # as heavy as a 1000x1000 product: worth a thread of its own


registry.mark_stateful("InterOpOverlapTestMeet")  # never folded, never merged away


def _meeting_graph(devices):
    graph = tf.Graph()
    with graph.as_default():
        outs = []
        for device, (me, other) in zip(devices, [("left", "right"), ("right", "left")]):
            with tf.device(device):
                x = tf.constant(np.zeros(4, np.float32))
                outs.append(graph.create_op("InterOpOverlapTestMeet", [x], {"me": me, "other": other},
                                            name=f"meet_{me}").outputs[0])
    return graph, outs


@pytest.fixture(autouse=True)
def fresh_meeting(monkeypatch):
    """Both kernels not started, and no global pool yet (as if no session had been made before)."""
    for event in _STARTED.values():
        event.clear()
    monkeypatch.setattr(thread_pools, "_global_pool", None)
    monkeypatch.setattr(thread_pools, "_named_pools", {})


@pytest.mark.parametrize("config", [
    tf.ConfigProto(inter_op_parallelism_threads=2),
    tf.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True),
    no_rewrite_session_config(tf.ConfigProto(inter_op_parallelism_threads=4)),
], ids=["global-pool", "per-session-pool", "no-rewrites"])
def test_two_independent_heavy_ops_on_two_devices_overlap(config):
    graph, outs = _meeting_graph(["/gpu:0", "/gpu:1"])
    with tf.Session(graph=graph, config=config) as sess:
        left, right = sess.run(outs)
    np.testing.assert_array_equal(left, np.ones(4, np.float32))  # each met the other while it ran
    np.testing.assert_array_equal(right, np.ones(4, np.float32))


def _tower_graph():
    """A tower's input ``w`` made on CPU:0 and read there by the left kernel (listed first) and, through a
    ``_Send``/``_Recv`` pair, by the right kernel on CPU:1: the two meet only if ``w`` is sent before CPU:0
    runs its own consumer."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        outs = []
        with tf.device("/cpu:0"):
            w = tf.identity(x, name="w")
            outs.append(graph.create_op("InterOpOverlapTestMeet", [w], {"me": "left", "other": "right"},
                                        name="meet_left").outputs[0])
        with tf.device("/cpu:1"):
            outs.append(graph.create_op("InterOpOverlapTestMeet", [w], {"me": "right", "other": "left"},
                                        name="meet_right").outputs[0])
    return graph, x, outs


def test_a_value_another_device_waits_for_is_sent_before_this_devices_heavy_consumer():
    # the loop's first steps, then the straight-line code (compiled_partition.STRAIGHT_LINE_STEP)
    graph, x, outs = _tower_graph()
    config = tf.ConfigProto(device_count={"CPU": 2}, inter_op_parallelism_threads=2, use_per_session_threads=True)
    with tf.Session(graph=graph, config=config) as sess:
        for step in range(compiled_partition.STRAIGHT_LINE_STEP + 2):
            for event in _STARTED.values():
                event.clear()
            left, right = sess.run(outs, {x: np.zeros(4, np.float32)})
            assert (left.tolist(), right.tolist()) == ([1.0] * 4, [1.0] * 4), f"step {step}: ran one after the other"
