"""DOT text of graphs and partitions, Graphviz rendering and its fallback, GraphView and PartitionView."""

import re
import sys

import ipywidgets
import numpy as np
import pytest
from _requirements import require_program
from seed_programs import placement_program

import dfcore as tf
from dfcore.runtime.partition import partition
from dfcore.runtime.sendrecv_ops import rendezvous_key
from widgets import GraphView, PartitionView, _dot, _optimizer_frames, _palette, _render
from widgets.partition_view import pair_rows

needs_dot = pytest.mark.usefixtures("dot_program")
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


@pytest.fixture
def dot_program():
    """Graphviz's ``dot``: the tests that render with it skip without it (fail under ``CI=true``)."""
    return require_program("dot", "Graphviz's dot", "apt-get install graphviz (make test does it)")


def seeds_program():
    """The seeds' placement program: two matmuls on GPU:2 and GPU:3, summed on the CPU."""
    total = placement_program()
    sess = tf.Session()
    sess.run(total)
    return sess, total


def two_device_program():
    """CPU + GPU: a colocated variable, a tensor used twice on the GPU (dedup), a control edge back."""
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        w = tf.Variable(tf.ones([3, 2]), name="w")
        h = tf.nn.relu(x, name="h")
    with tf.device("/gpu:0"):
        y = tf.matmul(h, w, name="y")
        z = tf.reduce_sum(h, name="z")
    with tf.device("/cpu:0"):
        with tf.control_dependencies([z.op]):
            out = tf.add(y, 1.0, name="out")
    sess = tf.Session(config=tf.ConfigProto(device_count={"CPU": 1, "GPU": 1}))
    sess.run(tf.global_variables_initializer())
    feed = {x: np.ones((2, 3), np.float32)}
    return sess, out, feed


def _clusters(dot):
    """{cluster label: set of node names declared in it (nested clusters included)}."""
    out, stack = {}, []
    for line in dot.splitlines():
        line = line.strip()
        if line.startswith('subgraph "cluster_'):
            stack.append(None)
        elif line.startswith("graph [label=") and stack and stack[-1] is None:
            stack[-1] = re.match(r'graph \[label="([^"]*)"', line).group(1)
            out[stack[-1]] = set()
        elif line == "}" and stack:
            stack.pop()
        elif re.match(r'"[^"]+" \[label=', line):
            for label in stack:
                out[label].add(re.match(r'"([^"]+)"', line).group(1))
    return out


def _records(sess):
    return {r.node_name: r for r in sess.placement_records()}


# -- DOT of the user graph ------------------------------------------------------------------------
def test_user_graph_has_one_cluster_per_device_in_reading_order():
    sess, _ = seeds_program()
    dot = _dot.graph_dot(sess.graph.get_operations(), _records(sess))
    assert _clusters(dot) == {"CPU:0": {"AddN"}, "GPU:2": {"Const", "Const_1", "MatMul"},
                              "GPU:3": {"Const_2", "Const_3", "MatMul_1"}}
    assert dot.index('label="CPU:0"') < dot.index('label="GPU:2"') < dot.index('label="GPU:3"')


def test_user_graph_colours_ops_by_device_and_marks_edges_that_cross_devices():
    sess, _ = seeds_program()
    dot = _dot.graph_dot(sess.graph.get_operations(), _records(sess))
    gpu2 = _palette.device_fill("/device:GPU:2")
    assert re.search(rf'"MatMul" \[label="MatMul", shape="box", style="rounded,filled", fillcolor="{gpu2}"', dot)
    assert f'"MatMul" -> "AddN" [color="{_palette.TRANSFER}", penwidth="1.6"];' in dot
    assert '"Const" -> "MatMul";' in dot  # same device: plain edge


def test_colocation_groups_are_outlined_inside_their_device_and_control_edges_dashed():
    sess, out, feed = two_device_program()
    sess.run(out, feed)
    dot = _dot.graph_dot(sess.graph.get_operations(), _records(sess))
    clusters = _clusters(dot)
    assert clusters["loc:@w"] == {"w", "w/Assign", "w/read"}
    assert clusters["loc:@w"] <= clusters["CPU:0"]
    assert re.search(r'graph \[label="loc:@w", color="#222222", fillcolor="white", style="dashed,rounded,filled"', dot)
    assert f'"z" -> "Const_1" [style="dashed", color="{_palette.TRANSFER}"];' in dot


