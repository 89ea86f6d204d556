"""The runtime of a cluster whose tasks are separate processes, written once for every transport.

* :mod:`~dfcore.transport.seam` — the seam: what a transport (MPI's :mod:`dfcore.mpi.transport`,
  gRPC's :mod:`dfcore.transport.grpc_transport`) offers the runtime: one-way messages and requests between
  tasks numbered by rank, dispatched to handlers by kind.
* :mod:`~dfcore.transport.task` — one process's task: its state, devices and worker service.
* :mod:`~dfcore.transport.layout` — the tasks of a ``ClusterSpec`` numbered by rank (for gRPC).
* :mod:`~dfcore.transport.service` — the worker side (TF's ``RegisterGraph``/``RunGraph``/``CleanupGraph``).
* :mod:`~dfcore.transport.master` — the master side: a session's step across the tasks, all or nothing.
* :mod:`~dfcore.transport.rendezvous` — a step's rendezvous spanning processes.
* gRPC: :mod:`~dfcore.transport.grpc_server` (``tf.train.Server`` listening by address),
  :mod:`~dfcore.transport.grpc_transport` (its side of the seam), :mod:`~dfcore.transport.grpc_wire` (TF's
  messages for each kind), :mod:`~dfcore.transport.grpc_master` (the MasterService and remote sessions).
"""

import os
import sys

from ..distribute.cluster import TaskBackend, register_task_backend
from ..runtime import session as session_lib

#: The environment variable choosing where ``tf.train.Server`` runs its task: ``grpc`` (a real gRPC server in
#: this process, as TensorFlow; see :mod:`dfcore.transport.grpc_server`) or unset (dfcore's in-process cluster).
SERVERS_ENV = "DFCORE_SERVERS"


def grpc_enabled() -> bool:
    """True when ``tf.train.Server`` listens with gRPC in this process (``DFCORE_SERVERS=grpc``)."""
    return os.environ.get(SERVERS_ENV, "").strip().lower() == "grpc"


def _grpc_server():
    # imported on first use, so that `import dfcore` does not load grpcio
    from . import grpc_server

    return grpc_server


def _resolve(target, config):
    if not target.startswith("grpc://") or not (grpc_enabled() or f"{__name__}.grpc_server" in sys.modules):
        return None
    return _grpc_server().resolve(target, config)


register_task_backend(TaskBackend(grpc_enabled, lambda server: _grpc_server().start_task(server),
                                  lambda timeout_s: _grpc_server().join(timeout_s),
                                  lambda server: _grpc_server().stop_task(server),
                                  lambda: _grpc_server().local_address()))
session_lib.register_target_resolver(_resolve, first=True)
