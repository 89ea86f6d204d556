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
  messages for each kind), :mod:`~dfcore.transport.grpc_master` (the MasterService and remote sessions),
  :mod:`~dfcore.transport.grpc_mpi` (``protocol="grpc+mpi"``: gRPC for control, MPI for tensors).
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
from typing import TYPE_CHECKING

from .. import errors
from ..distribute import cluster_runtime
from ..distribute.cluster import TaskBackend, TaskListener, register_task_backend, register_task_listener
from ..runtime import session_targets

if TYPE_CHECKING:
    from ..distribute.cluster import Server

#: The environment variable for special cases of ``tf.train.Server``. Unset (the default): a server joins this
#: process's in-process cluster and, on a loopback address, also listens there with gRPC (:func:`listens`), as
#: TensorFlow's does; with a ``TF_CONFIG`` naming a cluster (a task started as TensorFlow's are), it is a gRPC
#: server only, on the host its address names. ``in_process``: nothing listens (a notebook or test that must stay
#: off the network). ``grpc``: gRPC only, as with ``TF_CONFIG`` (dfcore's launcher sets it).
SERVERS_ENV = "DFCORE_SERVERS"


def grpc_enabled() -> bool:
    """True when ``tf.train.Server`` listens with gRPC in this process: ``DFCORE_SERVERS=grpc``, or
    ``DFCORE_SERVERS`` unset and a ``TF_CONFIG`` with a ``cluster`` in the environment."""
    choice = os.environ.get(SERVERS_ENV, "").strip().lower()
    if choice:
        return choice == "grpc"
    try:
        tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    except ValueError:
        return False  # TFConfigClusterResolver reports a malformed TF_CONFIG
    return isinstance(tf_config, dict) and bool(tf_config.get("cluster"))


def listens(server: Server) -> bool:
    """True when an in-process ``server`` also listens with gRPC: its address's host is a loopback one (nothing
    listens beyond loopback unless a cluster's processes are started as TF's, with ``TF_CONFIG``) and
    ``DFCORE_SERVERS`` is not ``in_process``."""
    if os.environ.get(SERVERS_ENV, "").strip().lower() == "in_process":
        return False
    host = server.address.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _listen(server):
    if listens(server):
        _grpc_server().start_task(server, state=cluster_runtime.cluster_of(server))


def _stop_listening(server):
    if f"{__name__}.grpc_server" in sys.modules:
        _grpc_server().stop_task(server)


def _grpc_server():
    # imported on first use, so that `import dfcore` does not load grpcio
    from . import grpc_server

    return grpc_server


def _resolve(target, config):
    """A ``grpc://`` target: this process's own gRPC task, a server of the in-process cluster (None: its resolver
    binds it), else the master of a cluster listening at that address (a notebook attaching by address)."""
    if not target.startswith("grpc://"):
        return None
    if cluster_runtime.serves_session(target, config.device_filters if config is not None else ()):
        return None  # every task it uses is in this process: the in-process cluster runs it
    if grpc_enabled() or f"{__name__}.grpc_server" in sys.modules:
        binding = _grpc_server().resolve(target, config)
        if binding is not None:
            return binding
    if cluster_runtime.serves(target):
        return None
    try:
        return _grpc_server().remote_master(target, config)
    except errors.UnavailableError as error:
        raise errors.UnavailableError(
            None, None, f"No in-process server is running at {target}, and no gRPC server answered there "
            f"({error.message}). Start a tf.train.Server for that address in this process or in another one (a "
            f"server listens on its loopback address), or the cluster's tasks with python -m dfcore.launch --grpc."
        ) from None


register_task_backend(TaskBackend(grpc_enabled, lambda server: _grpc_server().start_task(server),
                                  lambda timeout_s: _grpc_server().join(timeout_s),
                                  lambda server: _grpc_server().stop_task(server),
                                  lambda: _grpc_server().local_address()))
register_task_listener(TaskListener(_listen, _stop_listening, lambda: _grpc_server().local_address()))
session_targets.register_target_resolver(_resolve, first=True)
