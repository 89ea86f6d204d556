"""The process-wide MPI runtime: this rank's task, its transport, its state, and ``Session`` targets.

Source: TF's ``GrpcServer`` (``core/distributed_runtime/rpc/grpc_server_lib.cc``): starting a
server brings up the task's worker service and makes ``server.target`` usable by sessions.
Inside an MPI job (``DFCORE_CLUSTER`` set by :mod:`dfcore.launch`) ``tf.train.Server`` calls
:func:`start_task` instead of registering an in-process task; ``Session(server.target)``
then gets an :class:`~dfcore.mpi.master.MPIBinding` from this module's target resolver.

``Server.join()`` on a task returns once every task of the *other* jobs has exited (a ps
serves until the workers are done, so ``mpiexec`` can end the job); TF's join never returns.
"""

import threading

from .. import errors
from ..distribute.cluster_runtime import ClusterResources
from ..runtime import session_targets
from ..runtime.device_set import DeviceSet, passes_device_filters
from . import transport as transport_lib, world as world_lib


class MPIRuntime:
    """This process's task in the job: transport, step table, task state, worker service."""

    def __init__(self, server):
        from .rendezvous import StepTable
        from .service import TaskState, WorkerService

        self.transport = transport_lib.get()
        self.layout = self.transport.layout
        self.rank = self.transport.rank
        self.server = server
        self.state = TaskState()
        self.steps = StepTable(self.transport)
        job, task = self.layout.task_of_rank(self.rank)
        self.devices = DeviceSet.from_config(server.config, job=job, task=task).devices
        self.service = WorkerService(self.transport, self.steps, self.state, self.devices)
        self._task_devices = {}  # rank -> that task's devices (its get_status reply)
        self._lock = threading.Lock()
        self.transport.start()

    def task_name(self, rank=None):
        return self.layout.task_name(self.rank if rank is None else rank)

    def session_resources(self):
        """A session's resources: variables and queues of this task's state (random generators per session)."""
        return ClusterResources(self.state)

    def cluster_devices(self, timeout_s, device_filters=()):
        """The devices of this task and of every task matching ``device_filters``, in rank order.

        Each task is asked once with ``get_status``. Source: ``device_filters`` in TF's
        ``core/protobuf/config.proto`` (a session's master contacts only the matching tasks).

        Args:
            timeout_s: seconds to wait for each task's reply.
            device_filters: partial device names (``"/job:ps"``, ``"/job:worker/task:1"``); empty = all.
        Raises:
            DeadlineExceededError: a task did not answer within ``timeout_s``.
            UnavailableError: a task has already exited.
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

    def join(self, timeout_s=None):
        """Wait until every task of the other jobs has exited; False on timeout."""
        own_job = self.layout.task_of_rank(self.rank)[0]
        others = [r for r in range(self.layout.size) if self.layout.task_of_rank(r)[0] != own_job]
        return self.transport.wait_for_goodbyes(others, timeout_s)


_RUNTIME = None
_LOCK = threading.Lock()


def start_task(server):
    """Bring up this process's task for ``server`` (called by ``Server.start`` inside an MPI job).

    Raises:
        InvalidArgumentError: the server's job/task is not this rank's task, or its cluster's jobs and
            task counts differ from the job's layout (names both).
        FailedPreconditionError: a second server in the same process.
    """
    global _RUNTIME
    world_lib.ensure_world()
    comm, layout = world_lib.world()
    rank = comm.Get_rank()
    spec = server.cluster_spec
    wanted = {j: spec.num_tasks(j) for j in spec.jobs}
    if wanted != layout.jobs:
        raise errors.InvalidArgumentError(
            None, None, f"The ClusterSpec {spec.as_dict()} has jobs {wanted}, but this MPI job was launched with "
            f"{layout.jobs}; use dfcore.mpi.MPIClusterResolver().cluster_spec() or launch with matching --ps/--workers")
    if server.task_name != layout.task_name(rank):
        raise errors.InvalidArgumentError(
            None, None, f"This process is rank {rank}, which runs {layout.task_name(rank)}, but its "
            f"tf.train.Server asks for {server.task_name}; take job_name and task_index from "
            "dfcore.mpi.MPIClusterResolver()")
    with _LOCK:
        if _RUNTIME is not None:
            raise errors.FailedPreconditionError(None, None, "This process already runs a tf.train.Server "
                                                 f"({_RUNTIME.task_name()}); an MPI rank runs one task")
        _RUNTIME = MPIRuntime(server)


def current():
    """The process's :class:`MPIRuntime`, or None before a server started."""
    return _RUNTIME


def _resolve(target, config):
    runtime = _RUNTIME
    if runtime is None or not target.startswith("grpc://"):
        return None
    address = target[len("grpc://"):]
    own = runtime.layout.address(runtime.rank)
    if address != own and address != runtime.server.address:
        raise errors.InvalidArgumentError(
            None, None, f"In an MPI job a session runs on its own task's target; this is rank {runtime.rank} "
            f"({runtime.task_name()}, target grpc://{own}), not {target}")
    from .master import MPIBinding

    return MPIBinding(runtime, runtime.task_name(), config)


session_targets.register_target_resolver(_resolve, first=True)
