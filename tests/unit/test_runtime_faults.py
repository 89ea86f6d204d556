"""Runtime faults: a Ctrl-C in a running step, deadlines on every runner, kernels that cannot allocate.

Each step that fails here must end everywhere (no pending queue wait, no thread left running) and commit
nothing (variables and queues as before the step), as TF's DirectSession aborts a step. The sessions run the
graphs as built (TF's no-rewrite test config): constant folding would otherwise compute the long constant
chains once, before the step, and no step would be long enough to interrupt.
"""

import contextlib
import re
import signal
import threading
import time

import pytest

import dfcore as tf
from dfcore.framework import registry
from dfcore.runtime.grappler import no_rewrite_session_config

RUNNERS = ("auto", "inline", "pool")
#: A bound for "the step ended" that only a hang can exceed (never a slow machine).
HANG_S = 60.0


@pytest.fixture(autouse=True)
def no_thread_left():
    before = set(threading.enumerate())
    yield
    assert set(threading.enumerate()) <= before


@contextlib.contextmanager
def ctrl_c_after(delay_s):
    """Deliver SIGINT to the main thread after ``delay_s``, as Ctrl-C in a terminal or a notebook does."""
    assert threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(delay_s, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGINT, previous)


def _queue_graph(dequeue_device=None):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(dequeue_device):
            q = tf.FIFOQueue(3, tf.float32, shapes=[[]], name="q")
            x = tf.placeholder(tf.float32, [], name="x")
            enqueue, dequeue, size = q.enqueue(x), q.dequeue(), q.size()
        steps = tf.Variable(0, name="steps")
        count = tf.assign_add(steps, 1)
    return graph, x, enqueue, dequeue, size, steps, count


def _session(graph, runner):
    return tf.Session(graph=graph, executor_runner=runner,
                      config=no_rewrite_session_config(tf.ConfigProto(inter_op_parallelism_threads=2)))


# -- 1. Ctrl-C ------------------------------------------------------------------------
@pytest.mark.parametrize("runner", RUNNERS)
def test_ctrl_c_in_a_blocked_dequeue_cancels_the_step_and_the_queue_keeps_the_next_element(runner):
    graph, x, enqueue, dequeue, size, steps, count = _queue_graph()
    with _session(graph, runner) as sess:
        sess.run(steps.initializer)
        sess.run(enqueue, {x: 0.0})
        assert sess.run([dequeue, count]) == [0.0, 1]  # builds the plan: the next run blocks at once
        start = time.perf_counter()
        with ctrl_c_after(0.3), pytest.raises(KeyboardInterrupt):
            sess.run([dequeue, count])
        assert time.perf_counter() - start < HANG_S
        assert sess.run(steps) == 1  # the interrupted step committed nothing
        sess.run(enqueue, {x: 7.0})
        assert sess.run(size) == 1  # no leftover dequeue of the interrupted step took it
        assert sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=5000)) == 7.0


def test_ctrl_c_while_an_op_runs_on_the_calling_thread_cancels_the_blocked_partitions():
    # inline: the CPU partition (device names sort first) blocks in its dequeue, then the GPU partition's
    # long chain of matmuls runs on the calling thread, where the interrupt arrives.
    graph, x, enqueue, dequeue, size, steps, count = _queue_graph("/cpu:0")
    with graph.as_default(), tf.device("/gpu:0"):
        m = tf.fill([300, 300], 1.0 / 300)
        chain = m
        for _ in range(2000):
            chain = tf.matmul(chain, m)  # m @ m == m: values stay put
        last = tf.reduce_sum(chain)
    with _session(graph, "inline") as sess:
        sess.run(steps.initializer)
        start = time.perf_counter()
        with ctrl_c_after(0.3), pytest.raises(KeyboardInterrupt):
            sess.run([dequeue, last, count])
        assert time.perf_counter() - start < HANG_S
        assert sess.run(steps) == 0
        sess.run(enqueue, {x: 7.0})
        assert sess.run(size) == 1
        assert sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=5000)) == 7.0


# -- 2. Deadlines ---------------------------------------------------------------------
VECTOR = 100_000


def _chain_graph(length):
    """A step of ``length`` adds of a ``[VECTOR]`` float32 vector, then an assign and an enqueue that need them."""
    graph = tf.Graph()
    with graph.as_default():
        total = tf.Variable(0.0, name="total")
        q = tf.FIFOQueue(3, tf.float32, shapes=[[]], name="q")
        value = tf.zeros([VECTOR])
        for _ in range(length):
            value = value + 1.0
        result = tf.reduce_sum(value)
        step = tf.group(tf.assign(total, result), q.enqueue(result))
    return graph, total, q.size(), step


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("where", ["RunOptions", "ConfigProto"])
def test_deadline_aborts_a_step_between_ops_on_every_runner_and_commits_nothing(runner, where):
    graph, total, size, step = _chain_graph(1000)  # 1000 adds of 100,000 floats: far more than 1 ms anywhere
    options = tf.RunOptions(timeout_in_ms=1) if where == "RunOptions" else None
    config = no_rewrite_session_config(tf.ConfigProto(inter_op_parallelism_threads=2,
                                                      operation_timeout_in_ms=1 if where == "ConfigProto" else 0))
    unhurried = tf.RunOptions(timeout_in_ms=600_000)  # overrides the config's 1 ms for the other runs
    with tf.Session(graph=graph, executor_runner=runner, config=config) as sess:
        sess.run(total.initializer, options=unhurried)
        with pytest.raises(tf.errors.DeadlineExceededError, match="Timed out waiting for notification.*0.001 s"):
            sess.run(step, options=options)
        assert sess.run([total, size], options=unhurried) == [0.0, 0]
        sess.run(step, options=unhurried)
        assert sess.run([total, size], options=unhurried) == [1000.0 * VECTOR, 1]


