"""A session closed, or a ps task lost, under running steps: each step ends with the error that says why.

Reference: TF 1.x ``DirectSession::Close`` cancels the session's steps (``CancelledError: Session has been
closed.``), the Python client then refuses ``run`` (``RuntimeError: Attempted to use a closed Session.``); a
step whose worker task died fails with ``UnavailableError``. None of them is an error about initialization.
"""

import threading
import time

import pytest

import dfcore as tf
from dfcore.distribute import parameter_server as ps

REPEATS = 50


def _loop(sess, op, outcomes, started):
    started.set()
    while True:
        try:
            sess.run(op)
        except Exception as error:  # recorded and checked by the test
            outcomes.append(error)
            if isinstance(error, RuntimeError) and not isinstance(error, tf.errors.OpError):
                return


@pytest.mark.parametrize("repeat", range(REPEATS))
def test_closing_under_four_stepping_threads_cancels_their_steps(repeat):
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(tf.zeros([16]), name="v")
        step = tf.assign_add(v, tf.ones([16]))
    sess = tf.Session(graph=graph)
    sess.run(v.initializer)
    outcomes: list[Exception] = []
    starts = [threading.Event() for _ in range(4)]
    threads = [threading.Thread(target=_loop, args=(sess, step, outcomes, s)) for s in starts]
    for thread in threads:
        thread.start()
    for s in starts:
        s.wait()
    sess.close()
    for thread in threads:
        thread.join(10)
    assert not any(t.is_alive() for t in threads)
    for error in outcomes:
        if isinstance(error, tf.errors.OpError):
            assert isinstance(error, tf.errors.CancelledError), repr(error)
            assert error.message == "Session has been closed."
        else:
            assert type(error) is RuntimeError and str(error) == "Attempted to use a closed Session."
    assert sum(type(e) is RuntimeError for e in outcomes) == 4  # each thread's last run came after close


def test_closing_wakes_a_step_blocked_on_an_empty_queue_with_cancelled_error():
    graph = tf.Graph()
    with graph.as_default():
        dequeue = tf.FIFOQueue(3, tf.float32).dequeue()
    sess = tf.Session(graph=graph)
    outcome = []
    thread = threading.Thread(target=_loop, args=(sess, dequeue, outcome, threading.Event()))
    thread.start()
    while sess._steps._count == 0:  # the step is in flight (it then blocks in the dequeue)
        time.sleep(0.001)
    sess.close()
    thread.join(10)
    assert not thread.is_alive()
    error, after = outcome  # the blocked step, then the next run
    assert isinstance(error, tf.errors.CancelledError) and error.message == "Session has been closed."
    assert type(after) is RuntimeError


def test_a_run_after_close_and_a_second_close():
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(1.0)
    sess = tf.Session(graph=graph)
    sess.run(v.initializer)
    sess.close()
    sess.close()
    with pytest.raises(RuntimeError, match="^Attempted to use a closed Session.$"):
        sess.run(v)


@pytest.mark.parametrize("repeat", range(REPEATS))
@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_killed_ps_ends_training_with_unavailable_never_uninitialized(mode, repeat):
    # a deadline far above a step on a loaded machine, and more steps than run before the kill: only the dead
    # ps may end the run
    record = ps.train(mode=mode, execution="threads", steps=1000, num_ps=2, num_workers=2,
                      kill_ps={1: 2 + repeat % 4}, eval_every=0, fault_timeout_s=30.0)
    assert record.status == "failed"
    assert record.error.startswith("UnavailableError"), record.error
    errors = [f for f in record.faults if f.kind == "error"]
    assert errors and all(f.error_type == "UnavailableError" for f in errors), errors
