"""A task serving several masters keeps each step's deferred effects apart, though their step ids coincide.

Reference: TF's worker keys a step's state by the master's ``step_id``, which TF's masters draw at random
from 64 bits so that two masters never share one (``master_session.cc``, ``NewStepId``). dfcore's masters
count their steps from 1 instead, so a task serving several masters (a ps serving every worker's session)
keys a step by its handle ``(master rank, id)``. A queue's enqueue is published when its step commits and
given back when it aborts (dfcore's all-or-nothing step, docs/architecture.md#errors-and-faults). Before the
fix, the hooks were keyed by the master's step id,
so another master's aborted step with the same id dropped the enqueue: the lost
``SyncReplicasOptimizer`` tokens of issue 16.
"""

import numpy as np

from dfcore import errors
from dfcore.framework import dtypes
from dfcore.framework.graph import Graph
from dfcore.ops import array_ops, data_flow_ops, numerics
from dfcore.runtime import step_plan
from dfcore.runtime.grappler import no_rewrite_session_config
from dfcore.transport.rendezvous import StepTable
from dfcore.transport.service import TaskState, WorkerService, wire_partition

PS = "/job:ps/replica:0/task:0/device:CPU:0"


class _Transport:
    """The seam's request side, served in-process: handlers are called at once and their replies kept."""

    rank = 0

    def __init__(self):
        self.handlers = {}

    def on_request(self, kind, handler):
        self.handlers[kind] = handler

    def on_message(self, kind, handler):
        pass

    def busy_while(self, probe):
        pass

    def call(self, kind, source, *payload):
        replies = []
        self.handlers[kind](source, lambda value=None, error=None: replies.append((value, error)), *payload)
        assert len(replies) == 1, f"{kind} replied {len(replies)} times"
        return replies[0]


def _partition(targets):
    plan = step_plan.build_step_plan([], targets, [], lambda ops: {op: PS for op in ops}, PS, 0, "inline",
                                     config=no_rewrite_session_config())
    return wire_partition(plan.graphs[PS])


def test_an_aborted_step_of_one_master_leaves_another_masters_step_with_the_same_id_alone():
    graph = Graph()
    with graph.as_default(), graph.device(PS):
        queue = data_flow_ops.FIFOQueue(4, dtypes.float32, shapes=[[]], shared_name="tokens")
        enqueue = queue.enqueue(np.float32(7.0))
        poisoned = numerics.check_numerics(array_ops.placeholder_with_default(np.float32(np.nan), []), "poisoned")
    transport, state = _Transport(), TaskState()
    WorkerService(transport, StepTable(transport), state, ())
    handles = {}
    for name, master, targets in (("enqueue", 1, [enqueue]), ("poisoned", 2, [poisoned.op])):
        handles[name], error = transport.call("register_graph", master, (1, graph.version), graph.as_graph_def(),
                                              _partition(targets))
        assert error is None

    # master 1's step 1 enqueues (published at its commit); master 2's step 1 fails meanwhile and is aborted
    assert transport.call("run_graph", 1, handles["enqueue"], (1, 1), 1, False) == (None, None)
    _, error = transport.call("run_graph", 2, handles["poisoned"], (2, 1), 1, False)
    assert isinstance(error, errors.InvalidArgumentError) and "poisoned" in error.message
    transport.call("end_step", 2, (2, 1), False)
    tokens = state.resource("/job:ps/replica:0/task:0", "FIFOQueue", "tokens", lambda: None)
    assert tokens.size() == 0  # master 1's step has not committed yet
    transport.call("end_step", 1, (1, 1), True)
    assert tokens.size() == 1
