"""SVG helpers, the step's spans and overlap, and TimelineView (frames, jslinks, modes)."""

import re

import ipywidgets
import pytest
from ipywidgets.embed import embed_data

import dfcore as tf
from dfcore.framework.run_metadata import attach_step_records
from dfcore.runtime.step_stats import DeviceStepStats, NodeExecStats, StepStats, timeline_label
from widgets import TimelineView, _palette, _svg, _timeline

A = "/job:localhost/replica:0/task:0/device:GPU:0"
B = "/job:localhost/replica:0/task:0/device:GPU:1"


def _node(name, op, sim, wall, label=None, output_bytes=(16,)):
    return NodeExecStats(name, op, all_start_micros=1000 + wall[0], op_start_rel_micros=0,
                         op_end_rel_micros=wall[1] - wall[0], all_end_rel_micros=wall[1] - wall[0], thread_id=1,
                         output_bytes=output_bytes, timeline_label=label or timeline_label(name, op),
                         sim_start_micros=sim[0], sim_end_micros=sim[1])


def hand_step():
    """A on GPU:0 computes ``a`` (0–10 µs) and sends it; B computes ``b`` (12–16 µs) meanwhile,
    receives ``a`` at 18 µs and adds (18–20 µs). Simulated overlap: 4 of 8 µs of transfer = 50 %.
    On the wall clock nothing computes during the transfer (101–120 µs): 0 %."""
    send = timeline_label("a/_0", "_Send", tensor_name="edge_1_a", peer_device=B)
    recv = timeline_label("a/_1", "_Recv", tensor_name="edge_1_a", peer_device=A)
    return StepStats([
        DeviceStepStats(A, [_node("a", "MatMul", (0, 10), (0, 100)),
                            _node("a/_0", "_Send", (10, 10), (100, 101), send, ())]),
        DeviceStepStats(B, [_node("b", "MatMul", (12, 16), (5, 50)),
                            _node("a/_1", "_Recv", (18, 18), (60, 120), recv, (24,)),
                            _node("c", "Add", (18, 20), (121, 130))]),
    ])


def hand_metadata():
    run_metadata = tf.RunMetadata()
    attach_step_records(run_metadata, tf.StepRecords(hand_step(), (), ()))
    return run_metadata


# -- SVG helpers ----------------------------------------------------------------------------------
def test_svg_document_and_shapes_are_plain_escaped_strings():
    doc = _svg.document(100, 50, _svg.rect(1, 2, 3, 4, "#fff", "#000", title="a<b") + _svg.text(5, 6, "x&y"))
    assert doc.startswith('<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50" viewBox="0 0 100 50"')
    assert '<rect x="1" y="2" width="3" height="4" rx="2" fill="#fff" stroke="#000" stroke-width="1">' \
           "<title>a&lt;b</title></rect>" in doc
    assert ">x&amp;y</text>" in doc


def test_arrow_is_a_curve_with_a_polygon_head_pointing_down_at_the_end():
    arrow = _svg.arrow(10, 0, 50, 40, "#D55E00")
    assert '<path d="M10,0 C10,20 50,20 50,40"' in arrow
    points = re.search(r'points="([^"]+)"', arrow).group(1).split()
    assert points[0] == "50,40"
    assert all(float(p.split(",")[1]) < 40 for p in points[1:])  # the head's base sits above its tip


@pytest.mark.parametrize("span, step", [(16, 5), (100, 20), (7, 2), (1e6, 200000), (0.3, 0.05), (12, 2)])
def test_nice_step_is_one_two_or_five_times_a_power_of_ten(span, step):
    assert _svg.nice_step(span) == pytest.approx(step)


def test_time_axis_labels_each_tick():
    axis = _svg.time_axis(100, 200, 16, 80, lambda t: f"{t:g}us", grid_top=20)
    assert re.findall(r">([^<]+)</text>", axis) == ["0us", "5us", "10us", "15us"]
    assert '<line x1="287.5" y1="20" x2="287.5" y2="80"' in axis  # the grid line at t = 15 ends at the axis


