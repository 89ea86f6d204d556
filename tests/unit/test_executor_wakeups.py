"""The executor when an async node completes on another thread just as the executor goes idle.

Reference: TF's ``ExecutorState`` (``core/common_runtime/executor.cc``): a node finishing on any thread
schedules its ready successors, and the step ends exactly once, when the last node is done. This is what
a ``_Recv`` from another process does (its value arrives on the transport's receive thread). Before the
fix, the executor saved its count of nodes left only after it had marked itself idle, so a wake-up in
that gap started a loop on a stale count and the partition never finished, not even on abort (the
multi-process hang seen with the graph optimizer on, issue 16).
"""

import threading

import numpy as np

from dfcore.framework.graph import Graph
from dfcore.ops import array_ops, math_ops
from dfcore.runtime import step_plan
from dfcore.runtime.call_frame import CallFrame
from dfcore.runtime.executor import Executor, StepContext, inline_runner
from dfcore.runtime.grappler import no_rewrite_session_config
from dfcore.runtime.rendezvous import Rendezvous
from dfcore.runtime.sendrecv_ops import rendezvous_key
from dfcore.runtime.session_resources import SessionResources
from dfcore.runtime.variable_store import VariableStore

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"
JOIN_S = 5.0


class _SendWhenIdle:
    """A lock that, when the executor releases it idle for the first time, delivers the ``_Recv``'s value
    from another thread and waits for that thread (the widest possible race, made deterministic)."""

    def __init__(self, executor, rendezvous, key, value):
        self._lock = threading.Lock()
        self._executor, self._rendezvous, self._key, self._value = executor, rendezvous, key, value
        self.sent = False

    def __enter__(self):
        self._lock.acquire()

    def __exit__(self, *exc):
        self._lock.release()
        if not self.sent and not self._executor._running and not self._executor._finished:
            self.sent = True
            sender = threading.Thread(target=self._rendezvous.send, args=(self._key, self._value), daemon=True)
            sender.start()
            sender.join(JOIN_S)
        return False


def _plan():
    """CPU:0 computes ``recv(x on CPU:1) + c1 * c2``: a ``_Recv`` and a node that does not wait for it."""
    graph = Graph()
    with graph.as_default():
        with graph.device(CPU1):
            x = array_ops.placeholder_with_default(np.float32([1.0, 2.0]), [2], name="x")
        with graph.device(CPU0):
            product = math_ops.multiply(np.float32([3.0, 4.0]), np.float32([5.0, 6.0]), name="product")
            total = math_ops.add(x, product, name="total")
    plan = step_plan.build_step_plan([total], [], [], lambda ops: {op: op.device for op in ops}, CPU0, 0,
                                     "inline", config=no_rewrite_session_config())
    return plan, next(p for p in plan.partitions if p.device == CPU0), graph


def test_a_recv_completing_on_another_thread_as_the_executor_goes_idle_still_ends_the_step():
    plan, partition, _ = _plan()
    recv = next(n for n in plan.graphs[CPU0].nodes if n.op == "_Recv")
    rendezvous = Rendezvous()
    frame = CallFrame((), plan.num_retvals)
    ctx = StepContext(VariableStore().begin(), SessionResources(), 1, rendezvous, CPU0, call_frame=frame)
    reports = []
    executor = Executor(partition, ctx, inline_runner, reports.append)
    lock = executor._lock = _SendWhenIdle(executor, rendezvous, rendezvous_key(recv), np.float32([1.0, 2.0]))
    executor.start()
    assert lock.sent, "the executor never went idle before the _Recv's value came: the race was not exercised"
    assert reports == [None], "the partition never finished"
    np.testing.assert_array_equal(frame.retval(0), np.float32([1.0, 2.0]) + np.float32([15.0, 24.0]))
