"""PipelineView: panels per run linked with jslink, lanes and dashed waits in the SVG, the occupancy plot, the
summary's numbers, stable repr; and the input lanes in TimelineView."""

import dataclasses
import re

import ipywidgets
import pytest
from ipywidgets.embed import embed_data

from dfcore.data import pipeline_sim as ps
from widgets import PipelineView, TimelineView, _format, _palette
from widgets.pipeline_view import draw, lanes_of, summary

MS = 1e-3


def runs():
    """feed_dict-like (no prefetch, 1 thread) and pipelined (2 threads, prefetch 1): map 4 ms, step 3 ms."""
    slow = ps.simulate_pipeline(ps.PipelineSpec(0.5 * MS, 8, 1, 0, 3 * MS, batch_bytes=2048, name="serial"), 6)
    fast = ps.simulate_pipeline(ps.PipelineSpec(0.5 * MS, 8, 2, 1, 3 * MS, batch_bytes=2048, name="pipelined"), 6)
    return slow, fast


def test_view_structure_and_kernel_free_link():
    slow, fast = runs()
    view = PipelineView([slow, fast], batch_size=8)
    assert view.children == (view.picker, view.stack)
    assert isinstance(view.picker, ipywidgets.ToggleButtons) and view.picker.options == ("serial", "pipelined")
    assert isinstance(view.stack, ipywidgets.Stack) and len(view.stack.children) == 2
    pairs = {(lk.source[0], lk.source[1], lk.target[0], lk.target[1]) for lk in view.links}
    assert pairs == {(view.picker, "index", view.stack, "selected_index")}
    state = embed_data(views=[view])["manager_state"]["state"]
    assert sum(m["model_name"] == "LinkModel" for m in state.values()) == 1
    assert repr(view) == "<PipelineView: 2 runs (serial, pipelined)>"
    assert repr(PipelineView({"a": slow})) == "<PipelineView: 1 run (a)>"


def test_summary_gives_period_starved_share_and_images_per_second():
    slow, fast = runs()
    # serial: 4 ms of map then 3 ms of step, plus the 2 kB copy (10 µs + 2048 B / 12 GB/s ≈ 10.2 µs)
    assert slow.period_us == 7010 and fast.period_us == 3010
    text = summary(slow, batch_size=8)
    assert "period 7.0 ms per step" in text and f"starved {round(100 * slow.starved_fraction)} %" in text
    assert "1,141 images/s" in text  # 8 / 7.01 ms
    assert "images/s" not in summary(fast)


def test_drawing_has_a_lane_per_thread_and_dashed_waits_only_where_training_waited():
    slow, fast = runs()
    assert [label for label, _, _ in lanes_of(fast)] == [
        "ParallelMap thread 0", "ParallelMap thread 1", "Prefetch thread 0", "CPU:0", "GPU:0"]
    svg = draw(slow, max_steps=6)
    assert svg.startswith("<svg") and svg.count('stroke-dasharray="4,2"') == 6  # every serial step waits
    assert [w > 0 for w in fast.waits_us] == [True] + [False] * 5  # map 2 ms < step 3 ms: only the first batch
    assert draw(fast, max_steps=6).count('stroke-dasharray="4,2"') == 1
    assert f'stroke="{_palette.STARVED}"' in svg


def test_occupancy_plot_follows_the_buffer():
    slow, fast = runs()
    assert "no prefetch buffer or queue" in draw(slow)
    svg = draw(fast)
    points = re.search(r'<polyline points="([^"]+)"', svg).group(1).split()
    ys = sorted({float(p.split(",")[1]) for p in points})
    assert len(ys) == 2 and "Prefetch occupancy (elements; max 1)" in svg  # empty and one batch


def test_view_needs_pipeline_runs():
    with pytest.raises(TypeError, match="PipelineView expects a PipelineRun"):
        PipelineView([object()])
    with pytest.raises(ValueError, match="at least one"):
        PipelineView({})


def test_timeline_view_and_the_palette_take_input_lanes():
    _, fast = runs()
    lane = "/job:localhost/replica:0/task:0/device:CPU:0/input:ParallelMap/thread:1"
    assert _format.short_device(lane) == "CPU:0/input:ParallelMap/thread:1"
    assert _palette.device_color(lane) == _palette.device_color("/job:localhost/replica:0/task:0/device:CPU:0")
    cpu = "/job:localhost/replica:0/task:0/device:CPU:0"
    assert sorted([lane, "/job:localhost/replica:0/task:0/device:GPU:0", cpu], key=_format.device_sort_key)[:2] == \
        [cpu, lane]
    view = TimelineView(fast.step_stats)
    assert repr(view).startswith("<TimelineView: 5 devices") and view.mode.value == "simulated"


def test_one_occupancy_plot_per_buffer():
    _, fast = runs()
    two = dataclasses.replace(fast, occupancy={"input_producer/input_producer": ((0, 32), (500, 31)),
                                               "shuffle_batch/random_shuffle_queue": ((0, 0), (100, 5), (300, 1))})
    svg = draw(two)
    assert svg.count("<polyline") == 2
    assert "input_producer/input_producer occupancy (elements; max 32)" in svg
    assert "shuffle_batch/random_shuffle_queue occupancy (elements; max 5)" in svg
