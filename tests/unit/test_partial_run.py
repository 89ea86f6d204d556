"""Session.partial_run_setup / partial_run: TF's semantics, errors and client-terminated endpoints."""

import numpy as np
import pytest

import dfcore as tf
from dfcore.runtime.partial_run import partial_run_handle

GPUS = tf.ConfigProto(device_count={"CPU": 1, "GPU": 2})


def _program():
    a = tf.placeholder(tf.float32, shape=[], name="a")
    b = tf.placeholder(tf.float32, shape=[], name="b")
    c = tf.placeholder(tf.float32, shape=[], name="c")
    with tf.device("/gpu:1"):
        r1 = tf.add(a, b, name="r1")
    r2 = tf.multiply(r1, c, name="r2")
    return a, b, c, r1, r2


def test_tfs_docstring_example_feeds_and_fetches_piecewise():
    a, b, c, r1, r2 = _program()
    with tf.Session(config=GPUS) as sess:
        h = sess.partial_run_setup([r1, r2], [a, b, c])
        assert h == "a:0,b:0,c:0->r1:0,r2:0//1/;0"
        res = sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
        assert res == 3.0
        assert sess.partial_run(h, r2, feed_dict={c: res}) == 9.0
        assert sess.partial_run_setup([r1], [a, b]).endswith(";1")


def test_the_plan_uses_client_terminated_recv_and_send_with_tfs_names():
    a, b, c, r1, r2 = _program()
    with tf.Session(config=GPUS) as sess:
        parts = sess.partitions([r1, r2], {a: 0, b: 0, c: 0}, partial_run=True)
    client = parts["/job:localhost/replica:0/task:0/device:CPU:0"]
    endpoints = sorted((n.name, n.op, n.get_attr("tensor_name")) for n in client.nodes
                       if n.attrs.get("client_terminated"))
    assert endpoints == [("_recv_a_0", "_Recv", "a:0"), ("_recv_b_0", "_Recv", "b:0"), ("_recv_c_0", "_Recv", "c:0"),
                         ("_send_r1_0", "_Send", "r1:0"), ("_send_r2_0", "_Send", "r2:0")]
    assert not any(n.op in ("_Arg", "_Retval") for g in parts.values() for n in g.nodes)
    assert parts.stats.data_pairs == 6  # a, b to GPU:1; r1, c to GPU:0 (r2 is there); r1, r2 to the CPU


def test_errors_in_tfs_words_leave_the_partial_run_usable():
    a, b, c, r1, r2 = _program()
    other = tf.placeholder(tf.float32, [], name="other")
    with tf.Session(config=GPUS) as sess:
        h = sess.partial_run_setup([r1, r2], [a, b, c])
        sess.partial_run(h, r1, {a: 1, b: 2})
        cases = [
            (lambda: sess.partial_run(h, r2, {a: 1}), "The feed a:0 has already been fed."),
            (lambda: sess.partial_run(h, r1), "The fetch r1:0 has already been fetched."),
            (lambda: sess.partial_run(h, r2, {other: 1}), "The feed other:0 was not specified in partial_run_setup."),
            (lambda: sess.partial_run(h, other + 1, {c: 1}), "was not specified in partial_run_setup."),
            (lambda: sess.partial_run(h, r2), "Fetch c:0 can't be computed from the feeds that have been fed so far."),
            (lambda: sess.partial_run("nope", r2, {c: 1}), "Must run 'setup' before performing partial runs!"),
        ]
        for call, message in cases:
            with pytest.raises(tf.errors.InvalidArgumentError, match=message.replace("(", r"\(")):
                call()
        with pytest.raises(RuntimeError, match="partial_run\\(\\) requires empty target_list."):
            sess.partial_run(h, r2.op, {c: 1})
        assert sess.partial_run(h, r2, {c: 2}) == 6.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="Must run 'setup'"):
            sess.partial_run(h, r2, {c: 2})  # finished: the handle is gone, as in TF


def test_setup_errors():
    a, b, c, r1, r2 = _program()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="r1:0 is both fed and fetched."):
            sess.partial_run_setup([r1], [a, b, r1])
        with pytest.raises(tf.errors.InvalidArgumentError, match='Endpoint "a:0" fed more than once.'):
            sess.partial_run_setup([r1], [a, a, b])
        with pytest.raises(TypeError, match="Cannot interpret feed_list key as Tensor"):
            sess.partial_run_setup([r1], ["no_such:0"])
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
        sess.partial_run_setup([r1], [a, b])


def test_variable_writes_commit_when_the_last_fetch_is_taken():
    a, b, c, r1, r2 = _program()
    v = tf.Variable(1.0, name="v")
    update = tf.assign_add(v, r2)
    with tf.Session(config=GPUS) as sess:
        sess.run(tf.global_variables_initializer())
        h = sess.partial_run_setup([r1, update], [a, b, c])
        sess.partial_run(h, r1, {a: 1, b: 2})
        assert sess.run(v) == 1.0  # nothing committed while the partial run is open
        assert sess.partial_run(h, update, {c: 3}) == 10.0
        assert sess.run(v) == 10.0


def test_a_failing_op_ends_the_partial_run_and_commits_nothing():
    x = tf.placeholder(tf.float32, [None], name="x")
    v = tf.Variable(0.0, name="v")
    bump = tf.assign_add(v, 1.0)
    with tf.control_dependencies([bump]):
        bad = tf.reshape(x, [3], name="bad")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        h = sess.partial_run_setup([bad], [x])
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):
            sess.partial_run(h, bad, {x: np.ones(2)})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Must run 'setup'"):
            sess.partial_run(h, bad, {x: np.ones(3)})
        assert sess.run(v) == 0.0


def test_close_cancels_an_unfinished_partial_run():
    a, b, c, r1, r2 = _program()
    v = tf.Variable(1.0, name="v")
    update = tf.assign_add(v, r2)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    h = sess.partial_run_setup([r1, update], [a, b, c])
    sess.partial_run(h, r1, {a: 1, b: 2})
    sess.close()  # returns: the executors waiting for c stop
    with pytest.raises(RuntimeError, match="closed"):
        sess.partial_run(h, update, {c: 1})


def test_handle_format():
    class T:
        def __init__(self, name):
            self.name = name

    assert partial_run_handle([T("b:0"), T("a:0")], [T("y:0")], [T("init")], 3) == "a:0,b:0->y:0/init/1/;3"


def test_a_value_crossing_devices_lands_in_the_receivers_allocator_as_in_a_run():
    # a run's rendezvous copies a value that crosses devices into a buffer of the receiving device's
    # allocator; a partial run's step is set up the same way (it used a bare rendezvous that allocated none)
    a = tf.placeholder(tf.float32, shape=[3], name="a")
    with tf.device("/gpu:1"):
        r1 = tf.add(a, a, name="r1")
    r2 = tf.multiply(r1, 2.0, name="r2")
    feed = np.ones(3, np.float32)
    with tf.Session(config=GPUS) as sess:
        cpu = sess._resources.allocator("/job:localhost/replica:0/task:0/device:CPU:0")
        counts = [cpu.stats().num_allocs]
        sess.run(r2, {a: feed})
        counts.append(cpu.stats().num_allocs)
        np.testing.assert_array_equal(sess.partial_run(sess.partial_run_setup([r2], [a]), r2, {a: feed}), 4 * feed)
        counts.append(cpu.stats().num_allocs)
    assert np.diff(counts).tolist() == [1, 1]  # r1's [3] floats arriving from GPU:1, in each kind of run
