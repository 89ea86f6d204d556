"""Partitioning: hand-built expected partitions, case by case, as TF's graph_partition.cc makes them."""

import numpy as np
import pytest
from seed_programs import placement_program

import dfcore as tf
from dfcore.framework.graph_def import node_attrs
from dfcore.framework.protos import GRAPH_DEF_VERSION
from dfcore.runtime.device_set import DeviceSet, incarnation_of
from dfcore.runtime.partition import PartitionStats, partition
from dfcore.runtime.placer import place

_P = "/job:localhost/replica:0/task:0/device:"
CPU0, GPU0, GPU1, GPU2, GPU3 = (_P + n for n in ("CPU:0", "GPU:0", "GPU:1", "GPU:2", "GPU:3"))


def _partition(feeds=(), fetches=(), call_frame=True):
    ops = tf.get_default_graph().get_operations()
    fed = set(feeds)
    ops = [op for op in ops if not any(t in fed for t in op.outputs)]
    placement = place(ops, DeviceSet.from_config(None))
    return partition(ops, placement, feeds, fetches, client_device=CPU0, call_frame=call_frame)


def _layout(parts):
    """{device: [(name, op, inputs), ...]} in partition order."""
    return {device: [(n.name, n.op, n.inputs) for n in graph.nodes] for device, graph in parts.items()}


def _pair_attrs(tensor_name, src_dev, dst_dev, src, dst):
    return {"tensor_name": tensor_name, "send_device": src_dev, "send_device_incarnation": incarnation_of(src_dev),
            "recv_device": dst_dev, "client_terminated": False, "_src": src, "_dst": dst}


def test_cross_device_data_edge_becomes_a_send_recv_pair():
    with tf.device("/gpu:0"):
        a = tf.constant([1.0, 2.0], name="a")
    with tf.device("/gpu:1"):
        tf.identity(a, name="b")
    parts = _partition()
    assert _layout(parts) == {
        GPU0: [("a", "Const", ()), ("a/_0", "_Send", ("a",))],
        GPU1: [("b", "Identity", ("a/_1",)), ("a/_1", "_Recv", ())],
    }
    attrs = _pair_attrs("edge_0_a", GPU0, GPU1, "a", "b")
    assert parts[GPU0].node("a/_0").attrs == {"T": tf.float32, **attrs}
    assert parts[GPU1].node("a/_1").attrs == {"tensor_type": tf.float32, **attrs}
    assert parts[GPU0].node("a/_0").original is None and parts[GPU0].node("a").original is a.op
    assert parts.stats == PartitionStats(1, 0, 1, 0, 0)
    assert (parts.stats.pairs_inserted, parts.stats.vlog_line()) == (1, "Added send/recv: controls=0, data=1")


def test_one_tensor_consumed_twice_on_one_device_crosses_once():
    with tf.device("/gpu:0"):
        a = tf.constant([1.0, 2.0], name="a")
    with tf.device("/gpu:1"):
        tf.identity(a, name="b")
        tf.negative(a, name="c")
    parts = _partition()
    assert _layout(parts) == {
        GPU0: [("a", "Const", ()), ("a/_0", "_Send", ("a",))],
        GPU1: [("b", "Identity", ("a/_1",)), ("a/_1", "_Recv", ()), ("c", "Neg", ("a/_1",))],
    }
    assert parts.stats == PartitionStats(2, 0, 1, 0, 1)


def test_one_tensor_consumed_on_two_other_devices_crosses_twice():
    with tf.device("/gpu:0"):
        a = tf.constant([1.0, 2.0], name="a")
    with tf.device("/gpu:1"):
        tf.identity(a, name="b")
    with tf.device("/cpu:0"):
        tf.negative(a, name="c")
    parts = _partition()
    assert _layout(parts) == {
        GPU0: [("a", "Const", ()), ("a/_0", "_Send", ("a",)), ("a/_2", "_Send", ("a",))],
        GPU1: [("b", "Identity", ("a/_1",)), ("a/_1", "_Recv", ())],
        CPU0: [("c", "Neg", ("a/_3",)), ("a/_3", "_Recv", ())],
    }
    assert parts[CPU0].node("a/_3").attrs == {"tensor_type": tf.float32,
                                              **_pair_attrs("edge_1_a", GPU0, CPU0, "a", "c")}
    assert parts.stats.pairs_inserted == 2 and parts.stats.transfers_saved_by_dedup == 0


def test_second_output_is_named_with_its_index():
    with tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, None, name="x")
        _, shape1 = tf.shape_n([x, x], name="shapes")
    with tf.device("/gpu:1"):
        tf.identity(shape1, name="use")
    parts = _partition()
    assert parts[GPU0].node("shapes/_0").inputs == ("shapes:1",)
    assert parts[GPU1].node("use").inputs == ("shapes/_1",)
    assert parts[GPU0].node("shapes/_0").get_attr("T") == tf.int32


