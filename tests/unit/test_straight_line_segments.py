"""A straight-line partition split at its receives (:mod:`dfcore.runtime.straight_line_run`): each segment
runs as soon as the values it needs are in, whatever order they arrive in; the results are numpy's; a
kernel error in a segment ends the step once, naming its node; a receive that never arrives ends with the
step's abort (a deadline, a cancellation) with no hang and no thread left behind.

Reference: TF's executor (``core/common_runtime/executor.cc``): a received value's consumers run when it
arrives, the first error ends the step, an aborted rendezvous fails every pending receive.
"""

import itertools
import threading
import time

import numpy as np
import pytest

import dfcore as tf
from dfcore import errors
from dfcore.framework.graph import Graph
from dfcore.ops import array_ops, math_ops
from dfcore.runtime import step_plan
from dfcore.runtime.call_frame import CallFrame
from dfcore.runtime.compiled_partition import STRAIGHT_LINE_STEP
from dfcore.runtime.executor import Executor, StepContext, inline_runner
from dfcore.runtime.grappler import no_rewrite_session_config
from dfcore.runtime.rendezvous import Rendezvous
from dfcore.runtime.sendrecv_ops import rendezvous_key
from dfcore.runtime.session_resources import SessionResources
from dfcore.runtime.variable_store import VariableStore

CPU = [f"/job:localhost/replica:0/task:0/device:CPU:{i}" for i in range(4)]
JOIN_S = 5.0
A, B, C = np.float32([1.0, 2.0]), np.float32([3.0, 5.0]), np.float32([7.0, 11.0])
PRODUCT = np.float32([3.0, 4.0]) * np.float32([5.0, 6.0])


def _plan():
    """CPU:0 receives ``a``, ``b``, ``c`` from CPU:1-3 and computes ``ab = a + b`` (waits for two),
    ``bc = reshape(b, [2]) * c`` (two others), ``product`` (none) and their sum."""
    graph = Graph()
    with graph.as_default():
        received = []
        for device, name, value in zip(CPU[1:], "abc", (A, B, C)):
            with graph.device(device):
                received.append(array_ops.placeholder_with_default(value, [None], name=name))
        a, b, c = received
        with graph.device(CPU[0]):
            product = math_ops.multiply(np.float32([3.0, 4.0]), np.float32([5.0, 6.0]), name="product")
            ab = math_ops.add(a, b, name="ab")
            bc = math_ops.multiply(array_ops.reshape(b, [2], name="b2"), c, name="bc")
            total = math_ops.add_n([ab, bc, product], name="total")
    plan = step_plan.build_step_plan([total], [], [], lambda ops: {op: op.device for op in ops}, CPU[0], 0,
                                     "inline", config=no_rewrite_session_config())
    partition = next(p for p in plan.partitions if p.device == CPU[0])
    for _ in range(STRAIGHT_LINE_STEP):
        straight = partition.straight_line()
    assert straight is not None and len(straight.receives) == 3
    keys = {node.get_attr("send_device")[-1]: rendezvous_key(node) for node in plan.graphs[CPU[0]].nodes
            if node.op == "_Recv"}  # by the sending CPU's number
    return plan, partition, {name: keys[str(i)] for i, name in enumerate("abc", 1)}


def _executor(plan, partition):
    rendezvous = Rendezvous()
    frame = CallFrame((), plan.num_retvals)
    ctx = StepContext(VariableStore().begin(), SessionResources(), 1, rendezvous, CPU[0], call_frame=frame)
    reports = []
    executor = Executor(partition, ctx, inline_runner, reports.append)
    assert executor._straight is not None
    return executor, rendezvous, frame, reports


def _slot(partition, name):
    return next(node.out_slot for node in partition.nodes if node.name == name)


@pytest.mark.parametrize("order", list(itertools.permutations("abc")))
def test_each_segment_runs_once_its_values_are_in_whatever_their_order(order):
    plan, partition, keys = _plan()
    executor, rendezvous, frame, reports = _executor(plan, partition)
    executor.start()
    np.testing.assert_array_equal(executor.values[_slot(partition, "product")], PRODUCT)  # needs nothing received
    values = dict(zip("abc", (A, B, C)))
    arrived = set()
    for name in order[:-1]:
        assert reports == []
        rendezvous.send(keys[name], values[name])
        arrived.add(name)
        ab, bc = executor.values[_slot(partition, "ab")], executor.values[_slot(partition, "bc")]
        assert (ab is not None) == ({"a", "b"} <= arrived)
        assert (bc is not None) == ({"b", "c"} <= arrived)
    rendezvous.send(keys[order[-1]], values[order[-1]])  # the last one: the rest runs, the step ends
    assert reports == [None]
    np.testing.assert_array_equal(frame.retval(0), A + B + B * C + PRODUCT)


def test_each_value_is_dropped_after_its_last_reader():
    """TF's executor clears an input entry once its last consumer has run: so does the generated code, for
    every value a node computes (the allocator's buffers and the rest), once the step has read it."""
    plan, partition, keys = _plan()
    executor, rendezvous, frame, reports = _executor(plan, partition)
    executor.start()
    for name, value in zip("abc", (A, B, C)):
        rendezvous.send(keys[name], value)
    assert reports == [None]
    np.testing.assert_array_equal(frame.retval(0), A + B + B * C + PRODUCT)
    for name in ("product", "ab", "b2", "bc", "total"):
        assert executor.values[_slot(partition, name)] is None, name


