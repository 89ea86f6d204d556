"""The record of which nodes ran dead in a traced step (``StepRecords.dead_nodes``): TF's executor skips the
kernel of a node with a dead input (``executor.cc``, ``is_dead``); expectations built by hand from
``control_flow_ops.cond``'s graph (``cond/switch_t``/``cond/switch_f`` and each branch's ops)."""

import pytest

import dfcore as tf
from dfcore.runtime.config import step_records

TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


def _dead(sess, fetch, feed):
    meta = tf.RunMetadata()
    sess.run(fetch, feed, options=TRACE, run_metadata=meta)
    return step_records(meta).dead_nodes


@pytest.mark.parametrize("pred, dead", [(True, {"cond/switch_f", "cond/sub/y", "cond/sub"}),
                                        (False, {"cond/switch_t", "cond/mul/y", "cond/mul"})])
def test_the_untaken_branch_of_a_cond_is_recorded_dead(pred, dead):
    p = tf.placeholder(tf.bool, [], name="p")
    x = tf.constant(3.0, name="x")
    y = tf.cond(p, lambda: x * 2.0, lambda: x - 1.0)
    with tf.Session() as sess:
        records = _dead(sess, y, {p: pred})
    assert {name for _, name, _ in records} == dead
    assert all(frame_iter is None for _, _, frame_iter in records)


def test_a_loop_records_its_exit_dead_while_it_goes_on_and_its_body_dead_in_the_last_test():
    i = tf.while_loop(lambda i: i < 3, lambda i: tf.add(i, 1, name="step"), [tf.constant(0)])
    with tf.Session() as sess:
        records = _dead(sess, i, None)
    iterations = {}
    for _, name, (_, it) in records:
        iterations.setdefault(name, set()).add(it)
    # Switch sends the value to Exit (false) or the body (true); the other output is dead.
    assert iterations == {"while/Exit": {0, 1, 2}, "while/Identity": {3}, "while/Const_1": {3},
                          "while/step": {3}, "while/NextIteration": {3}}


def test_an_untraced_run_and_a_plain_graph_record_no_dead_node():
    x = tf.constant(1.0) + 1.0
    with tf.Session() as sess:
        assert _dead(sess, x, None) == ()
