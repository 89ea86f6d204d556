"""One process's task of a multi-process cluster: its transport, step table, state and worker service.

Source: TF's ``GrpcServer``/``WorkerEnv`` (``core/distributed_runtime/rpc/grpc_server_lib.cc``): a
server process holds its task's devices and resources and serves the worker service to the
other tasks; sessions created on it drive steps across the cluster (:mod:`dfcore.transport.master`).
Transport-neutral: MPI (:mod:`dfcore.mpi.runtime`) and gRPC (:mod:`dfcore.transport.grpc_server`) make one
with their transport.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import errors
from ..distribute.cluster_runtime import ClusterResources
from ..runtime.device_set import DeviceSet, passes_device_filters
from .rendezvous import StepTable
from .service import TaskState, WorkerService

if TYPE_CHECKING:
    from ..distribute.cluster import Server
    from ..runtime.device_set import Device
    from .seam import Transport

#: Seconds between the "still waiting" lines of a session whose tasks are not all up (TF's master: 10 s).
STILL_WAITING_LOG_S = 10.0
#: Seconds between two ``get_status`` requests to a task that is not up yet.
RETRY_S = 0.2
# TF's C++ master logs the line at INFO, which TF shows by default; dfcore's default verbosity is WARN.
_LOG = logging.getLogger("dfcore.transport")


class TaskRuntime:
    """This process's task: transport, step table, task state, worker service.

    Args:
        transport: a :class:`~dfcore.transport.seam.Transport` (not yet started).
        server: the ``tf.train.Server`` of this task (its ``config`` gives the task's devices).
        start: start the transport now (False: the caller adds its own handlers first, then starts it).
        state: the task's state (variables keyed by ``(task, name)``, resources), shared with this process's
            in-process cluster when the server is also one of its tasks; None: a new :class:`TaskState`.
    """

    def __init__(self, transport: Transport, server: Server, start: bool = True, state: TaskState | None = None):
        self.transport = transport
        self.layout = transport.layout
        self.rank = transport.rank
        self.server = server
        self.state = TaskState() if state is None else state
        self.steps = StepTable(transport)
        job, task = self.layout.task_of_rank(self.rank)
        self.devices = DeviceSet.from_config(server.config, job=job, task=task).devices
        self.service = WorkerService(transport, self.steps, self.state, self.devices)
        self._task_devices: dict[int, Any] = {}  # rank -> that task's devices (its get_status reply)
        self._lock = threading.Lock()
        self._step_ids = itertools.count(1)
        if start:
            transport.start()

    def new_step_id(self) -> int:
        """A step id no other step of this process's sessions has (TF's master draws unique ids too)."""
        return next(self._step_ids)

    def task_name(self, rank: int | None = None) -> str:
        return self.layout.task_name(self.rank if rank is None else rank)

    def session_resources(self) -> ClusterResources:
        """A session's resources: variables and queues of this task's state (random generators per session)."""
        return ClusterResources(self.state)

    def forget_task(self, rank: int) -> None:
        """Drop what is known of ``rank``'s devices (it restarted: ask again)."""
        with self._lock:
            self._task_devices.pop(rank, None)

    def cluster_devices(self, timeout_s: float | None, device_filters: Sequence[str] = ()) -> list[Device]:
        """The devices of this task and of every task matching ``device_filters``, in rank order.

        Each task is asked once with ``get_status``. Source: ``device_filters`` in TF's
        ``core/protobuf/config.proto`` (a session's master contacts only the matching tasks). A task that
        is not up yet but may come (a gRPC server not started: ``transport.gone`` is False) is asked again
        every :data:`RETRY_S` seconds until ``timeout_s``, and every :data:`STILL_WAITING_LOG_S` seconds
        the ``dfcore`` logger says so in TF's words (``CreateSession still waiting for response from
        worker: /job:ps/replica:0/task:0``; TF's master logs it at that period, ``master.cc``).

        Args:
            timeout_s: seconds to wait for the tasks' replies, all together.
            device_filters: partial device names (``"/job:ps"``, ``"/job:worker/task:1"``); empty = all.
        Raises:
            DeadlineExceededError: a task did not answer within ``timeout_s`` (names it).
            UnavailableError: a task has exited and cannot come back (an MPI rank).
        """
        own = self.task_name()
        ranks = [r for r in range(self.layout.size) if passes_device_filters(self.task_name(r), device_filters, own)]
        with self._lock:
            missing = [r for r in ranks if r != self.rank and r not in self._task_devices]
            self._task_devices.update(self._ask_until_up(missing, timeout_s))
        devices: list[Device] = []
        for rank in ranks:
            found = self.devices if rank == self.rank else self._task_devices[rank]
            devices.extend(d for d in found if passes_device_filters(d.name, device_filters, own))
        return devices

    def _ask_until_up(self, ranks, timeout_s):
        """``{rank: devices}`` of ``ranks`` from their ``get_status`` replies, asking again those not up yet."""
        start = time.monotonic()
        deadline, next_log = start + timeout_s, start + STILL_WAITING_LOG_S
        replies, pending = {}, list(ranks)
        while True:
            futures = {r: self.transport.request(r, "get_status") for r in pending}
            for rank, future in futures.items():
                try:
                    replies[rank] = self.transport.wait(future, max(0.0, deadline - time.monotonic()),
                                                        f"get_status of {self.task_name(rank)}")
                except errors.UnavailableError:
                    if self.transport.gone(rank):
                        raise
                except errors.DeadlineExceededError:
                    pass  # reported below, naming every task that did not answer
            pending = [r for r in pending if r not in replies]
            now = time.monotonic()
            if not pending:
                return replies
            if now >= deadline:
                raise errors.DeadlineExceededError(
                    None, None, f"CreateSession: no response from {', '.join(map(self.task_name, pending))} within "
                    f"{timeout_s:g} s; is each of those tasks' processes running its tf.train.Server? (Set "
                    "ConfigProto(device_filters=[...]) so that a session waits only for the tasks it uses.)")
            if now >= next_log:
                for rank in pending:
                    _LOG.warning("CreateSession still waiting for response from worker: %s", self.task_name(rank))
                next_log = now + STILL_WAITING_LOG_S
            time.sleep(min(RETRY_S, deadline - now))
