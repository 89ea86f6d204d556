"""A Session on a task of a multi-process cluster: the master side of a distributed step.

Source: TF's ``MasterSession`` (``core/distributed_runtime/master_session.cc``): the
session gathers every task's devices (``GetStatus``), places and partitions the graph
as a local session does, registers each partition with the task owning its device once
per run signature (``RegisterGraph``), and each step runs its own task's partitions
locally and asks the other tasks to run theirs (``RunGraph``), all under one step id.
Tensors between tasks move over the transport with the usual rendezvous keys
(:mod:`dfcore.transport.rendezvous`).

The step is all-or-nothing across tasks: the master waits for every partition; the first
error aborts the step everywhere (each task's rendezvous), then every task commits or
drops its staged variable writes together (``end_step``; a commit is acknowledged before ``run``
returns). Every wait has a deadline.

The local partitions run as in one process (inline, or on the session's pool when the plan
pools them), and the calling thread then receives the other tasks' messages itself while it
waits (:meth:`~dfcore.transport.seam.Transport.progress_until`), so a ``_Recv`` completes on it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .. import errors
from ..runtime import step as step_lib
from ..runtime.device_set import DeviceSet
from .service import wire_partition

if TYPE_CHECKING:
    from ..runtime.config import ConfigProto
    from ..runtime.session_resources import SessionResources
    from ..runtime.step_plan import StepPlan
    from ..runtime.variable_store import StepTransaction
    from .task import TaskRuntime

#: Seconds a session waits for another task to answer ``get_status`` / ``register_graph``.
CONNECT_TIMEOUT_S = 60.0


class RemotePartition:
    """What the master holds of a partition run elsewhere: values summarised from its trace reply."""

    def __init__(self, values: Iterable[Any] = ()):
        self.values = list(values)


class TaskBinding:
    """The binding a ``Session(target=server.target)`` gets on a task of a multi-process cluster (see
    ``register_target_resolver``).

    Args:
        runtime: the process's :class:`~dfcore.transport.task.TaskRuntime`.
        task: this process's task name (``/job:worker/replica:0/task:0``).
        config: the session's ``ConfigProto`` or None; its ``device_filters`` name the tasks it uses.
    Raises:
        DeadlineExceededError: a task did not answer ``get_status`` within :data:`CONNECT_TIMEOUT_S`.
    """

    def __init__(self, runtime: TaskRuntime, task: str, config: ConfigProto | None = None):
        self._runtime = runtime
        self._transport = runtime.transport
        self.task = task
        filters = config.device_filters if config is not None else ()
        self.device_set = DeviceSet(runtime.cluster_devices(CONNECT_TIMEOUT_S, filters),
                                    client_device=task + "/device:CPU:0")
        self.variable_store = runtime.state.variable_store
        self.resources = runtime.session_resources()
        self._registered: dict[int, Any] = {}  # id(plan) -> (plan, remote, handles)
        self._sent_graphs: dict[int, Any] = {}
        self._lock = threading.Lock()

    def check_step(self, plan: StepPlan) -> None:
        """Raise ``UnavailableError`` when a task the plan needs has exited."""
        for index, rank in self._placed(plan)[0].items():
            if self._transport.gone(rank):
                raise errors.UnavailableError(
                    None, None, f"Task {self._runtime.task_name(rank)} (rank {rank}) has exited; the step needs its "
                    f"device {plan.partitions[index].device}.")

    # -- one step ------------------------------------------------------------
    def run_step(self, plan: StepPlan, feed_values: Sequence[Any], txn: StepTransaction, resources: SessionResources,
                 step_id: int, pool: Any, timeout_s: float | None = None, trace: bool = False) -> step_lib.StepResult:
        """Run one step of ``plan`` across the job's tasks; as :func:`dfcore.runtime.step.run_step`.

        A ``timeout_s`` the caller set travels with each ``run_graph`` request (the seconds left), so
        every task's partition checks it between ops; at expiry the step is aborted everywhere with
        ``DeadlineExceededError`` and no task commits.
        """
        remote, handles = self._placed(plan)
        # the handle names the step on every task: unique in this process, as sessions number their steps alike
        step_handle = (self._transport.rank, self._runtime.new_step_id())
        rendezvous = self._runtime.steps.find_or_create(step_handle, peers=sorted(set(remote.values())))
        replies: dict[int, Any] = {}
        try:
            # the client partition (feeds, fetches) runs here; a deadline the caller set holds between ops,
            # on every task
            step = step_lib.Step(plan, feed_values, txn, resources, step_id, timeout_s, trace, rendezvous)
            for index, rank in remote.items():
                future = self._transport.request(rank, "run_graph", handles[index], step_handle, step_id, trace,
                                                 None if timeout_s is None else step.deadline.remaining_s())
                future.add_done_callback(functools.partial(_settle, index=index, replies=replies, barrier=step.barrier))
            step.start(pool, elsewhere=remote)
            self._transport.progress_until(step.barrier.finished, step.deadline.remaining_s())
            step.barrier.wait()
            result = step.result()
        except BaseException:
            self._end(remote, step_handle, commit=False)
            raise
        self._end(remote, step_handle, commit=True)
        executors: list[Any] = result.executors  # another task's partition: its fetched values stand in
        for index, reply in replies.items():
            executors[index] = RemotePartition(reply["values"] if reply else ())
            if reply and result.timings is not None:
                result.timings.extend(reply["timings"])
                rendezvous.add_remote_transfers(reply["transfers"])
        return result

    def _end(self, remote, step_handle, commit):
        """Tell every task of the step to commit (or drop) its writes; on commit, wait until each has: once
        ``run`` returns, any task must see the step's writes (a read sent after a barrier could
        otherwise overtake the commit)."""
        acks = {rank: self._transport.request(rank, "end_step", step_handle, commit)
                for rank in sorted(set(remote.values())) if not self._transport.gone(rank)}
        self._runtime.steps.release(step_handle)
        if commit:
            for rank, ack in acks.items():
                self._transport.wait(ack, CONNECT_TIMEOUT_S, f"end_step on {self._runtime.task_name(rank)}")

    # -- partitions on other tasks -------------------------------------------
    def _placed(self, plan):
        """``({partition index: rank}, {partition index: handle})`` of the partitions other processes run,
        worked out and registered with their tasks once per plan."""
        with self._lock:
            entry = self._registered.get(id(plan))
            if entry is not None and entry[0] is plan:
                return entry[1], entry[2]
            me = self._transport.rank
            remote = {i: rank for i, p in enumerate(plan.partitions)
                      if (rank := self._transport.rank_of_device(p.device)) != me}
            graph = plan.ops[0].graph if plan.ops else None
            graph_key = (id(graph), graph.version if graph is not None else 0)
            graph_def = None
            futures = {}
            for index, rank in remote.items():
                new_graph = self._sent_graphs.get(rank) != graph_key
                if new_graph and graph_def is None and graph is not None:  # a partition elsewhere has ops
                    graph_def = graph.as_graph_def()
                self._sent_graphs[rank] = graph_key
                partition = wire_partition(plan.graphs[plan.partitions[index].device])
                futures[index] = self._transport.request(rank, "register_graph", graph_key,
                                                         graph_def if new_graph else None, partition)
            handles = {i: self._transport.wait(f, CONNECT_TIMEOUT_S,
                                               f"register_graph on {self._runtime.task_name(remote[i])}")
                       for i, f in futures.items()}
            self._registered[id(plan)] = (plan, remote, handles)
            return remote, handles


def _settle(future: Any, index: int, replies: dict[int, Any], barrier: Any) -> None:
    error = future.exception()
    if error is None:
        replies[index] = future.result()
    barrier.done(error)
