"""AllReduceView (frames, chunk matrix, partial sums, bytes so far, busbw, jslinks) and AllReduceComparison."""

import re

import ipywidgets
import numpy as np
import pytest
from ipywidgets.embed import embed_data

from dfcore.distribute import all_reduce
from dfcore.distribute.all_reduce import machine_for_devices
from widgets import AllReduceComparison, AllReduceView, _bandwidth, _chunk_state, _chunk_svg

ALGORITHMS = ("ring", "reduce_to_one", "tree", "recursive_halving_doubling")


def _inputs(n, length=8, dtype=np.float32):
    """Rank i holds ``i·10 + [0, 1, …]``: every partial sum is an exact small integer."""
    return [(np.arange(length) + 10 * i).astype(dtype) for i in range(n)]


def _ring(n=4, length=8, **kwargs):
    return all_reduce(_inputs(n, length), **kwargs)


# -- frames: the textbook schedule, partial sums, bytes so far --------------------------------------
@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_one_frame_per_round_plus_the_start(n):
    result = _ring(n)
    view = AllReduceView(result)
    assert result.trace.num_rounds == 2 * (n - 1)
    assert len(view.frame_states) == len(view.stack.children) == 2 * (n - 1) + 1
    assert view.slider.max == view.play.max == 2 * (n - 1) and view.slider.min == 0
    assert isinstance(view.slider, ipywidgets.IntSlider) and isinstance(view.play, ipywidgets.Play)
    assert isinstance(view.stack, ipywidgets.Stack) and view.stack.selected_index == 0


@pytest.mark.parametrize("convention,offset", [("textbook", 0), ("nccl", 1)])
def test_matrix_sends_follow_the_documented_ring_convention(convention, offset):
    n = 5
    frames = AllReduceView(_ring(n, 10, convention=convention)).frame_states
    for s in range(n - 1):  # scatter-reduce step s: rank i sends chunk (i - s - offset) mod n and the receiver adds
        frame = frames[s + 1]
        assert frame.round.phase == "scatter_reduce"
        for i in range(n):
            chunk = (i - s - offset) % n
            assert frame.sends[i] == ((chunk, (i + 1) % n, "reduce"),)
            assert frame.receives[((i + 1) % n, chunk)] == ((i, "reduce"),)
    for s in range(n - 1):  # allgather step s: rank i sends chunk (i + 1 - s - offset) mod n and the receiver stores
        frame = frames[n + s]
        assert frame.round.phase == "allgather"
        for i in range(n):
            assert frame.sends[i] == (((i + 1 - s - offset) % n, (i + 1) % n, "copy"),)


