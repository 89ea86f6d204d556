"""tf.train.Coordinator: stop requests, the first reported exception, clean stops and the grace period (TF's rules)."""

import sys
import threading
import time

import pytest

import dfcore as tf


def _worker(coord, fail_with=None, delay_s=0.0):
    def run():
        with coord.stop_on_exception():
            time.sleep(delay_s)
            if fail_with is not None:
                raise fail_with
            while not coord.should_stop():
                coord.wait_for_stop(0.01)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_join_reraises_the_first_exception_a_thread_reported():
    coord = tf.train.Coordinator()
    first, second = ValueError("first"), RuntimeError("second")
    threads = [_worker(coord, first), _worker(coord, second, delay_s=0.2), _worker(coord)]
    with pytest.raises(ValueError, match="first"):
        coord.join(threads, stop_grace_period_secs=5)
    assert coord.should_stop() and coord.joined
    assert not any(t.is_alive() for t in threads)


def test_out_of_range_is_a_clean_stop_and_other_types_can_be_made_clean():
    coord = tf.train.Coordinator()
    threads = [_worker(coord, tf.errors.OutOfRangeError(None, None, "end of input"))]
    coord.join(threads)  # no exception
    assert coord.should_stop()
    coord = tf.train.Coordinator(clean_stop_exception_types=(KeyError,))
    coord.join([_worker(coord, KeyError("k"))])
    coord = tf.train.Coordinator(clean_stop_exception_types=(KeyError,))
    with pytest.raises(tf.errors.OutOfRangeError):
        coord.join([_worker(coord, tf.errors.OutOfRangeError(None, None, "end"))])


def test_join_returns_when_the_threads_end_without_a_stop_request():
    coord = tf.train.Coordinator()
    thread = threading.Thread(target=lambda: None)
    coord.register_thread(thread)
    thread.start()
    coord.join(stop_grace_period_secs=1)
    assert not coord.should_stop()


def test_join_names_the_threads_still_running_after_the_grace_period():
    coord, release = tf.train.Coordinator(), threading.Event()
    stuck = threading.Thread(target=release.wait, name="stuck-thread", daemon=True)
    stuck.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="Coordinator stopped with threads still running: stuck-thread"):
        coord.join([stuck], stop_grace_period_secs=0.05)
    coord.clear_stop()
    coord.request_stop()
    coord.join([stuck], stop_grace_period_secs=0.05, ignore_live_threads=True)
    release.set()
    stuck.join(5)


def test_raise_requested_exception_and_reports_after_join():
    coord = tf.train.Coordinator()
    coord.raise_requested_exception()  # nothing reported yet
    try:
        raise ValueError("boom")
    except ValueError:
        coord.request_stop(sys.exc_info())
    coord.request_stop(KeyError("ignored: a stop was already requested"))
    with pytest.raises(ValueError, match="boom"):
        coord.raise_requested_exception()
    with pytest.raises(ValueError, match="boom"):
        coord.join()
    with pytest.raises(KeyError):  # too late to be reported: raised to the caller
        coord.request_stop(KeyError("after join"))
    coord.clear_stop()
    assert not coord.should_stop() and not coord.joined
    coord.raise_requested_exception()
