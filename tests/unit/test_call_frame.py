"""Call frames: Session.run feeds through _Arg and fetches through _Retval, as TF's DirectSession."""

import numpy as np
import pytest

import dfcore as tf
from dfcore.runtime.call_frame import CallFrame
from dfcore.runtime.subgraph import endpoint_name, parse_endpoint_name

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPUS = tf.ConfigProto(device_count={"CPU": 1, "GPU": 2})


@pytest.mark.parametrize("op_type, tensor, index, name", [
    ("_Arg", "x:0", 0, "_arg_x_0_0"), ("_Retval", "layer/out_1:2", 7, "_retval_layer/out_1_2_7"),
    ("_Recv", "x:0", None, "_recv_x_0"), ("_Send", "a_b:1", None, "_send_a_b_1"),
])
def test_endpoint_names_round_trip(op_type, tensor, index, name):
    assert endpoint_name(op_type, tensor, index) == name
    assert parse_endpoint_name(name) == (op_type, tensor, index)


def test_other_names_do_not_parse():
    assert parse_endpoint_name("MatMul/_0") is None and parse_endpoint_name("_arg_x_0") is None


def test_call_frame_errors_in_tfs_words():
    frame = CallFrame([np.ones(2)], 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"GetArg 1 is not within \[0, 1\)"):
        frame.get_arg(1)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Retval\[0\] does not have value"):
        frame.retval(0)
    frame.set_retval(0, 3.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Retval\[0\] has already been set."):
        frame.set_retval(0, 4.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"SetRetval 2 is not within \[0, 1\)"):
        frame.set_retval(2, 4.0)
    assert frame.retval(0) == 3.0


def test_indices_follow_sorted_names_and_values_keep_the_fetch_structure():
    x = tf.placeholder(tf.float32, [], name="x")
    w = tf.placeholder(tf.float32, [], name="w")
    with tf.device("/gpu:1"):
        b = tf.multiply(x, 2.0, name="b")
    a = tf.add(w, 1.0, name="a")
    with tf.Session(config=GPUS) as sess:
        assert sess.run({"b": b, "a": [a, x, a]}, {x: 3.0, w: 5.0}) == {"b": 6.0, "a": [6.0, 3.0, 6.0]}
        client = sess.partitions([b, a, x], {x: 3.0, w: 5.0})[CPU0]
    endpoints = {n.name: (n.op, n.attrs) for n in client.nodes if n.op in ("_Arg", "_Retval")}
    assert endpoints == {"_arg_w_0_0": ("_Arg", {"T": tf.float32, "index": 0}),
                         "_arg_x_0_1": ("_Arg", {"T": tf.float32, "index": 1}),
                         "_retval_a_0_0": ("_Retval", {"T": tf.float32, "index": 0}),
                         "_retval_b_0_1": ("_Retval", {"T": tf.float32, "index": 1})}  # x is fed: no _Retval


def test_feeds_and_fetches_skip_the_rendezvous_and_cost_nothing():
    x = tf.placeholder(tf.float32, [4], name="x")
    with tf.device("/gpu:1"):
        y = tf.square(x, name="y")
    metadata = tf.RunMetadata()
    with tf.Session(config=GPUS) as sess:
        out = sess.run(y, {x: np.arange(4.0)}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                       run_metadata=metadata)
    np.testing.assert_array_equal(out, np.arange(4.0) ** 2)
    assert [(t.src_device[-5:], t.dst_device[-5:]) for t in tf.step_records(metadata).transfers] == [("CPU:0", "GPU:1"),
                                                                                   ("GPU:1", "CPU:0")]
    stats = {n.node_name: n for d in tf.step_records(metadata).step_stats.dev_stats for n in d.node_stats}
    for name in ("_arg_x_0_0", "_retval_y_0_0"):
        assert stats[name].sim_end_micros == stats[name].sim_start_micros


def test_a_fetched_variable_is_read_when_the_retval_runs():
    v = tf.Variable([1.0, 2.0], name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(v.op.outputs[0]), [1.0, 2.0])