# -- spans and overlap -----------------------------------------------------------------------------
def test_step_spans_order_ops_by_start_and_pair_send_with_recv():
    spans = _timeline.step_spans(hand_step(), "simulated")
    assert [s.name for s in spans.ops] == ["a", "a/_0", "b", "a/_1", "c"]
    (transfer,) = spans.transfers
    assert (transfer.tensor_name, transfer.src_device, transfer.dst_device) == ("edge_1_a", A, B)
    assert (transfer.start_us, transfer.end_us, transfer.nbytes) == (10, 18, 24)
    assert spans.devices == (A, B) and spans.end_us == 20


def test_wall_spans_start_at_zero():
    spans = _timeline.step_spans(hand_step(), "wall")
    assert [(s.name, s.start_us) for s in spans.ops] == [("a", 0), ("b", 5), ("a/_1", 60), ("a/_0", 100),
                                                          ("c", 121)]
    assert (spans.transfers[0].start_us, spans.transfers[0].end_us) == (101, 120)


def test_overlap_against_a_hand_computed_step():
    assert _timeline.overlap(_timeline.step_spans(hand_step(), "simulated")) == (50.0, 8, 16)
    assert _timeline.overlap(_timeline.step_spans(hand_step(), "wall")) == (0.0, 19, 109)


def test_union_merges_overlapping_and_touching_intervals():
    assert _timeline.union([(5, 7), (0, 2), (1, 3), (3, 4), (9, 9)]) == [(0, 4), (5, 7)]


def test_simulated_mode_needs_simulated_times():
    stats = StepStats([DeviceStepStats(A, [NodeExecStats("a", "MatMul", 0, 0, 5, 5, 1, (), "a = MatMul()")])])
    assert not _timeline.has_simulated_times(stats)
    with pytest.raises(ValueError, match="no simulated times"):
        _timeline.step_spans(stats, "simulated")
    with pytest.raises(ValueError, match="mode must be one of"):
        _timeline.step_spans(stats, "cpu")


def test_frame_ranges_group_consecutive_ops():
    assert _timeline.frame_ranges(5, 10) == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]
    assert _timeline.frame_ranges(5, 2) == [(0, 2), (3, 4)]


def test_drawing_has_compute_lanes_a_transfer_lane_for_the_receiver_and_an_arrow():
    spans = _timeline.step_spans(hand_step(), "simulated")
    lay = _timeline.layout(spans, 600)
    assert [(title, kind) for title, _, kind, *_ in lay.lanes] == [("GPU:0", "compute"), ("GPU:1", "compute"),
                                                                   ("transfers → GPU:1", "transfers")]
    svg = _timeline.draw(spans, lay)
    assert svg.count("<path") == 1 and f'stroke="{_palette.TRANSFER}"' in svg
    assert "<title>edge_1_a (24 B): GPU:0 → GPU:1, 10 µs → 18 µs</title>" in svg
    assert "<title>b (MatMul) on GPU:1: 12 µs → 16 µs</title>" in svg
    assert ">transfers → GPU:1</text>" in svg


def test_frames_veil_what_has_not_started_and_name_the_step():
    spans = _timeline.step_spans(hand_step(), "simulated")
    lay = _timeline.layout(spans, 600)
    frame = _timeline.frame(spans, lay, 2, 2)
    assert 'style="pointer-events:none"' in frame and 'fill-opacity="0.72"' in frame
    assert "step 3 of 5 · t = 12 µs · b (MatMul) on GPU:1" in frame
    assert f'x="{_svg._n(lay.x(12))}"' in frame  # the veil starts at the step's start


# -- TimelineView -----------------------------------------------------------------------------------
def test_timeline_view_structure_and_default_mode():
    view = TimelineView(hand_metadata())
    controls, stack = view.children
    assert controls.children == (view.mode, view.play, view.slider)
    assert isinstance(view.mode, ipywidgets.ToggleButtons) and view.mode.value == "simulated"
    assert view.mode.options == (("simulated time", "simulated"), ("wall time", "wall"))
    assert isinstance(stack, ipywidgets.Stack) and len(stack.children) == 2 and stack.selected_index == 0
    for mode in ("simulated", "wall"):
        assert len(view.frames[mode].children) == 5 + 1  # one frame per op, then the whole step
    assert view.slider.max == view.play.max == 5 and view.slider.value == 5
    assert view.overlap_percent == {"simulated": 50.0, "wall": 0.0}
    assert "overlap 50.0 %" in stack.children[0].children[0].value