def test_an_error_in_a_segment_ends_the_step_once_naming_its_node():
    plan, partition, keys = _plan()
    executor, rendezvous, _, reports = _executor(plan, partition)
    executor.start()
    rendezvous.send(keys["c"], C)
    rendezvous.send(keys["b"], np.float32([1.0, 2.0, 3.0]))  # b2 = reshape(b, [2]) fails
    assert len(reports) == 1 and isinstance(reports[0], errors.InvalidArgumentError)
    assert str(reports[0]) == ("Input to reshape is a tensor with 3 values, but the requested shape has 2\n"
                               "\t [[node b2]]")  # the loop's error (TF's wording)
    rendezvous.send(keys["a"], A)  # a late value after the error: nothing runs, nothing reports again
    assert len(reports) == 1 and executor.values[_slot(partition, "ab")] is None


def test_a_receive_that_never_arrives_ends_with_the_steps_abort():
    plan, partition, keys = _plan()
    executor, rendezvous, _, reports = _executor(plan, partition)
    executor.start()
    rendezvous.send(keys["a"], A)
    rendezvous.send(keys["b"], B)
    assert reports == [] and executor.values[_slot(partition, "ab")] is not None
    deadline = errors.DeadlineExceededError(None, None, "Timed out waiting for c")
    rendezvous.start_abort(deadline)  # what the step's barrier does when its deadline passes
    assert reports == [deadline]
    assert executor.values[_slot(partition, "bc")] is None


def _session_graph():
    """CPU:1 dequeues from a FIFO queue and sends the value to CPU:0, which adds its own work."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/cpu:1"):
            queue = tf.FIFOQueue(100, tf.float32, shapes=[[2]])
            enqueue = queue.enqueue(tf.constant(A))
            value = queue.dequeue()
        with tf.device("/cpu:0"):
            total = tf.add(value * 2.0, tf.constant(PRODUCT), name="total")
    return graph, enqueue, total


@pytest.mark.parametrize("runner", ["inline", "pool"])
def test_a_session_closed_while_a_segment_waits_cancels_the_step_without_a_hang(runner):
    graph, enqueue, total = _session_graph()
    config = no_rewrite_session_config(tf.ConfigProto(device_count={"CPU": 2}, inter_op_parallelism_threads=2))
    sess = tf.Session(graph=graph, config=config, executor_runner=runner)
    for _ in range(STRAIGHT_LINE_STEP + 1):
        sess.run(enqueue)
        np.testing.assert_array_equal(sess.run(total), A * 2 + PRODUCT)
    plan = list(sess._plans.values())[-1]
    partition = next(p for p in plan.partitions if p.device.endswith("CPU:0"))
    straight = partition.straight_line()
    assert straight is not None and len(straight.receives) == 1
    outcome = []

    def run():
        try:
            sess.run(total)  # the queue is empty: CPU:1 never sends
        except errors.OpError as error:
            outcome.append(error)

    waiter = threading.Thread(target=run, daemon=True)
    waiter.start()
    for _ in range(int(JOIN_S / 0.001)):  # until the step runs (the session watches it for cancellation)
        if sess._resources._running:
            break
        time.sleep(0.001)
    sess.close()
    waiter.join(JOIN_S)
    assert not waiter.is_alive(), "the step hung after the session closed"
    assert len(outcome) == 1 and isinstance(outcome[0], errors.CancelledError)


@pytest.mark.parametrize("runner", ["inline", "pool"])
def test_a_parameter_device_averaging_its_towers_values_matches_numpy(runner):
    """The 4-tower pattern: CPU:0 holds ``v``, sends it to CPU:1-3, computes its own tower's ``x[0] * v``
    (a segment waiting for nothing) and averages the four products as they come back (their receives may
    complete on pool threads in any order), then updates ``v``. Reference: the same update in numpy."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [4, 3], name="x")
        with tf.device("/cpu:0"):
            v = tf.Variable(np.float32([1.0, -2.0, 0.5]), name="v")
        products = []
        for i, row in enumerate(tf.split(x, 4)):
            with tf.device(f"/cpu:{i}"):
                products.append(tf.multiply(row[0], v, name=f"product{i}"))
        with tf.device("/cpu:0"):
            update = tf.assign_sub(v, 0.1 * tf.add_n(products) / 4.0, name="update")
        init = tf.global_variables_initializer()
    rng = np.random.default_rng(0)
    feeds = rng.standard_normal((STRAIGHT_LINE_STEP + 3, 4, 3)).astype(np.float32)
    config = tf.ConfigProto(device_count={"CPU": 4}, inter_op_parallelism_threads=4)
    want = np.float32([1.0, -2.0, 0.5])
    with tf.Session(graph=graph, config=config, executor_runner=runner) as sess:
        sess.run(init)
        for feed in feeds:
            got = sess.run(update, {x: feed})
            want = want - np.float32(0.1) * (feed * want).sum(axis=0) / np.float32(4.0)
            np.testing.assert_allclose(got, want, rtol=1e-5)
        plan = list(sess._plans.values())[-1]
        partition = next(p for p in plan.partitions if p.device.endswith("CPU:0"))
        straight = partition.straight_line()
        assert straight is not None and len(straight.receives) == 3
        own = next(i for i, node in enumerate(partition.nodes) if node.name == "product0")
        assert straight.waits_for(own) == ()