def test_without_a_session_ops_sit_on_their_requested_device_and_groups_come_from_class_attrs():
    with tf.device("/gpu:1"):
        tf.Variable(1.0, name="v")
    tf.constant(2.0, name="free")
    dot = _dot.graph_dot(tf.get_default_graph().get_operations())
    clusters = _clusters(dot)
    assert clusters["unplaced"] == {"free"}
    assert {"v", "v/read", "v/Assign"} <= clusters["GPU:1"]
    assert clusters["loc:@v"] == {"v", "v/read", "v/Assign"}


def test_node_ids_are_added_when_a_prefix_is_given():
    tf.constant(1.0, name="a")
    tf.constant(2.0, name="b")
    dot = _dot.graph_dot(tf.get_default_graph().get_operations(), id_prefix="p-")
    assert 'id="p-0"' in dot and 'id="p-1"' in dot


def test_quote_escapes_quotes_backslashes_and_newlines():
    assert _dot.quote('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    label = _dot.html_lines([("<x & y>", 8, True)])
    assert "&lt;x &amp; y&gt;" in label and "<B>" in label and 'POINT-SIZE="8"' in label


@needs_dot
def test_names_that_need_escaping_still_render():
    dot = _dot.graph_dot([]).replace("}\n", '  "a\\"b\\\\c" [label="x"];\n}\n')
    assert "<svg" in _render.render(dot)


# -- DOT of partitions ----------------------------------------------------------------------------
def test_partition_panels_label_each_pair_with_tensor_name_and_rendezvous_key():
    sess, total = seeds_program()
    parts = sess.partitions(total)
    cpu = parts[CPU0]
    dot = _dot.partition_dot(cpu)
    recvs = [n for n in cpu.nodes if n.op == "_Recv" and not n.attrs["client_terminated"]]
    assert len(recvs) == 2
    for recv in recvs:
        key = rendezvous_key(recv)
        assert f"tensor_name: {recv.attrs['tensor_name']}" in dot
        assert f'tooltip="{recv.name}: {recv.attrs["tensor_name"]} | key {key}"' in dot
        first, *rest = _dot.wrapped_key(key)
        assert f"key: {first}" in dot and all(part in dot for part in rest)
        assert re.search(rf'"{re.escape(recv.name)}" \[label=<.*?>, shape="box", style="filled,bold,diagonals", '
                         rf'fillcolor="[^"]+", color="{_palette.TRANSFER}", penwidth="2"', dot)
    assert "_Recv ← GPU:2" in dot and "_Recv ← GPU:3" in dot
    assert f'"MatMul/_1" -> "AddN" [color="{_palette.TRANSFER}"];' in dot


def test_wrapped_key_keeps_every_character():
    key = "/job:a/replica:0/task:0/device:CPU:0;00000000000000ff;/job:a/replica:0/task:0/device:GPU:0;edge_1_x;0:0"
    assert "".join(_dot.wrapped_key(key)) == key
    assert len(_dot.wrapped_key(key)) == 5


def test_feeds_and_fetches_are_drawn_as_call_frame_endpoints_not_pairs():
    sess, out, feed = two_device_program()
    cpu = sess.partitions(out, feed)[CPU0]
    dot = _dot.partition_dot(cpu)
    assert "_Arg: feed x:0 (arg 0)" in dot and "_Retval: fetch out:0 (retval 0)" in dot
    for name, shape in (("_arg_x_0_0", "invtrapezium"), ("_retval_out_0_0", "trapezium")):
        assert re.search(rf'"{name}" \[label=<.*?>, shape="{shape}", style="filled,bold", fillcolor="[^"]+", '
                         rf'color="{_palette.CLIENT}"', dot)
    assert '"_arg_x_0_0" -> "h";' in dot and '"out" -> "_retval_out_0_0";' in dot  # plain edges: no transfer
    assert "_send_" not in dot and "_recv_" not in dot


def test_a_partial_runs_client_terminated_endpoints_are_drawn_in_the_client_grey():
    sess, out, feed = two_device_program()
    ops = [op for op in sess.graph.get_operations() if op.name != "x"]
    placement = {op: CPU0 for op in ops}
    (cpu,) = partition(ops, placement, list(feed), [out], client_device=CPU0, call_frame=False).values()
    dot = _dot.partition_dot(cpu)
    assert "_Recv: feed x:0 (rendezvous)" in dot and "_Send: fetch out:0 (rendezvous)" in dot
    assert re.search(rf'"_send_out_0" \[label=<.*?>, shape="cds", style="filled,bold", fillcolor="[^"]+", '
                     rf'color="{_palette.CLIENT}"', dot)


def test_control_edge_pairs_are_dashed_on_both_devices():
    sess, out, feed = two_device_program()
    parts = sess.partitions(out, feed)
    gpu = next(g for d, g in parts.items() if d != CPU0)
    dummy = next(n for n in gpu.nodes if n.op == "Const" and n.original is None)
    send = next(n for n in gpu.nodes if n.op == "_Send" and n.inputs == (dummy.name,))
    assert _dot.control_pair_nodes(gpu) == {dummy.name, send.name}
    dot = _dot.partition_dot(gpu)
    assert f'"{dummy.name}" -> "{send.name}" [style="dashed", color="{_palette.TRANSFER}"];' in dot
    assert re.search(rf'"{re.escape(send.name)}" \[label=<.*?>, shape="cds", style="filled,bold,dashed"', dot)
    cpu = parts[CPU0]
    recv = next(n for n in cpu.nodes if n.op == "_Recv" and n.attrs["tensor_name"] == send.attrs["tensor_name"])
    identity = next(n for n in cpu.nodes if n.op == "Identity" and n.original is None)
    assert _dot.control_pair_nodes(cpu) == {recv.name, identity.name}
    assert f'"{identity.name}" -> "Const_1" [style="dashed"];' in _dot.partition_dot(cpu)


def test_pair_rows_list_data_and_control_pairs_with_their_keys():
    sess, out, feed = two_device_program()
    parts = sess.partitions(out, feed)
    rows = pair_rows(parts)
    assert [r[1] for r in rows].count("data") == parts.stats.data_pairs == 3
    assert [r[1] for r in rows].count("control") == parts.stats.control_pairs == 1
    sends = {n.name: n for g in parts.values() for n in g.nodes if n.op == "_Send"}
    for tensor_name, _, _, _, send, _, key in rows:
        assert key == rendezvous_key(sends[send]) and tensor_name in key


# -- rendering --------------------------------------------------------------------------------------
@needs_dot
def test_render_gives_an_svg_that_fits_the_widget():
    html = _render.render('digraph G { "a" -> "b"; }')
    assert '<svg style="max-width:100%;height:auto"' in html and "<?xml" not in html
    assert "<title>a</title>" in html


def test_missing_dot_program_gives_a_message_and_the_dot_text(monkeypatch):
    monkeypatch.setenv("PATH", "")
    html = _render.render('digraph G { "a" -> "b"; }')
    assert "the dot program was not found on PATH" in html and "apt-get install -y graphviz" in html
    assert "<pre" in html and "&quot;a&quot; -&gt; &quot;b&quot;" in html


def test_missing_graphviz_package_gives_a_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    html = _render.render("digraph G { a; }")
    assert "the graphviz Python package is not installed" in html and "pip install graphviz" in html


@needs_dot
def test_dot_rejecting_the_source_gives_its_error_message():
    html = _render.render("digraph G { a -> }")
    assert "dot failed: Error: &lt;stdin&gt;: syntax error" in html and "<pre" in html


# -- GraphView ------------------------------------------------------------------------------------------
def test_graph_view_children_picker_and_details():
    sess, _ = seeds_program()
    view = GraphView(sess.graph, sess)
    header, picture, picker, details = view.children
    assert isinstance(picture, ipywidgets.HTML) and isinstance(picker, ipywidgets.Dropdown)
    assert picker.options == tuple(op.name for op in sess.graph.get_operations())
    assert view.dot == _dot.graph_dot(sess.graph.get_operations(), _records(sess), id_prefix=view._prefix)
    picker.value = "MatMul"
    text = details.value
    for piece in ("MatMul", "Const:0, Const_1:0", "transpose_a = False", "/device:GPU:2",
                  "/job:localhost/replica:0/task:0/device:GPU:2", "requested", "MatMul:0 float32 (2, 2)"):
        assert piece in text
    assert f"#{view._prefix}2 polygon" in text  # the picked node is outlined in the picture
    assert "GPU:3" in header.value and "colocation group" in header.value


def test_graph_view_repr_is_stable_and_without_addresses():
    sess, _ = seeds_program()
    view = GraphView(sess.graph, sess)
    assert repr(view) == "<GraphView: 7 ops on 3 devices>"
    assert view._repr_mimebundle_()["text/plain"] == repr(view)


def test_graph_view_without_session_or_dot_still_builds(monkeypatch):
    monkeypatch.setenv("PATH", "")
    tf.constant(1.0, name="c")
    view = GraphView(tf.get_default_graph())
    assert "dfcore-graph-fallback" in view.picture.value and "No session given" in view.children[0].value
    assert repr(view) == "<GraphView: 1 op on 1 device>"


def _optimized_program():
    with tf.device("/cpu:0"):  # TF's remapper fuses a MatMul only on a CPU
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        w = tf.constant(np.ones((3, 4), np.float32), name="w")
        b = tf.add(tf.constant(np.zeros(4, np.float32)), 0.5, name="b")
        y = tf.identity(tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b)) * 1.0, name="y")
    sess = tf.Session()
    feed = {x: np.ones((2, 3), np.float32)}
    sess.run(y, feed)
    return sess, y, feed