def test_cross_device_control_edge_goes_through_a_dummy_const_and_an_identity():
    with tf.device("/gpu:0"):
        a = tf.constant([1.0, 2.0], name="a")
    with tf.device("/gpu:1"):
        with tf.control_dependencies([a]):
            tf.constant(3.0, name="c")
            tf.constant(4.0, name="d")
    parts = _partition()
    assert _layout(parts) == {
        GPU0: [("a", "Const", ()), ("a/ctrl/_0", "Const", ("^a",)), ("a/_1", "_Send", ("a/ctrl/_0",))],
        GPU1: [("c", "Const", ("^a/_3",)), ("a/_2", "_Recv", ()), ("a/_3", "Identity", ("a/_2",)),
               ("d", "Const", ("^a/_3",))],
    }
    dummy = parts[GPU0].node("a/ctrl/_0")
    assert dummy.get_attr("dtype") == tf.float32
    assert dummy.get_attr("value").shape == (0,) and dummy.get_attr("value").dtype == np.float32
    attrs = _pair_attrs("edge_0_a", GPU0, GPU1, "a", "c")
    assert parts[GPU0].node("a/_1").attrs == {"T": tf.float32, **attrs}
    assert parts[GPU1].node("a/_2").attrs == {"tensor_type": tf.float32, **attrs}
    assert parts.stats == PartitionStats(0, 2, 0, 1, 1)
    assert parts.stats.vlog_line() == "Added send/recv: controls=1, data=0"


def _feed_and_fetch_program():
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.device("/gpu:1"):
        y = tf.identity(x, name="y")
    with tf.device("/cpu:0"):
        w = tf.negative(x, name="w")
    return x, y, w


def test_feeds_arrive_through_arg_and_fetches_leave_through_retval_on_the_client_device():
    x, y, w = _feed_and_fetch_program()
    parts = _partition(feeds=[x], fetches=[y, w, y])
    assert _layout(parts) == {
        GPU1: [("y", "Identity", ("_arg_x_0_0/_1",)), ("_arg_x_0_0/_1", "_Recv", ()), ("y/_2", "_Send", ("y",))],
        CPU0: [("_arg_x_0_0/_0", "_Send", ("_arg_x_0_0",)), ("w", "Neg", ("_arg_x_0_0",)), ("_arg_x_0_0", "_Arg", ()),
               ("_retval_y_0_0", "_Retval", ("y/_3",)), ("y/_3", "_Recv", ()), ("_retval_w_0_1", "_Retval", ("w",))],
    }
    assert parts[CPU0].node("_arg_x_0_0").attrs == {"T": tf.float32, "index": 0}
    assert parts[CPU0].node("_retval_y_0_0").attrs == {"T": tf.float32, "index": 0}
    assert parts[CPU0].node("_retval_w_0_1").attrs == {"T": tf.float32, "index": 1}
    # Edge ids: none among the ops, then the feed edges (x→y 0, x→w 1), then the fetch edges (y 2, w 3).
    assert parts[CPU0].node("_arg_x_0_0/_0").get_attr("tensor_name") == "edge_0__arg_x_0_0"
    assert parts[GPU1].node("y/_2").attrs == {"T": tf.float32,
                                              **_pair_attrs("edge_2_y", GPU1, CPU0, "y", "_retval_y_0_0")}
    # one pair per fetch computed elsewhere (y), none for the fetch computed on the client (w)
    assert parts.stats == PartitionStats(2, 0, 2, 0, 0)
    assert not any(n.attrs.get("client_terminated") for g in parts.values() for n in g.nodes)


def test_partial_runs_feed_and_fetch_through_client_terminated_recv_and_send():
    x, y, w = _feed_and_fetch_program()
    parts = _partition(feeds=[x], fetches=[y, w, y], call_frame=False)
    assert _layout(parts) == {
        GPU1: [("y", "Identity", ("_recv_x_0/_1",)), ("_recv_x_0/_1", "_Recv", ()), ("y/_2", "_Send", ("y",))],
        CPU0: [("_recv_x_0/_0", "_Send", ("_recv_x_0",)), ("w", "Neg", ("_recv_x_0",)), ("_recv_x_0", "_Recv", ()),
               ("_send_y_0", "_Send", ("y/_3",)), ("y/_3", "_Recv", ()), ("_send_w_0", "_Send", ("w",))],
    }
    client = {"send_device": CPU0, "send_device_incarnation": incarnation_of(CPU0), "recv_device": CPU0,
              "client_terminated": True}
    assert parts[CPU0].node("_recv_x_0").attrs == {"tensor_type": tf.float32, "tensor_name": "x:0", **client}
    assert parts[CPU0].node("_send_y_0").attrs == {"T": tf.float32, "tensor_name": "y:0", **client}
    assert parts[CPU0].node("_recv_x_0/_0").get_attr("tensor_name") == "edge_0__recv_x_0"
    assert parts[GPU1].node("y/_2").attrs == {"T": tf.float32,
                                              **_pair_attrs("edge_2_y", GPU1, CPU0, "y", "_send_y_0")}
    assert parts.stats == PartitionStats(2, 0, 2, 0, 0)


