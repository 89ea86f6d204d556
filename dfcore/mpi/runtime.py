"""The process-wide MPI runtime: this rank's task, its transport, its state, and ``Session`` targets.

Source: TF's ``GrpcServer`` (``core/distributed_runtime/rpc/grpc_server_lib.cc``): starting a
server brings up the task's worker service and makes ``server.target`` usable by sessions.
Inside an MPI job (``DFCORE_CLUSTER`` set by :mod:`dfcore.launch`) ``tf.train.Server`` calls
:func:`start_task` instead of registering an in-process task; ``Session(server.target)``
then gets a :class:`~dfcore.transport.master.TaskBinding` from this module's target resolver.
With ``protocol="grpc+mpi"`` the task also listens with gRPC on its ``ClusterSpec`` address, for
control (:mod:`dfcore.transport.grpc_mpi`); its tensors still travel over this job's MPI.

``Server.join()`` on a task returns once every task of the *other* jobs has exited (a ps
serves until the workers are done, so ``mpiexec`` can end the job); TF's join never returns.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from .. import errors
from ..runtime import session_targets
from ..transport.master import TaskBinding
from ..transport.task import TaskRuntime
from . import transport as transport_lib, world as world_lib

if TYPE_CHECKING:
    from ..distribute.cluster import Server


def join(runtime: TaskRuntime, timeout_s: float | None = None) -> bool:
    """Wait until every task of the other jobs has exited; False on timeout."""
    layout = runtime.layout
    own_job = layout.task_of_rank(runtime.rank)[0]
    others = [r for r in range(layout.size) if layout.task_of_rank(r)[0] != own_job]
    transport: Any = runtime.transport  # an MPI job's: it knows who said goodbye
    return transport.wait_for_goodbyes(others, timeout_s)


_RUNTIME = None
_LOCK = threading.Lock()


def start_task(server: Server) -> None:
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
        if server.server_def.protocol == "grpc+mpi":  # gRPC for control, this job's MPI for tensors
            from ..transport import grpc_server

            _RUNTIME = grpc_server.start_task(server, tensors=transport_lib.get())
        else:
            _RUNTIME = TaskRuntime(transport_lib.get(), server)


def current() -> TaskRuntime | None:
    """The process's :class:`~dfcore.transport.task.TaskRuntime`, or None before a server started."""
    return _RUNTIME


def _resolve(target, config):
    runtime = _RUNTIME
    if runtime is None or not target.startswith("grpc://"):
        return None
    address = target[len("grpc://"):]
    own = runtime.server.address if runtime.server.server_def.protocol == "grpc+mpi" else \
        runtime.layout.address(runtime.rank)
    if address != own and address != runtime.server.address:
        raise errors.InvalidArgumentError(
            None, None, f"In an MPI job a session runs on its own task's target; this is rank {runtime.rank} "
            f"({runtime.task_name()}, target grpc://{own}), not {target}")
    return TaskBinding(runtime, runtime.task_name(), config)


session_targets.register_target_resolver(_resolve, first=True)
