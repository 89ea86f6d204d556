"""One process's task of a multi-process cluster: its transport, step table, state and worker service.

Source: TF's ``GrpcServer``/``WorkerEnv`` (``core/distributed_runtime/rpc/grpc_server_lib.cc``): a
server process holds its task's devices and resources and serves the worker service to the
other tasks; sessions created on it drive steps across the cluster (:mod:`dfcore.transport.master`).
Transport-neutral: MPI (:mod:`dfcore.mpi.runtime`) and gRPC (:mod:`dfcore.transport.grpc_server`) make one
with their transport.
"""

import threading

from ..distribute.cluster_runtime import ClusterResources
from ..runtime.device_set import DeviceSet, passes_device_filters
from .rendezvous import StepTable
from .service import TaskState, WorkerService


class TaskRuntime:
    """This process's task: transport, step table, task state, worker service.

    Args:
        transport: a :class:`~dfcore.transport.seam.Transport` (not yet started).
        server: the ``tf.train.Server`` of this task (its ``config`` gives the task's devices).
    """

    def __init__(self, transport, server):
        self.transport = transport
        self.layout = transport.layout
        self.rank = transport.rank
        self.server = server
        self.state = TaskState()
        self.steps = StepTable(transport)
        job, task = self.layout.task_of_rank(self.rank)
        self.devices = DeviceSet.from_config(server.config, job=job, task=task).devices
        self.service = WorkerService(transport, self.steps, self.state, self.devices)
        self._task_devices = {}  # rank -> that task's devices (its get_status reply)
        self._lock = threading.Lock()
        transport.start()

    def task_name(self, rank=None):
        return self.layout.task_name(self.rank if rank is None else rank)

    def session_resources(self):
        """A session's resources: variables and queues of this task's state (random generators per session)."""
        return ClusterResources(self.state)

    def forget_task(self, rank):
        """Drop what is known of ``rank``'s devices (it restarted: ask again)."""
        with self._lock:
            self._task_devices.pop(rank, None)

    def cluster_devices(self, timeout_s, device_filters=()):
        """The devices of this task and of every task matching ``device_filters``, in rank order.

        Each task is asked once with ``get_status``. Source: ``device_filters`` in TF's
        ``core/protobuf/config.proto`` (a session's master contacts only the matching tasks).

        Args:
            timeout_s: seconds to wait for each task's reply.
            device_filters: partial device names (``"/job:ps"``, ``"/job:worker/task:1"``); empty = all.
        Raises:
            DeadlineExceededError: a task did not answer within ``timeout_s``.
            UnavailableError: a task has exited.
        """
        own = self.task_name()
        ranks = [r for r in range(self.layout.size) if passes_device_filters(self.task_name(r), device_filters, own)]
        with self._lock:
            missing = [r for r in ranks if r != self.rank and r not in self._task_devices]
            futures = {r: self.transport.request(r, "get_status") for r in missing}
            for rank in missing:
                self._task_devices[rank] = self.transport.wait(futures[rank], timeout_s,
                                                               f"get_status of {self.task_name(rank)}")
        devices = []
        for rank in ranks:
            found = self.devices if rank == self.rank else self._task_devices[rank]
            devices.extend(d for d in found if passes_device_filters(d.name, device_filters, own))
        return devices