def test_graph_view_steps_through_the_optimizer_passes_without_a_kernel():
    sess, y, feed = _optimized_program()
    records = sess.optimizer_records(y, feed)
    view = GraphView(sess.graph, sess, passes=records)
    changed = [r for r in records if r.changed]
    assert [r.optimizer for r in changed] == ["constant_folding", "remapper", "arithmetic_optimizer",
                                              "dependency_optimizer"]
    frames = view.passes.stack.children
    assert len(frames) == 1 + len(changed) and view.passes.slider.max == len(changed)
    assert "as built" in frames[0].value and "after remapper (iteration 0)" in frames[2].value
    assert [(link.source, link.target) for link in view.passes.links] == [
        ((view.passes.play, "value"), (view.passes.slider, "value")),
        ((view.passes.slider, "value"), (view.passes.stack, "selected_index"))]
    remapper_frame = next(f for f in view.passes.frames if "remapper" in f[0])
    assert remapper_frame[2] == frozenset({"Relu"}) and ("Relu", "_FusedMatMul") in [g[:2] for g in remapper_frame[1]]
    dot = _optimizer_frames.snapshot_dot(remapper_frame[1], remapper_frame[2])
    assert '"Relu" [' in dot and 'penwidth="3"' in dot and '"w" -> "Relu"' in dot