def test_cells_hold_the_actual_partial_sums():
    n, values = 4, _inputs(4)
    frames = AllReduceView(all_reduce(values)).frame_states
    chunk = lambda r, c: values[r][2 * c:2 * c + 2]  # noqa: E731  (8 elements, 4 chunks of 2)
    for r in range(n):  # start: everyone holds its own input
        for c in range(n):
            np.testing.assert_array_equal(frames[0].cells[r][c].values, chunk(r, c))
            assert frames[0].cells[r][c].contributors == {r}
    after0 = frames[1]  # round 0: rank i + 1 added chunk i of rank i
    for i in range(n):
        cell = after0.cells[(i + 1) % n][i]
        np.testing.assert_array_equal(cell.values, chunk(i, i) + chunk((i + 1) % n, i))
        assert cell.contributors == {i, (i + 1) % n}
    owned = frames[n - 1]  # end of scatter-reduce: rank i owns the full sum of chunk (i + 1) mod n
    for i in range(n):
        cell = owned.cells[i][(i + 1) % n]
        np.testing.assert_array_equal(cell.values, sum(chunk(r, (i + 1) % n) for r in range(n)))
        assert cell.contributors == set(range(n))
    total = np.sum(values, axis=0)
    for r in range(n):  # the end: every cell holds the sum
        for c in range(n):
            np.testing.assert_array_equal(frames[-1].cells[r][c].values, total[2 * c:2 * c + 2])
            assert len(frames[-1].cells[r][c].contributors) == n


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_ends_with_the_reduction_in_every_cell(algorithm):
    values = _inputs(6, 11, np.float64)
    for reduction, reference in (("sum", np.sum), ("mean", np.mean), ("max", np.max)):
        last = AllReduceView(all_reduce(values, algorithm=algorithm, reduction=reduction)).frame_states[-1]
        got = np.concatenate([c.values for c in last.cells[0]])
        np.testing.assert_allclose(got, reference(values, axis=0), rtol=1e-12)
        for row in last.cells:
            assert all(len(c.contributors) == 6 for c in row)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_bytes_so_far_add_up_round_by_round_to_the_trace(algorithm):
    trace = all_reduce(_inputs(5, 13), algorithm=algorithm).trace
    frames = AllReduceView(trace).frame_states
    sent, links = [0] * 5, {}
    for frame, record in zip(frames[1:], trace.rounds):
        for t in record.transfers:
            sent[t.src] += t.nbytes
            links[(t.src, t.dst)] = links.get((t.src, t.dst), 0) + t.nbytes
        assert list(frame.bytes_sent) == sent
        assert {k: v for k, v in frame.link_bytes.items() if v} == links
    assert frames[0].bytes_sent == (0,) * 5 and set(frames[0].link_bytes.values()) == {0}
    assert frames[-1].bytes_sent == tuple(trace.bytes_sent_per_device[d] for d in trace.devices)
    assert sum(frames[-1].bytes_received) == sum(trace.bytes_sent_per_device.values())


def test_ring_bytes_per_device_grow_by_one_chunk_per_round():
    frames = AllReduceView(_ring(4, 8)).frame_states  # float32 chunks of 2 elements: 8 B per message
    assert [f.bytes_sent for f in frames] == [(8 * k,) * 4 for k in range(7)]


def test_frame_html_shows_values_rule_phase_and_bytes():
    view = AllReduceView(_ring())
    first, round1, last = (view.stack.children[i].value for i in (0, 2, -1))
    assert "[0, 1]" in first and "rank 0 only" in first
    assert "round 1 (of 0–5) · scatter_reduce · rank i sends chunk (i−1) mod 4 to rank (i+1) mod 4" in round1
    assert "[10, 12]" in round1 and "Σ 0+1" in round1  # rank 1's chunk 0 after round 0
    assert "from 3: adds" in round1 and "to 1" in round1 and 'stroke-dasharray="4,2"' in round1
    assert "[60, 64]" in last and "Σ all 4" in last and "done: every rank holds the sum of all 4 inputs" in last
    assert "<td" in last and "48 B" in last  # bytes table: 2(N−1)/N × 32 B per device


def test_long_chunks_show_only_their_first_values():
    html = AllReduceView(all_reduce(_inputs(2, 40))).stack.children[0].value
    shown = re.findall(r">(\[[^<]*)</text>", html)
    assert shown[0] == "[0, 1, 2, …]" and all(len(text.split(",")) <= 4 for text in shown)
    assert "<title>rank 0, chunk 0: rank 0 only [0, 1, 2, 3, 4, 5, 6, 7, …]</title>" in html  # more on hover


def test_values_free_trace_still_shows_who_holds_what():
    view = AllReduceView(all_reduce(_inputs(3), trace_values=False))
    assert all(c.values is None for row in view.frame_states[-1].cells for c in row)
    assert all(len(c.contributors) == 3 for row in view.frame_states[-1].cells for c in row)