@pytest.mark.parametrize("runner", RUNNERS)
def test_deadline_ends_a_blocked_dequeue_on_every_runner(runner):
    graph, x, enqueue, dequeue, _, steps, count = _queue_graph()
    with _session(graph, runner) as sess:
        sess.run(steps.initializer)
        start = time.perf_counter()
        with pytest.raises(tf.errors.DeadlineExceededError, match="Timed out waiting for notification"):
            sess.run([dequeue, count], options=tf.RunOptions(timeout_in_ms=200))
        assert 0.2 <= time.perf_counter() - start < HANG_S
        assert sess.run(steps) == 0
        sess.run(enqueue, {x: 7.0})
        assert sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=5000)) == 7.0


# -- 3. Allocation failures -----------------------------------------------------------
@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("dims, shape", [
    ([2**40, 2**20], r"\[1099511627776,1048576\]"),  # 4 EiB: numpy's MemoryError
    ([2**62, 8], r"\[\?,\?\]"),  # more bytes than an index can count: numpy's "array is too big"
])
def test_a_kernel_that_cannot_allocate_fails_with_resource_exhausted_and_commits_nothing(runner, dims, shape):
    graph = tf.Graph()
    with graph.as_default():
        flag = tf.Variable(0, name="flag")
        d = tf.placeholder(tf.int64, [2], name="dims")
        with tf.device("/cpu:0"):
            huge = tf.fill(d, 1.0, name="huge")
        step = [tf.reduce_sum(huge), tf.assign(flag, 1)]
    with _session(graph, runner) as sess:
        sess.run(flag.initializer)
        with pytest.raises(tf.errors.ResourceExhaustedError) as info:
            sess.run(step, {d: dims}, options=tf.RunOptions(timeout_in_ms=int(HANG_S * 1000)))
        message = str(info.value)
        assert info.value.op is graph.get_operation_by_name("huge")
        assert re.match(rf"OOM when allocating tensor with shape{shape} and type float on "
                        r"/job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu", message), message
        assert "op 'huge' of type Fill" in message and "[[node huge]]" in message
        assert sess.run(flag) == 0


def test_tf_zeros_of_a_huge_static_shape_is_resource_exhausted_in_the_step():
    graph = tf.Graph()
    with graph.as_default():
        flag = tf.Variable(0, name="flag")
        with tf.device("/gpu:1"):
            zeros = tf.zeros([2**40, 2**20], dtype=tf.float64)  # 8 EiB: numpy's "array is too big"
        step = [tf.reduce_sum(zeros), tf.assign(flag, 1)]
    with tf.Session(graph=graph) as sess:
        sess.run(flag.initializer)
        with pytest.raises(tf.errors.ResourceExhaustedError,
                           match=r"^OOM when allocating tensor with shape\[1099511627776,1048576\] and type double on "
                                 r"/job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc"):
            sess.run(step)
        assert sess.run(flag) == 0


# -- Any other kernel exception -------------------------------------------------------
_RAISING = "RuntimeFaultsTestRaising"  # an op type only this test registers: a kernel with a bug


@registry.RegisterShape(_RAISING)
def _raising_shape(op):
    return [(op.inputs[0].dtype, op.inputs[0].shape)]


@registry.RegisterKernel(_RAISING)
def _raising_kernel(op):
    def compute(x):
        raise RuntimeError("a bug in a kernel")

    return compute


@pytest.mark.parametrize("runner", RUNNERS)
def test_an_unexpected_kernel_exception_ends_the_step_as_internal_error_on_every_runner(runner):
    graph = tf.Graph()
    with graph.as_default():
        flag = tf.Variable(0, name="flag")
        raising = graph.create_op(_RAISING, [tf.constant([1.0, 2.0])], name="raising")
        step = [raising.outputs[0], tf.assign(flag, 1)]
    with _session(graph, runner) as sess:
        sess.run(flag.initializer)
        start = time.perf_counter()
        with pytest.raises(tf.errors.InternalError) as info:
            sess.run(step, options=tf.RunOptions(timeout_in_ms=int(HANG_S * 1000)))
        assert time.perf_counter() - start < HANG_S
        assert info.value.op is raising
        assert str(info.value).startswith(
            f"RuntimeError: a bug in a kernel (op 'raising' of type {_RAISING} with input shapes: [2])")
        assert sess.run(flag) == 0
