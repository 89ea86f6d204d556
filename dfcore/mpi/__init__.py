"""dfcore beyond one process: MPI jobs whose ranks are the tasks of a ``ClusterSpec``.

* :mod:`~dfcore.mpi.env` — the ``mpiexec`` command line and environment (root, oversubscription, loopback).
* :mod:`~dfcore.mpi.world` — rank ↔ task, per-job communicators, :class:`MPIClusterResolver`.

Start jobs with ``python -m dfcore.launch`` (see :mod:`dfcore.launch`). Importing this
package does not import ``mpi4py``; only creating a communicator does.
"""

from .world import Layout, MPIClusterResolver, in_mpi_job, layout_from_env

__all__ = ["Layout", "MPIClusterResolver", "in_mpi_job", "layout_from_env"]
