"""What every task of a multi-process cluster serves: its devices, and the partitions other tasks' sessions run on it.

Source: TF's ``Worker`` (``core/distributed_runtime/worker.cc``): ``GetStatus`` lists the
task's devices, ``RegisterGraph`` builds executors for a master's partition graphs once,
``RunGraph`` runs them for one step, and the task's ``ResourceMgr`` (variables, queues,
accumulators) outlives steps and masters — so every worker's session sees the same
variables on a ps task (between-graph replication).

dfcore adds its rule that a failed step changes nothing: a partition's variable writes
stay staged until the master, having heard from every partition, sends ``end_step``
(commit or abort); it waits for each task's reply to a commit, so that once ``Session.run``
returns every task sees the step's writes, as TF's in-place updates are seen. Partitions run on the
receive thread, as far as they can go at once, and
continue there as their ``_Recv`` s complete: a hand-off to another thread costs more than a
ps partition's work, and no kernel blocks a thread (queues and accumulators are asynchronous).
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .. import errors
from ..distribute.cluster_runtime import ClusterResources, ClusterVariableStore, TaskResources
from ..framework import graph as graph_lib
from ..framework.importer import import_nodes
from ..framework.operation import Operation
from ..runtime.cancellation import Deadline
from ..runtime.control_flow_executor import make_executor
from ..runtime.control_flow_info import has_control_flow
from ..runtime.executor import StepContext, inline_runner
from ..runtime.grappler.graph_item import Node
from ..runtime.partition import PartitionGraph, PartitionNode
from ..runtime.partition_compiler import compile_partition

if TYPE_CHECKING:
    from ..runtime.device_set import Device
    from .rendezvous import StepTable
    from .seam import Transport

#: The graphs (versions) a task keeps per master, most recent first, for partitions registered later.
GRAPHS_PER_MASTER = 4


class TaskState(TaskResources):
    """The state of this process's task: variables keyed by ``(task, name)`` and resources."""

    def __init__(self):
        super().__init__()
        self.variable_store = ClusterVariableStore()


class ValueSummary:
    """The shape, dtype and size of a value another task computed (what step stats need of it)."""

    __slots__ = ("shape", "dtype", "nbytes")

    def __init__(self, shape: tuple[int, ...], dtype: Any, nbytes: int):
        self.shape, self.dtype, self.nbytes = shape, dtype, nbytes

    @classmethod
    def of(cls, value: Any) -> ValueSummary | None:
        if not hasattr(value, "dtype"):
            return None
        return cls(tuple(getattr(value, "shape", ())), value.dtype, int(getattr(value, "nbytes", 0)))


def wire_partition(partition_graph: PartitionGraph) -> tuple[str, list[tuple[Any, ...]]]:
    """A :class:`PartitionGraph` as plain records for a message: each node's original op referenced by name, or,
    for a node the graph optimizer made (a folded ``Const`` that keeps the name of the ``Fill`` it replaces), its
    output ``(dtype, shape)`` pairs, from which the receiving task rebuilds it (:func:`_original`)."""
    return partition_graph.device, [(n.name, n.op, n.inputs, n.device, n.attrs, _wire_original(n.original))
                                    for n in partition_graph.nodes]


def _wire_original(original):
    if original is None or isinstance(original, Operation):
        return None if original is None else original.name
    return tuple((t.dtype, t.shape) for t in original.outputs)


def _original(ops, name, op_type, attrs, device, original):
    """The op a wired record runs: the graph's op of that name, a rebuilt optimizer-made node, or None."""
    if original is None or isinstance(original, str):
        return None if original is None else ops[original]
    return Node(name, op_type, attrs, device, 0, original)


