"""Pipeline threads stop with their step or session: deadlines, hanging user generators, filling buffers.

A user generator that never returns cannot be interrupted (in TF neither): its thread is abandoned as a daemon
with one RuntimeWarning, ``Session.close()`` does not wait for it, and the interpreter still exits. A buffer
(shuffle, prefetch) stops pulling from its input once the step that wanted an element is aborted.
"""

import itertools
import subprocess
import sys
import threading
import time
import warnings

import pytest

import dfcore as tf

_HANGING_PROGRAM = """
import time, warnings
import dfcore as tf
def gen():
    yield 1
    time.sleep(10 ** 6)
    yield 2
get_next = tf.data.make_one_shot_iterator(
    tf.data.Dataset.from_generator(gen, tf.int64, []){prefetch}).get_next()
sess = tf.Session()
print("first", sess.run(get_next))
try:
    sess.run(get_next, options=tf.RunOptions(timeout_in_ms=300))
except tf.errors.DeadlineExceededError:
    print("deadline")
started = time.monotonic()
sess.close()
print("close_s", time.monotonic() - started)
"""


def _pipeline_threads():
    return [t for t in threading.enumerate() if t.name.startswith("tf_data")]


def _await_no_pipeline_threads(timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    for thread in _pipeline_threads():
        thread.join(max(0.0, deadline - time.monotonic()))
    return _pipeline_threads()


@pytest.mark.parametrize("prefetch", ["", ".prefetch(4)"])
def test_a_hanging_generator_neither_blocks_close_nor_interpreter_exit(prefetch):
    result = subprocess.run([sys.executable, "-c", _HANGING_PROGRAM.format(prefetch=prefetch)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[:2] == ["first 1", "deadline"]
    assert float(lines[2].split()[1]) < 1.0  # a bound against a hang (it was: forever), not a speed check
    assert result.stderr.count("RuntimeWarning") == 1 and "abandoned as daemon threads" in result.stderr


def test_an_abandoned_thread_is_reported_once_and_ends_when_the_user_code_returns():
    release = threading.Event()

    def gen():
        yield 1
        release.wait()
        yield 2

    get_next = tf.data.make_one_shot_iterator(tf.data.Dataset.from_generator(gen, tf.int64, [])).get_next()
    sess = tf.Session()
    assert sess.run(get_next) == 1
    with pytest.raises(tf.errors.DeadlineExceededError):
        sess.run(get_next, options=tf.RunOptions(timeout_in_ms=100))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sess.close()
    assert [str(w.message).count("tf_data_get_next") for w in caught] == [1]
    release.set()
    assert _await_no_pipeline_threads() == []


def _counting_source(pulled):
    def gen():
        for i in itertools.count():
            pulled[0] = i + 1
            yield i
    return tf.data.Dataset.from_generator(gen, tf.int64, [])


PIPELINES = {
    "shuffle": lambda source: source.shuffle(10 ** 12),
    "shuffle_prefetch": lambda source: source.shuffle(10 ** 12).prefetch(10 ** 9),
    "filter_prefetch": lambda source: source.filter(lambda x: x < 0).prefetch(10 ** 9),
}


@pytest.mark.parametrize("case", sorted(PIPELINES))
def test_a_buffer_stops_filling_once_its_step_is_aborted(case):
    pulled = [0]
    iterator = tf.data.make_initializable_iterator(PIPELINES[case](_counting_source(pulled)))
    get_next = iterator.get_next()
    sess = tf.Session()
    sess.run(iterator.initializer)
    with pytest.raises(tf.errors.DeadlineExceededError):
        sess.run(get_next, options=tf.RunOptions(timeout_in_ms=200))
    time.sleep(0.05)  # let a pull in flight at the abort finish
    after_abort = pulled[0]
    time.sleep(0.3)
    # no element pulled into the buffer with no consumer (one may have been in flight on a descheduled thread)
    assert after_abort > 0 and pulled[0] <= after_abort + 1
    with pytest.raises(tf.errors.DeadlineExceededError):  # a new request resumes the fill where it stopped
        sess.run(get_next, options=tf.RunOptions(timeout_in_ms=100))
    assert pulled[0] > after_abort + 1
    sess.close()
    assert _await_no_pipeline_threads() == []


def test_closing_the_session_cancels_a_filling_step_and_stops_every_thread():
    pulled = [0]
    get_next = tf.data.make_one_shot_iterator(_counting_source(pulled).shuffle(10 ** 12).prefetch(2)).get_next()
    sess = tf.Session()
    outcome = []

    def step():
        try:
            sess.run(get_next)
        except tf.errors.OpError as error:
            outcome.append(type(error))

    runner = threading.Thread(target=step)
    runner.start()
    while pulled[0] < 100:
        time.sleep(0.01)
    sess.close()
    runner.join(10)
    assert outcome == [tf.errors.CancelledError]
    stopped_at = pulled[0]
    assert _await_no_pipeline_threads() == [] and pulled[0] == stopped_at
