"""ParameterServerView (lanes, windows, ps load, staleness histograms, curves, jslinks) and ClusterView."""

import re
import threading

import ipywidgets
import pytest
from ipywidgets.embed import embed_data

import dfcore as tf
from dfcore.distribute import parameter_server as ps
from dfcore.distribute.staleness import FaultRecord, PhaseRecord
from dfcore.train.device_setter import ps_load_table
from widgets import ClusterView, ParameterServerView, _palette, _ps_charts, _ps_lanes
from widgets.parameter_server_view import run_name

CPU_ONLY = tf.ConfigProto(device_count={"CPU": 1, "GPU": 0})
KINDS = ("compute", "pull", "push", "wait", "recv")


@pytest.fixture(scope="module")
def runs():
    """sync, async and bounded_delay s=2 on 2 ps tasks and 4 workers, worker 3 three times slower."""
    common = dict(num_ps=2, straggler={3: 3.0}, eval_every=4)
    return {"sync": ps.train(mode="sync", steps=8, **common),
            "async": ps.train(mode="async", steps=24, **common),
            "bounded_delay s=2": ps.train(mode="bounded_delay", staleness=2, steps=8, **common)}


@pytest.fixture(scope="module")
def view(runs):
    return ParameterServerView(runs, windows=4)


def _titles(svg, prefix):
    return re.findall(r"<title>(" + re.escape(prefix) + r"[^<]*)</title>", svg)


# -- lanes: one per task, spans equal the records ----------------------------------------------------
def test_one_lane_per_ps_and_worker_task_holding_exactly_the_records_phases(view, runs):
    for name, record in runs.items():
        lanes = view.lanes[name]
        assert [lane.task for lane in lanes] == [f"/job:ps/replica:0/task:{j}" for j in range(2)] + \
            [f"/job:worker/replica:0/task:{w}" for w in range(4)]
        assert [lane.title for lane in lanes] == ["ps 0", "ps 1", "worker 0", "worker 1", "worker 2", "worker 3"]
        drawn = [p for lane in lanes for p in lane.phases]
        assert sorted(drawn, key=repr) == sorted(record.phases, key=repr)
        assert all(p.task == lane.task for lane in lanes for p in lane.phases)
        assert all(a.start_s <= b.start_s for lane in lanes for a, b in zip(lane.phases, lane.phases[1:]))


def test_each_window_draws_one_bar_per_phase_it_intersects(view, runs):
    for name, record in runs.items():
        frames = view.frames[name].children
        assert len(frames) == 5 and view.frames[name].selected_index == 0
        for k, (t0, t1) in enumerate(view.windows[name]):
            svg = frames[k + 1].value
            for kind in KINDS:
                expected = sum(1 for lane in view.lanes[name] for p in _ps_lanes.phases_in(lane, t0, t1)
                               if p.kind == kind)
                assert len(_titles(svg, f"{kind} step ")) == expected, (name, k, kind)
            applies = sum(1 for lane in view.lanes[name] for p in _ps_lanes.phases_in(lane, t0, t1)
                          if p.kind == "apply")
            assert len(_titles(svg, "update ")) == applies
        seen = {p for lane in view.lanes[name] for t0, t1 in view.windows[name]
                for p in _ps_lanes.phases_in(lane, t0, t1)}
        assert seen == set(record.phases)  # the windows tile the run: every phase is drawn somewhere


def test_windows_tile_the_run_or_the_given_span(runs):
    record = runs["sync"]
    end = _ps_lanes.run_end_s(record)
    assert end == max(p.end_s for p in record.phases) and end >= record.sim_time_s
    spans = _ps_lanes.windows(end, 4)
    assert spans[0][0] == 0.0 and spans[-1][1] == pytest.approx(end)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    zoomed = ParameterServerView(record, windows=3, span_s=0.002)
    assert zoomed.windows["sync"] == [(0.0, 0.002 / 3), (0.002 / 3, 0.004 / 3), (0.004 / 3, 0.002)]
    controls = next(c for c in zoomed.children if isinstance(c, ipywidgets.HBox))
    assert "the first 2.0 ms cut into 3 equal time windows" in controls.children[2].value


