"""dfcore beyond one process: MPI jobs whose ranks are the tasks of a ``ClusterSpec``.

* :mod:`~dfcore.mpi.env` — the ``mpiexec`` command line and environment (root, oversubscription, loopback).
* :mod:`~dfcore.mpi.world` — rank ↔ task, per-job communicators, :class:`MPIClusterResolver`.
* :mod:`~dfcore.mpi.runtime` (with ``transport``; the runtime itself is :mod:`dfcore.transport`'s) —
  ``tf.train.Server`` and ``Session(server.target)`` across processes.
* :mod:`~dfcore.mpi.collectives` — all-reduce over MPI point-to-point, traced.
* :mod:`~dfcore.mpi.job` and :mod:`~dfcore.mpi.report` — run a job from Python or a notebook
  and get every rank's reports back (``run_job(..., transport="grpc")``: plain processes over gRPC,
  :mod:`dfcore.task_processes`).
* :mod:`~dfcore.mpi.ps_driver` — parameter-server training as processes (``execution="mpi"``).

Importing this package (``import dfcore`` does) registers its server backend with
:mod:`dfcore.distribute.cluster` and its parameter-server driver with
:mod:`dfcore.distribute.ps_executions`; ``distribute/`` never imports ``mpi/``.

Start jobs with ``python -m dfcore.launch`` (see :mod:`dfcore.launch`). Importing this
package does not import ``mpi4py``; only creating a communicator does.
"""

import importlib

from ..distribute.cluster import TaskBackend, register_task_backend
from ..distribute.ps_executions import register_execution
from . import departures
from .report import progress, report
from .world import Layout, MPIClusterResolver, in_mpi_job, layout_from_env

# Loaded on first use (PEP 562), so that `import dfcore` in every rank of a job stays cheap.
_LAZY = {"all_reduce": "collectives", "gather_result": "collectives", "gather_trace": "collectives",
         "mpi_allreduce": "collectives", "JobResult": "job", "MPIJobError": "job", "run_job": "job"}

__all__ = ["JobResult", "Layout", "MPIClusterResolver", "MPIJobError", "all_reduce", "gather_result", "gather_trace",
           "in_mpi_job", "layout_from_env", "mpi_allreduce", "progress", "report", "run_job"]

departures.install()  # a rank of a launched job tells its launcher when its program ends


def _start_task(server):
    from . import runtime

    runtime.start_task(server)


def _join(timeout_s):
    from . import runtime

    task = runtime.current()  # set: Server.join calls the backend only once its start() succeeded
    return task is not None and runtime.join(task, timeout_s)


def _train_parameter_server(config):
    from . import ps_driver

    return ps_driver.train(config)


register_task_backend(TaskBackend(in_mpi_job, _start_task, _join, protocols=("grpc", "grpc+mpi")))
register_execution("mpi", _train_parameter_server)


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dfcore.mpi' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