# -- busbw derivation ---------------------------------------------------------------------------------
def test_busbw_is_algbw_times_two_n_minus_one_over_n_on_the_simulated_clock():
    result = _ring(4, 1000)
    view = AllReduceView(result)
    bw = view.bandwidth
    assert view.clock == "simulated" and bw.time_s == result.simulated_time_s
    assert bw.size_bytes == 4000
    assert bw.algbw_GBps == pytest.approx(4000 / result.simulated_time_s / 1e9, rel=1e-12)
    assert bw.busbw_GBps == pytest.approx(bw.algbw_GBps * 2 * 3 / 4, rel=1e-12)
    assert bw.max_bytes_per_device == 6000 and bw.max_bytes_per_link == 6000 and bw.total_bytes == 24000
    assert bw.counted_GBps == pytest.approx(bw.busbw_GBps, rel=1e-12)  # counting bytes gives busbw for a ring
    assert bw.link_GBps == machine_for_devices(result.trace.devices).link(*result.trace.devices[:2]).bandwidth_Bps / 1e9
    panel = view.children[-1].value
    assert _bandwidth.gbps(bw.busbw_GBps) in panel and _bandwidth.gbps(bw.algbw_GBps) in panel
    assert "equals busbw: each device sent exactly 2(N−1)/N × S" in panel and "6,000 B" in panel


def test_other_clocks_and_other_algorithms():
    result = all_reduce(_inputs(4, 1000), algorithm="reduce_to_one")
    wall = AllReduceView(result, clock="wall").bandwidth
    assert wall.time_s == result.wall_time_s and wall.clock == "wall"
    bw = AllReduceView(result, clock="predicted").bandwidth
    assert bw.time_s == result.predicted_time_s
    assert bw.max_bytes_per_device == 3 * 4000  # the root sends the sum to 3 ranks
    assert bw.counted_GBps == pytest.approx(bw.busbw_GBps * 12000 / 6000, rel=1e-12)
    with pytest.raises(ValueError, match="clock must be one of"):
        AllReduceView(result, clock="cpu")


@pytest.mark.parametrize("algorithm,root", [("ring", 0), ("tree", 0), ("recursive_halving_doubling", 0),
                                            ("reduce_to_one", 2)])
def test_a_bare_trace_gets_the_engines_times_by_replaying_its_schedule(algorithm, root):
    result = all_reduce(_inputs(5, 17), algorithm=algorithm, root=root, num_subchunks=2)
    view = AllReduceView(result.trace)
    assert view.result is None
    assert view.times == {"simulated": result.simulated_time_s, "predicted": result.predicted_time_s}
    with pytest.raises(ValueError, match="No wall time"):
        AllReduceView(result.trace, clock="wall")


def test_one_device_has_no_rounds_and_no_bandwidth():
    view = AllReduceView(all_reduce([np.ones(3)]))
    assert len(view.stack.children) == 1 and view.bandwidth is None
    assert repr(view) == "<AllReduceView: ring, 1 device, 0 rounds>"
    assert "no bandwidth to derive" in view.children[-1].value


def test_bad_sources_are_rejected():
    with pytest.raises(ValueError, match="trace=True"):
        AllReduceView(all_reduce(_inputs(2), trace=False))
    with pytest.raises(TypeError, match="an AllReduceResult .* or a CollectiveTrace as result_or_trace, got ndarray"):
        AllReduceView(np.ones(3))


# -- kernel-free step-through, repr ---------------------------------------------------------------------
def test_step_through_is_linked_with_jslink_and_saved_in_a_static_export():
    view = AllReduceView(_ring())
    pairs = {(link.source[0], link.source[1], link.target[0], link.target[1]) for link in view.links}
    assert pairs == {(view.play, "value", view.slider, "value"), (view.slider, "value", view.stack, "selected_index")}
    assert all(isinstance(link, ipywidgets.widgets.widget_link.Link) for link in view.links)
    state = embed_data(views=[view])["manager_state"]["state"]
    assert sum(m["model_name"] == "LinkModel" for m in state.values()) >= 2


@pytest.mark.parametrize("algorithm,rounds", [("ring", 6), ("reduce_to_one", 2), ("tree", 4),
                                              ("recursive_halving_doubling", 4)])
def test_repr_is_stable(algorithm, rounds):
    view = AllReduceView(all_reduce(_inputs(4), algorithm=algorithm))
    assert repr(view) == f"<AllReduceView: {algorithm}, 4 devices, {rounds} rounds>"
    assert "0x" not in repr(view)