def test_step_through_is_linked_in_the_browser_with_jslink():
    view = TimelineView(hand_metadata())
    pairs = {(link.source[0], link.source[1], link.target[0], link.target[1]) for link in view.links}
    assert pairs == {(view.mode, "index", view.stack, "selected_index"), (view.play, "value", view.slider, "value"),
                     (view.slider, "value", view.frames["simulated"], "selected_index"),
                     (view.slider, "value", view.frames["wall"], "selected_index")}
    assert all(isinstance(link, ipywidgets.widgets.widget_link.Link) for link in view.links)
    state = embed_data(views=[view])["manager_state"]["state"]
    assert sum(m["model_name"] == "LinkModel" for m in state.values()) >= 4  # saved with a static export


def test_side_by_side_shows_both_clocks_of_the_step_under_one_slider():
    view = TimelineView(hand_metadata(), side_by_side=True)
    controls, both = view.children
    assert controls.children == (view.play, view.slider)
    assert isinstance(both, ipywidgets.VBox) and len(both.children) == 2
    (sim_title, sim_panel), (wall_title, wall_panel) = (box.children for box in both.children)
    assert "simulated time" in sim_title.value and "wall time" in wall_title.value
    assert "overlap 50.0 %" in sim_panel.children[0].value and "overlap 0.0 %" in wall_panel.children[0].value
    pairs = {(link.source[0], link.target[0], link.target[1]) for link in view.links}
    assert pairs == {(view.play, view.slider, "value"), (view.slider, view.frames["simulated"], "selected_index"),
                     (view.slider, view.frames["wall"], "selected_index")}


def test_timeline_view_repr_is_stable_and_follows_the_mode():
    view = TimelineView(hand_metadata())
    assert repr(view) == "<TimelineView: 2 devices, 5 ops, simulated>"
    view.mode.value = "wall"
    assert repr(view) == "<TimelineView: 2 devices, 5 ops, wall>"


def test_timeline_view_groups_ops_when_there_are_more_than_max_frames():
    view = TimelineView(hand_metadata(), max_frames=2)
    assert len(view.frames["simulated"].children) == 3 and view.slider.max == 2


def test_timeline_view_of_a_real_traced_run():
    with tf.device("/gpu:0"):
        a = tf.matmul(tf.ones([4, 4]), tf.ones([4, 4]))
    with tf.device("/cpu:0"):
        b = a + 1.0
    run_metadata = tf.RunMetadata()
    tf.Session().run(b, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=run_metadata)
    view = TimelineView(run_metadata)
    assert len(view.spans["simulated"].transfers) == 1 and view.spans["simulated"].transfers[0].nbytes == 64
    assert re.fullmatch(r"<TimelineView: 2 devices, \d+ ops, simulated>", repr(view))


def test_timeline_view_needs_a_traced_run():
    with pytest.raises(ValueError, match="FULL_TRACE"):
        TimelineView(tf.RunMetadata())


def test_without_simulated_times_only_wall_time_is_offered():
    step_stats = StepStats([DeviceStepStats(A, [
        NodeExecStats("a", "MatMul", 100, 0, 5, 5, 1, (16,), "a = MatMul()"),
        NodeExecStats("b", "Relu", 110, 0, 5, 5, 1, (16,), "b = Relu(a)")])])
    view = TimelineView(step_stats)
    assert TimelineView(step_stats.to_proto()).spans == view.spans  # TF's message: the same wall-clock lanes
    assert view.mode.options == (("wall time", "wall"),) and list(view.frames) == ["wall"]
    assert [s.start_us for s in view.spans["wall"].ops] == [0, 10]
    assert repr(view) == "<TimelineView: 1 device, 2 ops, wall>"