def test_graph_view_passes_must_be_pass_records():
    sess, y, feed = _optimized_program()
    with pytest.raises(TypeError, match="PassRecords"):
        GraphView(sess.graph, sess, passes="constant_folding")
    with pytest.raises(TypeError, match="got str"):
        GraphView(sess.graph, sess, passes=["constant_folding"])
    assert "No optimizer pass ran" in GraphView(sess.graph, sess, passes=()).passes.stack.children[0].value


# -- PartitionView ------------------------------------------------------------------------------------
def test_partition_view_shows_before_then_one_panel_per_device_and_the_counts():
    sess, out, feed = two_device_program()
    view = PartitionView(sess, out, feed)
    counts, legend, panels, pairs = view.children
    assert len(panels.children) == 1 + len(view.partitions) == 3
    assert "1 _Arg (feeds), 1 _Retval (fetches): the call frame" in counts.value
    assert _palette.CLIENT in legend.value and _palette.TRANSFER in legend.value and "_Retval fetches" in legend.value
    assert view.devices[0] == CPU0
    assert "_Send" not in view.before_dot and 'label="before: the user graph"' in view.before_dot
    assert "Added send/recv: controls=1, data=3" in counts.value
    assert "4 (3 data, 1 control)" in counts.value and "transfers saved by de-duplication" in counts.value
    for row in view.pair_rows:
        assert row[0] in pairs.value
    assert repr(view) == "<PartitionView: 2 partitions, 4 pairs inserted (3 data, 1 control), 1 saved by dedup>"


@needs_dot
def test_partition_view_panels_are_svgs():
    sess, total = seeds_program()
    view = PartitionView(sess, total)
    assert all("<svg" in panel.value for panel in view.panels.children)
    assert repr(view) == "<PartitionView: 3 partitions, 2 pairs inserted (2 data, 0 control), 0 saved by dedup>"
