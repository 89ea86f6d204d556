"""WhatIf: one precomputed pane per combination of the grid, nested Stacks, and a jslink from each picker to
every stack at its depth (so that it works without a kernel)."""

import re

import ipywidgets
import pytest
from ipywidgets.embed import embed_data

from widgets import WhatIf
from widgets.what_if import bars

GRID = {"bandwidth_GBps": [1, 6, 12], "latency_us": [1, 10]}


def transfer_us(bandwidth_GBps, latency_us, nbytes=4_000_000):
    return latency_us + nbytes / (bandwidth_GBps * 1e3)


def control(**kwargs):
    calls = []

    def render(bandwidth_GBps, latency_us):
        calls.append((bandwidth_GBps, latency_us))
        return f"<p>{transfer_us(bandwidth_GBps, latency_us):.0f} µs</p>"

    return WhatIf("link vs transfer time", GRID, render, **kwargs), calls


def test_every_combination_is_rendered_once_when_the_cell_runs():
    what_if, calls = control()
    assert sorted(calls) == sorted((b, latency) for b in GRID["bandwidth_GBps"] for latency in GRID["latency_us"])
    assert what_if.panes[(6, 10)].value == "<p>677 µs</p>"  # 10 µs + 4 MB / 6 GB/s


def test_pickers_select_the_pane_of_their_values():
    what_if, _ = control(start={"bandwidth_GBps": 12})
    assert what_if.selected() == (12, 1) and what_if.pane() == "<p>334 µs</p>"
    what_if.pickers["bandwidth_GBps"].index = 0
    what_if.pickers["latency_us"].value = "10"
    assert what_if.selected() == (1, 10) and what_if.pane() == "<p>4010 µs</p>"


def test_each_picker_is_jslinked_to_every_stack_at_its_depth_and_the_stacks_hold_the_right_panes():
    what_if, _ = control(picker="dropdown")
    assert all(isinstance(p, ipywidgets.Dropdown) for p in what_if.pickers.values())
    outer = what_if.stack
    assert [name for name, _ in what_if.link_targets] == ["bandwidth_GBps"] + ["latency_us"] * 3
    assert [stack for _, stack in what_if.link_targets] == [outer, *outer.children]
    for b, inner in zip(GRID["bandwidth_GBps"], outer.children):
        assert list(inner.children) == [what_if.panes[(b, latency)] for latency in GRID["latency_us"]]
    state = embed_data(views=[what_if])["manager_state"]["state"]
    for link, (name, stack) in zip(what_if.links, what_if.link_targets):
        saved = state[link.model_id]["state"]
        assert saved["source"] == [f"IPY_MODEL_{what_if.pickers[name].model_id}", "index"]
        assert saved["target"] == [f"IPY_MODEL_{stack.model_id}", "selected_index"]


def test_three_levels_the_links_alone_show_each_combinations_pane():
    # as in the browser with no kernel: each stack shows what its linked picker's index says, and nothing else
    grid = {"ps_tasks": [1, 2, 4], "strategy": ["round robin", "greedy"], "shards": [1, 4]}
    what_if = WhatIf("ps load", grid, lambda ps_tasks, strategy, shards: f"<p>{ps_tasks} {strategy} {shards}</p>",
                     picker="dropdown")
    assert [len([n for n, _ in what_if.link_targets if n == name]) for name in grid] == [1, 3, 6]
    driver = {stack.model_id: what_if.pickers[name] for name, stack in what_if.link_targets}
    for combination in what_if.panes:
        for name, value in zip(grid, combination):
            what_if.pickers[name].index = grid[name].index(value)
        shown = what_if.stack
        while isinstance(shown, ipywidgets.Stack):
            shown = shown.children[driver[shown.model_id].index]
        assert shown.value == f"<p>{' '.join(map(str, combination))}</p>"


def test_stacks_start_at_the_start_values():
    what_if, _ = control(start={"bandwidth_GBps": 6, "latency_us": 10})
    assert what_if.stack.selected_index == 1
    assert {inner.selected_index for inner in what_if.stack.children} == {1}


def test_bad_grids_and_renders_are_rejected():
    with pytest.raises(ValueError, match="at least one value"):
        WhatIf("t", {"n": []}, lambda n: "")
    with pytest.raises(ValueError, match="more than 400"):
        WhatIf("t", {"a": range(21), "b": range(20)}, lambda a, b: "")
    with pytest.raises(ValueError, match="not in"):
        control(start={"latency_us": 5})
    with pytest.raises(TypeError, match="must return HTML text"):
        WhatIf("t", {"n": [1, 2]}, lambda n: n)


def test_repr_is_stable_text():
    assert repr(control()[0]) == "<WhatIf: 'link vs transfer time', 3 bandwidth_GBps × 2 latency_us>"


def test_bars_share_one_scale_across_panes():
    svg = bars([("copy of a", 710.0), ("own work", 1420.0), ("too long", 5000.0)], scale_max=1420.0, width_px=520)
    widths = [float(w) for w in re.findall(r'<rect [^>]*?\swidth="([0-9.]+)"', svg)]
    assert widths == [120.0, 240.0, 240.0]  # 520 - 190 label - 90 value = 240 px for 1420 µs; clipped at the edge
    assert [f"{v} µs" in svg for v in ("710", "1,420", "5,000")] == [True] * 3
    assert "0.25 µs" in bars([("latency", 0.25)], scale_max=1.0)
    two = bars([("copy", 1.0), ("compute", 1.0, "#0072B2")], scale_max=1.0)
    assert re.findall(r'stroke="(#[0-9A-F]+)"', two) == ["#D55E00", "#0072B2"]  # the default, then the row's own
    with pytest.raises(ValueError, match="scale_max"):
        bars([("a", 1.0)], scale_max=0)