# -- drawing helpers --------------------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("n", [2, 3, 6, 8, 11])
def test_topology_nodes_never_overlap(algorithm, n):
    centres, width, height = _chunk_svg.topology_layout(algorithm, n)
    for i in range(n):
        x, y = centres[i]
        assert _chunk_svg.NODE_W / 2 <= x <= width - _chunk_svg.NODE_W / 2
        assert _chunk_svg.NODE_H / 2 <= y <= height - _chunk_svg.NODE_H / 2
        for j in range(i):
            assert (abs(x - centres[j][0]) >= _chunk_svg.NODE_W + 4 or
                    abs(y - centres[j][1]) >= _chunk_svg.NODE_H + 4), (i, j)


def test_value_and_contributor_text():
    assert _chunk_state.format_values(np.array([60.0, 64.0])) == "[60, 64]"
    assert _chunk_state.format_values(np.array([0.12345, -1.5, 2.0, 7.0])) == "[0.123, -1.5, 2, …]"
    assert _chunk_state.format_values(np.array([123456.0]), digits=3) == "[1.23e5]"
    assert _chunk_state.contributors_text(frozenset({2}), 4) == "rank 2 only"
    assert _chunk_state.contributors_text(frozenset({0, 3}), 4) == "Σ 0+3"
    assert _chunk_state.contributors_text(frozenset(range(4)), 4) == "Σ all 4"
    assert _chunk_state.contributors_text(frozenset({1, 2, 5}), 8) == "Σ 3 of 8"
    assert _chunk_state.contributors_text(frozenset({1, 2}), 3, "max") == "max 1+2"
    assert _chunk_svg.chunk_label((3,)) == "c3" and _chunk_svg.chunk_label((0, 1, 2)) == "c0–2"


# -- AllReduceComparison -------------------------------------------------------------------------------------
def test_comparison_numbers_equal_the_engines():
    values = _inputs(4, 1000)
    view = AllReduceComparison(values)
    assert [r.algorithm for r in view.rows] == ["ring", "reduce_to_one", "tree"]
    for row in view.rows:
        direct = all_reduce(values, algorithm=row.algorithm)
        trace = direct.trace
        assert row.rounds == trace.num_rounds and row.messages == len(trace.transfers)
        assert row.bytes_per_device == tuple(trace.bytes_sent_per_device[d] for d in trace.devices)
        assert row.total_bytes == sum(trace.bytes_per_link.values())
        assert row.simulated_time_s == direct.simulated_time_s and row.predicted_time_s == direct.predicted_time_s
        assert row.algbw_GBps == pytest.approx(4000 / direct.simulated_time_s / 1e9, rel=1e-12)
        assert row.busbw_GBps == pytest.approx(row.algbw_GBps * 1.5, rel=1e-12)
    ring, reduce_to_one, tree = view.rows
    assert ring.bytes_per_device == (6000,) * 4 and (ring.rounds, reduce_to_one.rounds, tree.rounds) == (6, 2, 4)
    assert reduce_to_one.bytes_per_device == (12000, 4000, 4000, 4000)
    table, chart = (child.value for child in view.children)
    assert "<td" in table and "12.0 KB" in table and _bandwidth.seconds(ring.simulated_time_s) in table
    assert chart.startswith("<svg") and chart.count("<title>") == 3 * 4 + 3  # a bar per device and algorithm, 3 times
    assert "ring: 2(N−1)/N × S" in chart
    assert repr(view) == "<AllReduceComparison: ring, reduce_to_one, tree on 4 devices>"


def test_comparison_takes_devices_algorithms_and_rejects_none():
    view = AllReduceComparison(_inputs(3), devices=["/cpu:0", "/gpu:0", "/gpu:1"],
                               algorithms=("recursive_halving_doubling", "ring"))
    assert [r.algorithm for r in view.rows] == ["recursive_halving_doubling", "ring"]
    assert view.devices[0] == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert re.fullmatch(r"<AllReduceComparison: recursive_halving_doubling, ring on 3 devices>", repr(view))
    with pytest.raises(ValueError, match="at least one algorithm"):
        AllReduceComparison(_inputs(3), algorithms=())