class WorkerService:
    """Serves ``get_status``, ``register_graph``, ``run_graph``, ``end_step`` for this process's task."""

    def __init__(self, transport: Transport, steps: StepTable, state: TaskState, devices: Iterable[Device]):
        self._transport = transport
        self._steps = steps
        self._state = state
        self._devices = tuple(devices)
        self._resources = ClusterResources(state)
        self._lock = threading.Lock()
        self._graphs: dict[int, Any] = {}
        self._partitions: dict[tuple[int, int], Any] = {}
        self._handles = itertools.count()
        self._live: dict[Any, Any] = {}
        transport.on_request("get_status", self._get_status)
        transport.on_request("register_graph", self._register_graph)
        transport.on_request("run_graph", self._run_graph)
        transport.on_request("end_step", self._end_step)

    def _get_status(self, source, reply):
        reply(self._devices)

    def _register_graph(self, source, reply, graph_key, graph_def, partition):
        """Import the master's graph (when ``graph_def`` is new) and compile one partition; reply its handle."""
        with self._lock:
            graphs = self._graphs.setdefault(source, collections.OrderedDict())
            if graph_def is not None:
                graph = graph_lib.Graph()
                graphs[graph_key] = import_nodes(graph_def, "", graph)
                while len(graphs) > GRAPHS_PER_MASTER:
                    graphs.popitem(last=False)
            ops = graphs.get(graph_key)
        if ops is None:
            raise errors.FailedPreconditionError(
                None, None, f"Task {source} registered a partition of graph {graph_key} without sending that graph")
        device, records = partition
        nodes = tuple(PartitionNode(name, op, tuple(inputs), node_device, attrs,
                                    _original(ops, name, op, attrs, node_device, original))
                      for name, op, inputs, node_device, attrs, original in records)
        # a step with control flow runs every partition on the control-flow executor (dead tensors cross tasks)
        compiled = compile_partition(PartitionGraph(device, nodes), has_control_flow([op.type for op in ops.values()]))
        with self._lock:
            handle = (source, next(self._handles))
            self._partitions[handle] = compiled
        reply(handle)

    def _run_graph(self, source, reply, handle, step_handle, step_id, trace, timeout_s=None):
        """Run a registered partition for a step; ``timeout_s``: the seconds its master's deadline has left
        (None: it set none), checked here between ops as the master checks it."""
        partition = self._partitions.get(handle)
        if partition is None:
            raise errors.InvalidArgumentError(None, None, f"Graph handle {handle} is not registered on this task "
                                              "(deregistered, or its master's session was deleted)")
        rendezvous = self._steps.find_or_create(step_handle)
        txn = self._state.variable_store.begin()
        with self._lock:
            self._live[step_handle] = txn
        deadline = None if timeout_s is None else Deadline(timeout_s)
        # the task's resources are shared by every master, whose step ids overlap (each counts from 1): a
        # step's deferred effects (a queue's enqueue, a mutex's release) are keyed by its handle, which is unique
        ctx = StepContext(txn, self._resources, step_handle, rendezvous, partition.device, tracing=trace,
                          deadline=deadline)
        timings: list[Any] | None = [] if trace else None
        executor = None

        def done(error):
            if error is not None:
                rendezvous.start_abort(error)
                reply(error=error)
                return
            reply(_trace_reply(executor, timings, rendezvous) if trace else None)

        executor = make_executor(partition, ctx, inline_runner, done, timings)
        executor.start()

    def deregister(self, handle: tuple[int, int]) -> None:
        """Forget a registered partition (TF's ``DeregisterGraph``); an unknown handle is ignored."""
        with self._lock:
            self._partitions.pop(handle, None)

    def forget_master(self, source: int) -> None:
        """Forget every graph and partition the task ``source`` registered (TF's ``DeleteWorkerSession``)."""
        with self._lock:
            self._graphs.pop(source, None)
            for handle in [h for h in self._partitions if h[0] == source]:
                del self._partitions[handle]

    def _end_step(self, source, reply, step_handle, commit):
        """Commit or drop the step's writes on this task, then reply (the master waits for commits)."""
        with self._lock:
            txn = self._live.pop(step_handle, None)
        if txn is not None:
            if commit:
                txn.commit()
            else:
                txn.abort()
            self._resources.end_step(step_handle, committed=commit)
        self._steps.release(step_handle)
        reply(None)


def _trace_reply(executor, timings, rendezvous):
    """What the master needs of a traced partition: timings, value summaries, transfers."""
    values = [ValueSummary.of(v) for v in executor.values]
    for timing in timings:
        timing.outputs = tuple(ValueSummary.of(v) for v in timing.outputs)
    return {"timings": timings, "values": values, "transfers": rendezvous.transfers()}