def test_bar_geometry_follows_the_times():
    lane = _ps_lanes.Lane("/job:worker/replica:0/task:0", "worker 0",
                          (PhaseRecord("/job:worker/replica:0/task:0", "compute", 0.001, 0.003, 7),))
    plot = 500 - _ps_lanes.LABEL_WIDTH - _ps_lanes.RIGHT_PAD
    svg = _ps_lanes.draw([lane], 0.0, 0.004, 500, "caption")
    x0, w = _ps_lanes.LABEL_WIDTH + plot / 4, plot / 2
    assert f'<rect x="{x0:.1f}" y="{_ps_lanes.CAPTION_HEIGHT + 2:.1f}" width="{w:.1f}"' in svg
    assert "<title>compute step 7: 1.0 ms → 3.0 ms</title>" in svg and ">7</text>" in svg
    clipped = _ps_lanes.draw([lane], 0.002, 0.004, 500, "caption")  # the bar is cut at the window's start
    assert f'<rect x="{_ps_lanes.LABEL_WIDTH:.1f}" y="{_ps_lanes.CAPTION_HEIGHT + 2:.1f}" width="{w:.1f}"' in clipped
    assert f'height="{_ps_lanes.height(1)}"' in svg


def test_overview_columns_hold_each_kinds_share_of_time(runs):
    record = runs["sync"]
    end = _ps_lanes.run_end_s(record)
    edges = _ps_lanes.overview_edges(record, end, 600)
    applied_at = sorted({u.version_applied_at: u.sim_time_s for u in record.updates if u.applied}.values())
    assert edges[0] == 0.0 and edges[-1] == end and set(edges[1:-1]) <= set(applied_at)
    for lane in _ps_lanes.lanes(record):
        for kind in KINDS:
            shares = _ps_lanes.coverage(lane.phases, kind, edges)
            covered = sum(s * (b - a) for s, a, b in zip(shares, edges, edges[1:]))
            total = sum(p.end_s - p.start_s for p in lane.phases if p.kind == kind)
            assert covered == pytest.approx(total, rel=1e-9, abs=1e-15)
    no_updates = _ps_lanes.overview_edges(record.__class__(**{**record.__dict__, "updates": ()}), 1.0, 60)
    assert no_updates == [i / 10 for i in range(11)]


def test_time_per_task_table_sums_the_lanes(view, runs):
    lanes = view.lanes["sync"]
    worker3 = _ps_lanes.time_by_kind(lanes[5])
    assert worker3["compute"] == pytest.approx(sum(p.end_s - p.start_s for p in runs["sync"].phases
                                                   if p.task.endswith("task:3") and p.kind == "compute"
                                                   and p.task.startswith("/job:worker")))
    assert "wait" not in worker3  # the straggler never waits in sync: everyone waits for it
    assert all(_ps_lanes.time_by_kind(lane)["wait"] > 0 for lane in lanes[2:5])
    table = view.stack.children[0].children[1].value
    assert "sync: time per task and phase" in table and "ps inbound link" in table


