"""PlacementView: the cost-model placer's decisions as a table and a kernel-free step-through, tested without a
browser (children, traits, links, SVG and HTML strings, repr)."""

import re

import ipywidgets
import numpy as np
import pytest

import dfcore as tf
from dfcore.runtime import cost_placer
from dfcore.runtime.device_set import DeviceSet
from widgets import PlacementView
from widgets.placement_view import decision_rows, frame_svg, memory_after

_P = "/job:localhost/replica:0/task:0/device:"


def two_matmuls():
    """Two independent 4096² matmuls of two constants on CPU:0 + GPU:0 + GPU:1: the second goes to GPU:1."""
    a = tf.constant(np.ones((4096, 4096), np.float32), name="a")
    b = tf.constant(np.ones((4096, 4096), np.float32), name="b")
    tf.matmul(a, b, name="mm1")
    tf.matmul(a, b, name="mm2")
    devices = DeviceSet.from_config(tf.ConfigProto(device_count={"CPU": 1, "GPU": 2}))
    return cost_placer.place(tf.get_default_graph().get_operations(), devices)


def test_view_structure_and_kernel_free_step_through():
    placement = two_matmuls()
    view = PlacementView(placement)
    assert view.children[1].children[:2] == (view.play, view.slider) and view.children[2:] == (view.stack, view.table)
    assert isinstance(view.stack, ipywidgets.Stack) and len(view.stack.children) == 4 + 1
    assert view.play.max == view.slider.max == 4
    pairs = {(lk.source[0], lk.source[1], lk.target[0], lk.target[1]) for lk in view.links}
    assert pairs == {(view.play, "value", view.slider, "value"), (view.slider, "value", view.stack, "selected_index")}
    assert view.devices == [_P + "CPU:0", _P + "GPU:0", _P + "GPU:1"]
    # mm2 on GPU:1: a then b cross the K20m's PCIe 2.0, one after the other through GPU:0's bus out and GPU:1's
    # bus in (2 × (10 µs + 64 MiB / 6 GB/s) = 22.4 ms), then 5 µs + 2·4096³ / (0.8 · 3.52 TFLOP/s) = 48.8 ms: 71.2 ms,
    # against 97.6 ms after mm1 on GPU:0
    assert repr(view) == "<PlacementView: 4 nodes on 3 devices, estimated step 71.2 ms>"
    # frame k captions node k's candidates and the winner
    frame = view.stack.children[3].value
    assert "node 3: mm2 (MatMul, static cost) finishes at" in frame and "→ GPU:1 (cost model: earliest" in frame
    assert "all 4 nodes placed: the last finishes at 71.2 ms" in view.stack.children[4].value


def test_frames_grow_the_lanes_node_by_node_and_draw_the_candidates_as_ghosts():
    decisions = two_matmuls().decisions()
    devices = [_P + "CPU:0", _P + "GPU:0", _P + "GPU:1"]
    solid = [frame_svg(decisions, k, devices, 1e-3).count("<title>mm") for k in range(5)]
    # frame 2: mm1's three candidates (ghosts); frame 3: mm1 placed + mm2's three ghosts; frame 4: both placed
    assert solid == [0, 0, 3, 4, 2]
    third = frame_svg(decisions, 3, devices, 1e-3)
    assert third.count('stroke-dasharray="4,2"') == 2  # the two losing candidates of mm2 are dashed
    assert "★ 71.2 ms" in third  # the winner's finish
    assert third.count("inputs arrive over the link") == 2  # a and b live on GPU:0: CPU and GPU:1 receive them
    assert third.startswith("<svg") and third.endswith("</svg>")


def test_rows_mark_the_winner_the_transfers_and_the_infeasible_devices():
    placement = two_matmuls()
    devices = [_P + "CPU:0", _P + "GPU:0", _P + "GPU:1"]
    rows = decision_rows(placement.decisions(), devices)
    mm2 = rows[3]
    assert mm2[:4] == (3, "mm2", "MatMul", "static")
    assert mm2[5] == "97.6 ms" and mm2[6].startswith("★ 71.2 ms (+11.2 ms in)")  # the longer of the two inputs
    assert "GPU:1" in mm2[7] and mm2[8] == cost_placer.REASON_COST
    with tf.Graph().as_default():
        with tf.device("/gpu:1"):
            tf.constant(1.0, name="pinned")
        ds = DeviceSet.from_config(tf.ConfigProto(device_count={"CPU": 1, "GPU": 2}))
        pinned = cost_placer.place(tf.get_default_graph().get_operations(), ds).decisions()
    assert decision_rows(pinned, devices)[0][4:7] == ("—", "—", "★ 0 µs")
    assert memory_after(placement.decisions(), devices)[-1] == placement.memory_bytes


def test_a_session_source_and_its_errors():
    with tf.Session(placement="cost_model") as sess:
        sess.run(tf.add(tf.constant(1.0), tf.constant(2.0), name="sum"))
        view = PlacementView(sess, max_rows=1, max_frames=2)
    assert re.fullmatch(r"<PlacementView: 3 nodes on 5 devices, estimated step [\d.]+ µs>", repr(view))
    assert len(view.stack.children) == 3 and "(the first 1)" in view.table.value
    assert "stepping through the first 2" in view.children[0].value
    with tf.Session() as rules:
        rules.run(tf.constant(0.0))
        with pytest.raises(ValueError, match="needs a session placed by the cost-model placer"):
            PlacementView(rules)
    with pytest.raises(TypeError, match="PlacementView expects a Session placed with placement='cost_model'"):
        PlacementView(None)