def test_a_feed_nobody_consumes_adds_nothing_and_scoped_names_keep_their_slashes():
    unused = tf.placeholder(tf.float32, [], name="unused")
    with tf.name_scope("layer"):
        x = tf.placeholder(tf.float32, [], name="x")
        with tf.device("/cpu:0"):
            tf.identity(x, name="y")
    parts = _partition(feeds=[x, unused])  # the unused feed keeps its arg index (1) but gets no node
    assert _layout(parts) == {CPU0: [("layer/y", "Identity", ("_arg_layer/x_0_0",)),
                                     ("_arg_layer/x_0_0", "_Arg", ())]}


def test_seeds_program_partitions_as_tf():
    total = placement_program()
    parts = _partition(fetches=[total])
    assert list(parts) == [GPU2, GPU3, CPU0]
    assert _layout(parts) == {
        GPU2: [("Const", "Const", ()), ("Const_1", "Const", ()), ("MatMul", "MatMul", ("Const", "Const_1")),
               ("MatMul/_0", "_Send", ("MatMul",))],
        GPU3: [("Const_2", "Const", ()), ("Const_3", "Const", ()), ("MatMul_1", "MatMul", ("Const_2", "Const_3")),
               ("MatMul_1/_2", "_Send", ("MatMul_1",))],
        CPU0: [("AddN", "AddN", ("MatMul/_1", "MatMul_1/_3")), ("MatMul/_1", "_Recv", ()),
               ("MatMul_1/_3", "_Recv", ()), ("_retval_AddN_0_0", "_Retval", ("AddN",))],
    }
    assert parts[CPU0].node("MatMul/_1").attrs == {"tensor_type": tf.float32,
                                                   **_pair_attrs("edge_4_MatMul", GPU2, CPU0, "MatMul", "AddN")}
    assert parts[CPU0].node("MatMul_1/_3").get_attr("tensor_name") == "edge_5_MatMul_1"
    assert parts.stats.vlog_line() == "Added send/recv: controls=0, data=2"
    graph_def = parts[GPU2].as_graph_def()
    assert isinstance(graph_def, tf.GraphDef) and graph_def.versions.producer == GRAPH_DEF_VERSION
    send = graph_def.node[3]
    assert (send.name, send.op, list(send.input), send.device) == ("MatMul/_0", "_Send", ["MatMul"], GPU2)
    incarnation = incarnation_of(GPU2)
    assert node_attrs(send) == {"T": tf.float32, **_pair_attrs("edge_4_MatMul", GPU2, CPU0, "MatMul", "AddN"),
                                "send_device_incarnation": incarnation - (2 ** 64 if incarnation >= 2 ** 63 else 0)}
    assert tf.GraphDef.FromString(graph_def.SerializeToString()) == graph_def


def test_reference_edges_are_never_shared_and_wait_for_the_other_inputs():
    with tf.device("/gpu:0"):
        v = tf.Variable(1.0, name="v")
    ref = v.op.outputs[0]
    with tf.device("/gpu:1"):
        other = tf.placeholder(tf.float32, [], name="other")
        tf.add(ref, other, name="s")
        tf.identity(ref, name="t")
    parts = _partition(feeds=[other])
    gpu1 = {n.name: n.inputs for n in parts[GPU1].nodes}
    assert gpu1["s"] == ("v/_1", "_arg_other_0_0/_3") and gpu1["t"] == ("v/_5",)
    assert gpu1["v/_1"] == ("^_arg_other_0_0/_3",) and gpu1["v/_5"] == ()
    assert parts.stats.data_pairs == 3 and parts.stats.transfers_saved_by_dedup == 0


def test_the_users_graph_is_not_changed():
    with tf.device("/gpu:0"):
        a = tf.constant([1.0, 2.0], name="a")
    with tf.device("/gpu:1"):
        b = tf.identity(a, name="b")
    before = tf.get_default_graph().as_graph_def()
    _partition(fetches=[b])
    after = tf.get_default_graph().as_graph_def()
    assert before == after and b.op.assigned_device is None


def test_endpoint_errors_use_tfs_wording():
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.identity(x, name="y")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"^x:0 is both fed and fetched\.$"):
        _partition(feeds=[x], fetches=[x])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r'^Endpoint "x:0" fed more than once\.$'):
        _partition(feeds=[x, x], fetches=[y])
    with pytest.raises(tf.errors.InvalidArgumentError, match="missing input x:0 for y"):
        partition([y.op], {y.op: CPU0}, fetches=[y])


def test_partition_node_get_attr_names_a_missing_attr():
    tf.constant(1.0, name="a")
    node = _partition()[GPU0].node("a")
    with pytest.raises(ValueError, match="Node 'a' has no attr named 'T'"):
        node.get_attr("T")
    with pytest.raises(KeyError):
        _partition()[GPU0].node("missing")