def test_faults_are_marked_on_their_lane_and_errors_shortened(runs):
    record = runs["sync"]
    t = record.phases[len(record.phases) // 2].start_s
    fault = FaultRecord(t, "/job:worker/replica:0/task:2", "worker_died", message="worker 2 died before its step 3")
    failed = record.__class__(**{**record.__dict__, "faults": (fault,), "status": "failed",
                                 "error": "UnavailableError: " + "x" * 200})
    view = ParameterServerView({"failed": failed}, windows=2)
    marked = [i for i, page in enumerate(view.frames["failed"].children)
              if f"<title>worker_died at {_ps_lanes._us(t)}: worker 2 died before its step 3</title>" in page.value]
    inside = [k + 1 for k, (t0, t1) in enumerate(view.windows["failed"]) if t0 <= t <= t1]
    assert marked == [0] + inside
    y = _ps_lanes.CAPTION_HEIGHT + 4 * _ps_lanes.LANE_HEIGHT + 16  # lane 4: ps 0, ps 1, worker 0, 1, 2
    assert f'y="{y}" font-size="15" text-anchor="middle" fill="{_palette.TRANSFER}" font-weight="bold">✕' \
        in view.frames["failed"].children[0].value
    assert ">failed: UnavailableError: " + "x" * 63 + "…<" in view.children[0].value  # 90 characters


# -- staleness, load, curves, summary ----------------------------------------------------------------
def test_histograms_count_exactly_the_runs_staleness_records(view, runs):
    svg = view.children[-2].value
    for name, record in runs.items():
        expected = {}
        for u in record.updates:
            if u.applied:
                expected[u.staleness] = expected.get(u.staleness, 0) + 1
        assert view.histograms[name] == dict(sorted(expected.items()))
        for s, n in expected.items():
            assert f"<title>{name}: {n} gradients applied with staleness {s}</title>" in svg
        assert len(_titles(svg, f"{name}: ")) == len(expected)
        assert f"{record.updates_applied} applied · {record.updates_dropped} dropped" in svg
    assert set(view.histograms["sync"]) == {0} and max(view.histograms["async"]) >= 2
    assert max(view.histograms["bounded_delay s=2"]) <= 2


def test_ps_traffic_table_shows_each_ps_tasks_pushes_and_busy_link_and_the_hot_ps(view, runs):
    html = view.children[-3].value
    assert "ps load over the run" in html and html.count("(hot)") == len(runs)
    for name, record in runs.items():
        traffic = record.ps_traffic()
        assert sum(n for n, _ in traffic.values()) == sum(p.kind == "recv" for p in record.phases) > 0
        assert set(traffic) == {load.task for load in record.ps_load}
        hot = max(traffic, key=lambda task: traffic[task][1])
        pushes, busy = traffic[hot]
        cells = re.sub(r"<td[^>]*>", "<td>", html)
        assert f"<td>{name}</td><td>{_ps_lanes.task_title(hot)} (hot)</td><td>{pushes}</td>" in cells


def test_ps_load_bars_show_bytes_and_variables_per_ps_task(view, runs):
    loads = runs["sync"].ps_load
    assert [load.task for load in loads] == ["/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"]
    svg = view.children[-3].value
    assert svg.count("<svg") == 1  # all three runs hold the same load: drawn once
    for load in loads:
        assert f"<title>{load.task}: {load.num_variables} variables, {load.nbytes:,} B: " \
               f"{', '.join(load.variables)}</title>" in svg
    widths = [float(w) for w in re.findall(r'<rect x="60" y="\d+" width="([\d.]+)"', svg)]
    big = max(loads, key=lambda load: load.nbytes)
    assert max(widths) == pytest.approx(max(960 * 0.35, 120), abs=0.05)
    assert min(widths) == pytest.approx(max(960 * 0.35, 120) * min(lo.nbytes for lo in loads) / big.nbytes, abs=0.05)


def test_curves_plot_every_evaluation_of_every_run(view, runs):
    html = view.children[-1].value
    assert html.count("<circle") == 2 * sum(len(r.evals) for r in runs.values())
    for i, (name, record) in enumerate(runs.items()):
        assert f'stroke="{_ps_charts.run_color(i)}"' in html
        for e in record.evals:
            assert f"{name}: accuracy {e.accuracy:.4g} at " in html and f"{name}: loss {e.loss:.4g} at " in html
    assert "test accuracy" in html and "simulated time" in html


def test_summary_table_reports_each_runs_numbers(view, runs):
    summary = view.children[0].value
    for name, r in runs.items():
        assert f"<td style=\"border-bottom:1px solid #E0E0E0;padding:2px 8px;text-align:left;vertical-align:top\">" \
               f"{name}</td>" in summary
        assert f"{r.test_accuracy:.4f}" in summary
    assert runs["async"].updates_applied == 24 and runs["sync"].updates_applied == 32


# -- controls, repr, inputs --------------------------------------------------------------------------
def test_run_picker_and_windows_are_linked_with_jslink(view, runs):
    pairs = {(link.source[0], link.source[1], link.target[0], link.target[1]) for link in view.links}
    expected = {(view.run_picker, "index", view.stack, "selected_index"), (view.play, "value", view.slider, "value")}
    expected |= {(view.slider, "value", view.frames[n], "selected_index") for n in runs}
    assert pairs == expected
    assert list(view.run_picker.options) == list(runs) and len(view.stack.children) == 3
    assert view.slider.max == view.play.max == 4 and view.slider.value == 0
    state = embed_data(views=[view])["manager_state"]["state"]
    assert sum(m["model_name"] == "LinkModel" for m in state.values()) >= 5  # saved with a static export


def test_repr_is_stable_and_names_runs(runs):
    view = ParameterServerView(runs["bounded_delay s=2"], windows=2)
    assert repr(view) == "<ParameterServerView: 1 run, 4 workers, 2 ps>"
    assert list(view.runs) == ["bounded_delay s=2"] and view.run_picker not in view.children
    listed = ParameterServerView([runs["sync"], runs["async"], runs["sync"]], windows=1)
    assert list(listed.runs) == ["sync", "async", "sync (2)"]
    assert repr(listed) == "<ParameterServerView: 3 runs, 4 workers, 2 ps>"
    backup = runs["sync"].__class__(**{**runs["sync"].__dict__, "replicas_to_aggregate": 3})
    assert run_name(backup) == "sync 3 of 4"
    again = ParameterServerView(runs, windows=4)
    assert [c.value for c in again.frames["async"].children] == \
        [c.value for c in ParameterServerView(runs, windows=4).frames["async"].children]
    assert "0x" not in repr(again)


def test_bad_inputs_raise(runs):
    with pytest.raises(TypeError, match="expects a RunRecord .* got str"):
        ParameterServerView("sync")
    with pytest.raises(TypeError, match="expects a RunRecord .* got int"):
        ParameterServerView({"a": 1})
    with pytest.raises(ValueError, match="at least one run"):
        ParameterServerView({})
    with pytest.raises(ValueError, match="windows must be >= 1"):
        ParameterServerView(runs["sync"], windows=0)
    with pytest.raises(ValueError, match="span_s must be > 0"):
        ParameterServerView(runs["sync"], span_s=0)


# -- ClusterView -------------------------------------------------------------------------------------
@pytest.fixture
def cluster():
    before = set(threading.enumerate())
    spec = tf.train.ClusterSpec({"ps": ["cvps0:1", "cvps1:1"], "worker": ["cvw0:1", "cvw1:1"]})
    servers = [tf.train.Server(spec, "ps", i, config=CPU_ONLY) for i in range(2)]
    servers.append(tf.train.Server(spec, "worker", 0, config=tf.ConfigProto(device_count={"CPU": 1, "GPU": 2})))
    servers.append(tf.train.Server(spec, "worker", 1, config=CPU_ONLY))
    yield spec, servers
    for server in servers:
        server.stop()
    assert set(threading.enumerate()) <= before


def _mlp(spec):
    graph = tf.Graph()
    with graph.as_default(), tf.device(tf.train.replica_device_setter(cluster=spec,
                                                                      worker_device="/job:worker/task:0")):
        w1 = tf.Variable(tf.zeros([64, 32]), name="w1")
        b1 = tf.Variable(tf.zeros([32]), name="b1")
        w2 = tf.Variable(tf.zeros([32, 10]), name="w2")
        out = tf.reduce_sum(tf.matmul(tf.matmul(tf.ones([2, 64]), w1) + b1, w2))
        init = tf.global_variables_initializer()
    return graph, init, out


def test_cluster_view_of_a_spec_lists_jobs_tasks_and_default_devices():
    spec = tf.train.ClusterSpec({"ps": ["a:1"], "worker": ["b:1", "c:1", "d:1"]})
    view = ClusterView(spec)
    assert [(t.job, t.task_index, t.address, t.running) for t in view.tasks] == \
        [("ps", 0, "a:1", False), ("worker", 0, "b:1", False), ("worker", 1, "c:1", False), ("worker", 2, "d:1", False)]
    assert all(t.devices == (f"{t.task_name}/device:CPU:0",) for t in view.tasks)
    assert repr(view) == "<ClusterView: 2 jobs, 4 tasks, 4 devices>"
    svg = view.picture.value
    assert svg.count("<title>/job:") == 4 + 4  # a box and a device chip per task
    assert svg.count("<line") == 3  # every worker joined to the one ps task
    assert "no server" in svg and view.client_task is None and view.variables == ()
    assert repr(ClusterView({"worker": ["x:1"]})) == "<ClusterView: 1 job, 1 task, 1 device>"


def test_cluster_view_of_a_session_places_the_variables_on_the_ps_tasks(cluster):
    spec, servers = cluster
    graph, init, out = _mlp(spec)
    with tf.Session(servers[2].target, graph=graph) as sess:
        before = ClusterView(sess)
        assert {v.name: v.assigned_device for v in before.variables} == {"w1": "", "b1": "", "w2": ""}
        sess.run(init)
        sess.run(out)
        view = ClusterView(sess)
    assert view.client_task == "/job:worker/replica:0/task:0" and all(t.running for t in view.tasks)
    placed = {v.name: (v.requested_device, v.assigned_device, v.task, v.nbytes, v.shape) for v in view.variables}
    assert placed == {"w1": ("/job:ps/task:0", "/job:ps/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:0",
                             64 * 32 * 4, (64, 32)),
                      "b1": ("/job:ps/task:1", "/job:ps/replica:0/task:1/device:CPU:0", "/job:ps/replica:0/task:1",
                             32 * 4, (32,)),
                      "w2": ("/job:ps/task:0", "/job:ps/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:0",
                             32 * 10 * 4, (32, 10))}
    assert view.ps_load == ps_load_table(graph, num_tasks=2)
    assert view.tasks[2].devices == tuple(f"/job:worker/replica:0/task:0/device:{d}" for d in ("CPU:0", "GPU:0",
                                                                                             "GPU:1"))
    assert repr(view) == "<ClusterView: 2 jobs, 4 tasks, 6 devices, 3 variables>"
    svg = view.picture.value
    assert "this session" in svg and 'stroke-width="2.5"' in svg
    assert "w1 · float32 64×32 · 8.2 KB" in svg and "2 variables, 9.5 KB" in svg and "1 variable, 128 B" in svg
    assert svg.count("<line") == 4  # 2 workers × 2 ps tasks
    tables = view.children[2].value
    assert "/job:ps/replica:0/task:1/device:CPU:0" in tables and "8,192 B" in tables
    assert "<title>/job:ps/replica:0/task:0: 2 variables, 9,472 B: w1, w2</title>" in tables
    state = embed_data(views=[view])["manager_state"]["state"]  # a static export keeps the picture
    assert any(m["state"].get("value") == view.picture.value for m in state.values())


def test_cluster_view_of_a_server_and_of_a_spec_that_is_running(cluster):
    spec, servers = cluster
    by_server = ClusterView(servers[3])
    assert by_server.client_task == "/job:worker/replica:0/task:1" and all(t.running for t in by_server.tasks)
    assert repr(by_server) == repr(ClusterView(spec)) == "<ClusterView: 2 jobs, 4 tasks, 6 devices>"
    graph, _, _ = _mlp(spec)
    with_graph = ClusterView(spec, graph=graph)  # requested devices only: nothing was run
    assert [v.task for v in with_graph.variables] == ["/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1",
                                                       "/job:ps/replica:0/task:0"]
    assert all(v.assigned_device == "" for v in with_graph.variables)


def test_cluster_view_of_a_local_session_and_bad_input():
    graph = tf.Graph()
    with graph.as_default():
        tf.Variable(1.0, name="v")
    with tf.Session(graph=graph, config=tf.ConfigProto(device_count={"CPU": 1, "GPU": 1})) as sess:
        view = ClusterView(sess)
    assert [t.task_name for t in view.tasks] == ["/job:localhost/replica:0/task:0"]
    assert view.tasks[0].devices == ("/job:localhost/replica:0/task:0/device:CPU:0",
                                     "/job:localhost/replica:0/task:0/device:GPU:0")
    assert [(v.name, v.task, v.shape, v.nbytes) for v in view.variables] == \
        [("v", "/job:localhost/replica:0/task:0", (), 4)]
    assert view.ps_load == () and repr(view) == "<ClusterView: 1 job, 1 task, 2 devices, 1 variable>"
    with pytest.raises(TypeError):
        ClusterView(["ps:1"])
    assert isinstance(view, ipywidgets.VBox)
